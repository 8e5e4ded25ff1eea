"""The explorer's direct logit attribution panel in real Chromium, on a server of the test GPT-2 (tests/checkpoints.py,
served as "tiny-gpt2" beside MiniLM): the heatmaps drawn equal a fetch of POST /api/v1/logit-attribution, every number
the sentences state (the sum of the parts, the logit, the largest parts) is recomputed here from that answer, a click
on a head's cell opens that head in the explorer, and at 390 px an encoder's panel says why it cannot run."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from ..helpers import wait_until

TEXT = "The cat sat on the mat."
MODEL = "tiny-gpt2"


def sign(value: float) -> str:
    """figures/dla.js formatLogit: three decimals, "+" or "−"."""
    fixed = f"{abs(value):.3f}"
    return ("−" if value < 0 and float(fixed) != 0 else "+") + fixed


def parts(answer: dict) -> list[tuple[str, float]]:
    """Every part, named as the page names it in English, in the page's order (ties keep it)."""
    named = [("embeddings", answer["embeddings"])]
    named += [(f"L{layer} H{head}", value) for layer, row in enumerate(answer["heads"]) for head, value in enumerate(row)]
    named += [(f"MLP {layer}", value) for layer, value in enumerate(answer["mlp"])]
    named += [(f"attention bias {layer}", value) for layer, value in enumerate(answer["attention_bias"] or [])]
    if answer["norm_bias"] is not None:
        named.append(("final norm bias", answer["norm_bias"]))
    return named


def test_the_figure_equals_the_api_its_sentences_are_true_and_a_click_opens_the_head(page: Page, local_api):
    tokens = local_api.post("/api/v1/attention", json={"text": TEXT, "model": MODEL}).json()["tokens"]
    good, bad = tokens[4]["display"], tokens[1]["display"]  # " the", " cat": one token each by construction
    page.goto(f"/?text={quote(TEXT)}&model={MODEL}")
    panel = page.locator("#dla-panel")
    expect(page.locator("#dla-form")).to_be_visible()
    expect(page.locator("#dla-unavailable")).to_be_hidden()
    page.locator("#dla-good").fill(good)
    page.locator("#dla-bad").fill(bad)
    page.locator("#dla-run").click()
    expect(page.locator("#dla-result")).to_be_visible()
    expect(panel).to_have_attribute("aria-busy", "false")
    wait_until(page, "() => (document.getElementById('dla-grid').data || []).length === 2")

    ids = [local_api.post("/api/v1/token", json={"text": t, "model": MODEL}).json()["id"] for t in (good, bad)]
    answer = local_api.post("/api/v1/logit-attribution", json={"text": TEXT, "model": MODEL, "answer": ids}).json()
    drawn = page.evaluate("() => document.getElementById('dla-grid').data.map((trace) => trace.z)")
    assert drawn[0] == answer["heads"]  # GPT-2: one key-value head per query head, no gaps
    strip = [[answer["embeddings"], answer["norm_bias"]]]
    strip += [[m, b] for m, b in zip(answer["mlp"], answer["attention_bias"], strict=True)]
    assert drawn[1] == strip
    assert answer["position"] == len(tokens) - 1

    named = parts(answer)
    total = sum(value for _, value in named)
    assert total == pytest.approx(answer["logit"], abs=1e-4)  # the claim the sentence makes, true of the API
    caption = page.locator("#dla-caption")
    expect(caption.locator('[data-key="dla.explained.two"]')).to_have_text(
        f"Explained: the logit of “{good}” minus the logit of “{bad}” at position {answer['position']} "
        f"(“{tokens[-1]['display']}”).")
    expect(caption.locator('[data-key="dla.sum"]')).to_contain_text(
        f"The {len(named)} parts drawn add up to {sign(total)}; the model’s own logit is {sign(answer['logit'])}. "
        f"They match because the final LayerNorm is frozen at the scale this run gives it ({answer['scale']:.4f})")
    largest = sorted(enumerate(named), key=lambda item: (-abs(item[1][1]), item[0]))[:3]
    expect(caption.locator('[data-key="dla.top"]')).to_have_text(
        "Largest parts: " + ", ".join(f"{name} {sign(value)}" for _, (name, value) in largest) + ".")

    # a real click on the strongest head's cell selects that layer and head in the explorer
    layer, head = max(((row, h) for row in range(len(answer["heads"])) for h in range(len(answer["heads"][0]))),
                      key=lambda cell: abs(answer["heads"][cell[0]][cell[1]]))
    page.locator("#dla-grid").scroll_into_view_if_needed()
    point = page.evaluate("""([l, h]) => {
        const gd = document.getElementById('dla-grid');
        const box = gd.getBoundingClientRect();
        return {x: box.left + gd._fullLayout.xaxis._offset + gd._fullLayout.xaxis.d2p(h),
                y: box.top + gd._fullLayout.yaxis._offset + gd._fullLayout.yaxis.d2p(l)};
    }""", [layer, head])
    page.mouse.click(point["x"], point["y"])
    expect(page).to_have_url(re.compile(rf"layer={layer}&head={head}\b"))
    wait_until(page, """([l, h]) => document.getElementById('dla-grid').layout.shapes.some(
        (s) => s.x0 === h - 0.5 && s.y0 === l - 0.5)""", [layer, head])


def test_an_encoder_says_why_at_390_px_and_a_decoder_fits(page: Page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/?text={quote(TEXT)}&model=minilm")
    expect(page.locator("#dla-unavailable")).to_be_visible()
    expect(page.locator("#dla-unavailable")).to_contain_text("needs a model with an LM head")
    expect(page.locator("#dla-form")).to_be_hidden()
    page.goto(f"/?text={quote(TEXT)}&model={MODEL}")
    page.locator("#dla-good").fill(" the")
    page.locator("#dla-run").click()
    expect(page.locator("#dla-result")).to_be_visible()
    wait_until(page, "() => (document.getElementById('dla-grid').data || []).length === 2")
    expect(page.locator('#dla-caption [data-key="dla.explained.one"]')).to_contain_text("the logit of “ the”")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390, "the page scrolls sideways at 390 px"
