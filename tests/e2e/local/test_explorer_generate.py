"""The explorer's "Continue this text" panel in real Chromium, on a real server with local checkpoints
(conftest.py local_models_server: "tiny-gpt2", GPT-2-style with an LM head, and "tiny-bert" and MiniLM
without one).

What the page shows is compared with POST /api/v1/generate's own event stream, read here with httpx: the new
tokens (ids, texts, positions), each new row of the grown map against the token event's attention row of the
chosen layer and head, the input's rows against POST /api/v1/attention, and the KV cache's bytes against the
formula worked out in the test. Stop is tested with the answer held back one event at a time (an init script
wraps fetch so that the test says when each event may pass), so that it stops a run that is still going."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Page, expect

from ..helpers import english_left, wait_until

TEXT = "Hello world, attention is"
GPT2 = "tiny-gpt2"
LAYER, HEAD = 1, 2
TOLERANCE = 1e-5  # the input's rows come u16-encoded (error at most 7.7e-6)


def link(**params: object) -> str:
    return f"/?{urlencode({k: str(v) for k, v in params.items()})}"


def events(api, **body) -> list[tuple[str, dict]]:
    """POST /api/v1/generate's server-sent events as [(name, data)], parsed here line by line."""
    found, block = [], {}
    with api.stream("POST", "/api/v1/generate", json=body) as r:
        assert r.status_code == 200, r.read()
        for line in r.iter_lines():
            if line == "":
                if "event" in block:
                    found.append((block["event"], json.loads(block["data"])))
                block = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                block[key] = value
    return found


def open_explorer(page: Page, text: str = TEXT, model: str = GPT2, **params: object) -> None:
    page.goto(link(**{"text": text, "model": model, "layer": LAYER, "head": HEAD, **params}))
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    expect(page.locator("#generate-panel")).to_be_visible()


def run_to_end(page: Page, max_new: int) -> None:
    page.fill("#generate-max", str(max_new))
    page.click("#generate-start")
    expect(page.locator("#generate-panel")).to_have_attribute("data-state", re.compile(r"^(end|length)$"))
    # the map has drawn every new token's row
    wait_until(page, """() => document.getElementById('generate-map').dataset.count
                 === String(document.querySelectorAll('#generate-text .generate-token').length)""")


def shown_tokens(page: Page) -> list[dict]:
    return page.evaluate(
        """() => [...document.querySelectorAll('#generate-text .generate-token')].map((b) => ({
             index: Number(b.dataset.index), id: Number(b.dataset.id), text: b.textContent }))"""
    )


def grown_map(page: Page) -> list[list[float]]:
    return page.evaluate("() => document.getElementById('generate-map').data[0].z")


def test_greedy_continuation_is_the_apis_with_its_rows_and_cache(page: Page, local_api):
    answer = events(local_api, text=TEXT, model=GPT2, max_new_tokens=12)
    prompt, new, done = answer[0][1], [d for name, d in answer if name == "token"], answer[-1][1]
    n = len(prompt["tokens"])
    open_explorer(page)
    expect(page.locator("#generate-start")).to_be_enabled()
    expect(page.locator("#generate-max")).to_have_value("20")  # the default
    expect(page.locator("#generate-room")).to_contain_text(f"At most {64 - n} new tokens")
    expect(page.locator("#generate-mode")).to_contain_text("greedy")
    run_to_end(page, 12)

    tokens = shown_tokens(page)
    assert [t["id"] for t in tokens] == [e["token"]["id"] for e in new]
    assert [t["index"] for t in tokens] == list(range(n, n + len(new)))
    for shown, event in zip(tokens, new, strict=True):
        display = event["token"]["display"]
        if display.isprintable() or display.isspace():
            assert shown["text"] == display  # as the API wrote it, never parsed as markup
    expect(page.locator("#generate-text .generate-input")).to_have_text(TEXT)
    state = "end" if done["stopped"] == "end" else "length"
    expect(page.locator("#generate-panel")).to_have_attribute("data-state", state)
    expect(page.locator("#generate-state")).to_have_text(
        f"Done: {len(new)} new tokens, as many as asked for." if state == "length"
        else f"Done after {len(new)} new tokens: the last one is the model’s end token.")
    expect(page.locator("#generate-speed")).to_contain_text("new tokens per second")

    # the map: the input's rows from /attention, then each new token's row from its event; zeros elsewhere
    z = grown_map(page)
    size = n + len(new)
    assert len(z) == size and all(len(row) == size for row in z)
    attention = local_api.post("/api/v1/attention", json={"text": TEXT, "model": GPT2, "layers": [LAYER],
                                                         "heads": [HEAD]}).json()["attention"][0][0]
    for q in range(n):
        assert max(abs(a - b) for a, b in zip(z[q][:n], attention[q], strict=True)) <= TOLERANCE
        assert z[q][n:] == [0] * len(new)
    for event in new:
        i = event["index"]
        row = event["attention"][LAYER][HEAD]
        assert len(row) == i + 1
        assert z[i][: i + 1] == row  # the event's numbers, drawn as they came
        assert z[i][i + 1 :] == [0] * (size - i - 1)
    expect(page.locator("#generate-map-note")).to_contain_text(f"Layer {LAYER}, head {HEAD}")

    # the KV cache after the last token: 2 · layers · tokens · n_kv_heads · d_head · 4 bytes, and no saving
    # claimed where every head has its own keys and values
    expected = 2 * prompt["n_layers"] * size * prompt["n_kv_heads"] * prompt["d_head"] * 4
    cache = page.locator("#generate-cache")
    expect(cache).to_have_attribute("data-bytes", str(expected))
    assert new[-1]["cache_bytes"] == expected
    expect(page.locator("#generate-cache-formula")).to_have_text(
        f"2 (keys and values) · {prompt['n_layers']} layers · {size} tokens · {prompt['n_kv_heads']} key-value heads · "
        f"{prompt['d_head']} (d_head) · 4 bytes (float32) = {expected:,} bytes")
    assert prompt["n_kv_heads"] == prompt["n_heads"]
    expect(page.locator("#generate-cache-compare")).to_contain_text("nothing is shared")
    expect(page.locator("#generate-cache-compare")).not_to_contain_text("saves")

    # a token's probability and the model's top 5, on focus (the latest token is shown until then)
    page.locator("#generate-text .generate-token").nth(1).focus()
    second = new[1]
    expect(page.locator("#generate-detail .generate-detail-head")).to_contain_text(f"(id {second['token']['id']})")
    items = page.locator("#generate-detail .generate-top li")
    expect(items).to_have_count(5)
    assert [int(i) for i in items.evaluate_all("(li) => li.map((x) => x.dataset.id)")] == [a["id"] for a in second["top"]]

    # the head chosen above: the map follows it, the new rows from the same events
    page.select_option("#head-select", "0")
    wait_until(page, "() => document.getElementById('generate-map').dataset.head === '0'")
    z = grown_map(page)
    for event in new:
        assert z[event["index"]][: event["index"] + 1] == event["attention"][LAYER][0]

    # the whole text opens as an ordinary input
    page.click("#generate-open")
    wait_until(page, "(text) => new URLSearchParams(location.search).get('text') === text", TEXT + done["text"])
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    assert parse_qs(urlsplit(page.url).query)["text"] == [TEXT + done["text"]]
    expect(page.locator("#generate-output")).to_be_hidden()


# Holds back POST /api/v1/generate's answer: one event passes each time window.__allowEvents raises the count.
GATE = """
(() => {
  let allowed = 0;
  let delivered = 0;
  let wake = null;
  window.__allowEvents = (n) => { allowed = n; if (wake) { wake(); wake = null; } };
  const gate = async () => {
    while (delivered >= allowed) await new Promise((resolve) => { wake = resolve; });
    delivered += 1;
  };
  const realFetch = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const response = await realFetch(input, init);
    if (!String(input).includes('/api/v1/generate') || !response.ok) return response;
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const encoder = new TextEncoder();
    let buffer = '';
    const body = new ReadableStream({
      async pull(controller) {
        for (;;) {
          const end = buffer.match(/\\r?\\n\\r?\\n/);
          if (end) {
            await gate();
            const cut = end.index + end[0].length;
            controller.enqueue(encoder.encode(buffer.slice(0, cut)));
            buffer = buffer.slice(cut);
            return;
          }
          const { value, done } = await reader.read();
          if (done) { controller.close(); return; }
          buffer += decoder.decode(value, { stream: true });
        }
      },
      cancel(reason) { window.__cancelled = true; return reader.cancel(reason); },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
})();
"""


def test_stop_ends_a_run_that_is_still_going(page: Page, browser_log):
    page.add_init_script(script=GATE)
    open_explorer(page)
    page.fill("#generate-max", "30")
    page.click("#generate-start")
    expect(page.locator("#generate-stop")).to_be_visible()
    expect(page.locator("#generate-start")).to_be_hidden()
    page.evaluate("() => window.__allowEvents(3)")  # prompt and two tokens
    expect(page.locator("#generate-text .generate-token")).to_have_count(2)
    expect(page.locator("#generate-state")).to_have_text("Writing: 2 of at most 30 new tokens…")
    page.click("#generate-stop")
    expect(page.locator("#generate-panel")).to_have_attribute("data-state", "user")
    expect(page.locator("#generate-state")).to_have_text("Stopped after 2 new tokens: you pressed Stop.")
    assert page.evaluate("() => window.__cancelled") is True  # the answer's reading was cancelled
    page.evaluate("() => window.__allowEvents(1000)")  # nothing held back arrives after Stop
    expect(page.locator("#generate-text .generate-token")).to_have_count(2)
    expect(page.locator("#generate-error")).to_be_hidden()
    expect(page.locator("#generate-speed")).to_be_hidden()  # no done event: no speed is claimed
    expect(page.locator("#generate-start")).to_be_enabled()
    expect(page.locator("#generate-open")).to_be_visible()
    assert browser_log.api_posts("/api/v1/generate") == 1


def test_sampling_settings_and_their_words(page: Page, local_api):
    open_explorer(page)
    expect(page.locator("#generate-top-k")).to_be_disabled()  # greedy: top-k, top-p and seed are not used
    page.fill("#generate-temperature", "1.5")
    expect(page.locator("#generate-top-k")).to_be_enabled()
    page.fill("#generate-top-k", "20")
    page.fill("#generate-top-p", "0.9")
    page.fill("#generate-seed", "11")
    expect(page.locator("#generate-mode")).to_have_text(
        "Sampled: the probabilities at temperature 1.5, then a draw from the 20 most probable tokens, cut to those "
        "whose probabilities first reach 0.9 together, with seed 11. The same settings and seed give the same tokens.")
    run_to_end(page, 8)
    body = {"text": TEXT, "model": GPT2, "max_new_tokens": 8, "temperature": 1.5, "top_k": 20, "top_p": 0.9, "seed": 11}
    expected = [d["token"]["id"] for name, d in events(local_api, **body) if name == "token"]
    assert [t["id"] for t in shown_tokens(page)] == expected
    page.fill("#generate-top-p", "1.5")  # refused here, with the reason, before any request
    page.click("#generate-start")
    expect(page.locator("#generate-error")).to_have_text("Top-p: a number above 0 and at most 1 (1: every token).")
    expect(page.locator("#generate-top-p")).to_have_attribute("aria-invalid", "true")


def test_the_models_full_limit_leaves_no_room(page: Page):
    full = "Hello" + " attention" * 63  # 64 tokens: tiny-gpt2's limit
    open_explorer(page, full)
    expect(page.locator("#generate-start")).to_be_disabled()
    expect(page.locator("#generate-room")).to_have_text(
        "No room for a new token: the input already has 64 tokens and tiny-gpt2 takes at most 64. "
        "Shorten the input to continue it.")
    open_explorer(page, "Hello" + " attention" * 60)  # 61 tokens: at most 3 new ones
    expect(page.locator("#generate-start")).to_be_enabled()
    expect(page.locator("#generate-max")).to_have_value("3")
    expect(page.locator("#generate-max")).to_have_attribute("max", "3")
    run_to_end(page, 3)
    expect(page.locator("#generate-text .generate-token")).to_have_count(3)
    assert len(grown_map(page)) == 64


@pytest.mark.parametrize("model", ["minilm", "tiny-bert"])
def test_a_model_without_an_lm_head_says_why(page: Page, browser_log, model):
    open_explorer(page, "The cat sat on the mat.", model)
    reason = page.locator("#generate-unavailable")
    expect(reason).to_be_visible()
    expect(reason).to_contain_text(f"{model} cannot continue a text: it has no LM head")
    expect(reason).to_contain_text("tiny-gpt2")
    expect(page.locator("#generate-start")).to_be_hidden()
    expect(page.locator("#generate-form")).to_be_hidden()
    assert browser_log.api_posts("/api/v1/generate") == 0


def test_chinese_shows_no_english(page: Page):
    open_explorer(page, lang="zh")
    run_to_end(page, 10)
    page.locator("#generate-text .generate-token").first.hover()
    expect(page.locator("#generate-heading")).to_have_text("续写这段文本")
    skip = "header, footer, main > :not(#results), #results > :not(#generate-panel)"
    assert english_left(page, skip) == []


@pytest.mark.parametrize("width", [390, 800])
def test_narrow_screens_do_not_scroll_sideways(page: Page, width):
    page.set_viewport_size({"width": width, "height": 900})
    open_explorer(page, "Hello" + " attention" * 50)
    run_to_end(page, 12)
    page.locator("#generate-text .generate-token").nth(3).hover()
    sizes = page.evaluate(
        """() => ({scroll: document.documentElement.scrollWidth, width: innerWidth,
                   panel: document.getElementById('generate-panel').getBoundingClientRect().right,
                   map: document.getElementById('generate-map').getBoundingClientRect().width})"""
    )
    assert sizes["scroll"] <= sizes["width"], sizes
    assert sizes["panel"] <= sizes["width"] and sizes["map"] > 0, sizes


def test_token_text_is_text_never_markup(page: Page):
    text = '<b>bold</b> <img src=x onerror="window.__owned=1"> cat'
    open_explorer(page, text)
    run_to_end(page, 6)
    page.locator("#generate-text .generate-token").first.hover()
    found = page.evaluate(
        """() => ({ markup: document.querySelectorAll('#generate-panel b, #generate-panel img').length,
                    owned: Boolean(window.__owned),
                    input: document.querySelector('#generate-text .generate-input').textContent })"""
    )
    assert found == {"markup": 0, "owned": False, "input": text}


def test_the_default_number_follows_the_room_until_one_is_typed(page: Page):
    open_explorer(page, "Hello" + " attention" * 60)  # 61 tokens: room for 3
    expect(page.locator("#generate-max")).to_have_value("3")

    def submit(text: str, tokens: int) -> None:
        page.fill("#text-input", text)
        page.keyboard.press("Enter")
        expect(page.locator("#generate-room")).to_contain_text(f"the input has {tokens}")

    submit(TEXT, 5)
    expect(page.locator("#generate-max")).to_have_value("20")
    page.fill("#generate-max", "40")
    submit("Hello" + " attention" * 50, 51)  # room for 13: a typed number is cut to it
    expect(page.locator("#generate-max")).to_have_value("13")
