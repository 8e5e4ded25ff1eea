"""The attribution panel's continuation mode in real Chromium, on the server of the test GPT-2 (tests/checkpoints.py,
"tiny-gpt2"): the heatmap drawn equals a fetch of POST /api/v1/attribution/continuation (greedy, so the same tokens),
its caption's numbers are recomputed here from that answer, and an encoder offers no such mode."""

from __future__ import annotations

import math
from urllib.parse import quote

import httpx
from playwright.sync_api import Page, expect

from ..helpers import wait_until

TEXT = "The cat sat on the mat."
MODEL = "tiny-gpt2"


def shown(value: float) -> str:
    """figures/attribution.js shown(): 3 significant digits (below 1e-3 in exponent form), − for minus."""
    if abs(value) >= 1e-3 or value == 0:
        decimals = 2 - math.floor(math.log10(abs(value))) if value else 2
        text = f"{value:.{max(decimals, 0)}f}"
    else:
        mantissa, exponent = f"{value:.2e}".split("e")
        text = f"{mantissa}e{'+' if int(exponent) >= 0 else '-'}{abs(int(exponent))}"
    return text.replace("-", "\u2212", 1) if text.startswith("-") else text


def label(display: str) -> str:
    """figures/axes.js tokenLabel for a token of this text: ⋯ for an empty display, signs for whitespace."""
    if display == "":
        return "⋯"
    if display.isspace():
        return "".join({"\n": "↵", "\r": "↵", "\t": "⇥"}.get(char, "␣") for char in display)
    return display


def test_the_heatmap_equals_the_api_and_its_caption_is_true(page: Page, live_server):
    page.goto(f"/?text={quote(TEXT)}&model={MODEL}")
    expect(page.locator("#continuation-form")).to_be_visible()
    page.locator("#attribution-steps").fill("32")
    page.locator("#continuation-new").fill("3")
    page.locator("#continuation-run").click()
    expect(page.locator("#continuation-result")).to_be_visible()
    wait_until(page, "() => (document.getElementById('continuation-grid').data || []).length === 1")
    expect(page.locator("#attribution-panel")).to_have_attribute("aria-busy", "false")
    body = {"text": TEXT, "model": MODEL, "steps": 32, "baseline": "mean", "continuation": {"new_tokens": 3}}
    answer = httpx.post(f"{live_server}/api/v1/attribution/continuation", json=body, timeout=60).json()
    width = len(answer["tokens"]) + len(answer["continuation"]) - 1
    expected = [row["scores"] + [None] * (width - len(row["scores"])) for row in answer["rows"]]
    assert page.evaluate("() => document.getElementById('continuation-grid').data[0].z") == expected
    ok = [row for row in answer["rows"] if row["completeness"]["ok"]]
    assert ok, "the test GPT-2 keeps completeness at 32 steps from the mean baseline"
    caption = page.locator("#continuation-caption")
    expect(caption).to_contain_text(f"{len(answer['rows'])} new tokens (rows)")
    expect(caption).to_contain_text(f"completeness holds in {len(ok)} of {len(answer['rows'])} rows.")
    labels = [label(t["display"]) for t in answer["tokens"]] + [label(t["display"]) for t in answer["continuation"][:-1]]
    for row in ok:
        best = max(range(len(row["scores"])), key=lambda i: (abs(row["scores"][i]), -i))
        expect(caption).to_contain_text(f"For “{label(row['token']['display'])}” the largest attribution is on "
                                        f"“{labels[best]}”: {shown(row['scores'][best])}.")


def test_an_encoder_has_no_continuation_mode(page: Page):
    page.goto(f"/?text={quote(TEXT)}&model=minilm")
    expect(page.locator("#attribution-panel")).to_be_visible()
    expect(page.locator("#continuation-form")).to_be_hidden()
