"""Byte-level BPE tokens in the page's own modules (real Chromium): the token chip of a continuation byte,
which needs the DOM. How such tokens are labelled and joined into words is tested without a browser in
tests/js/byte-tokens.test.js (`node --test tests/js/`).

The tokens are written here as the tokenizers library gives them for a GPT-2 vocabulary that lacks "我":
three one-byte tokens with the same offsets, the first showing the character (model/checkpoints/tokenizer.py)."""

from __future__ import annotations

from playwright.sync_api import Page

TEXT = "Hello 我们\n"
TOKENS = [
    {"text": "Hello", "display": "Hello", "start": 0, "end": 5, "special": False, "segment": 0},
    {"text": "Ġæ", "display": " 我", "start": 5, "end": 7, "special": False, "segment": 0},
    {"text": "Ī", "display": "", "start": 6, "end": 7, "special": False, "segment": 0},
    {"text": "ĳ", "display": "", "start": 6, "end": 7, "special": False, "segment": 0},
    {"text": "ä»¬", "display": "们", "start": 7, "end": 8, "special": False, "segment": 0},
    {"text": "Ċ", "display": "\n", "start": 8, "end": 9, "special": False, "segment": 0},
]


def run(page: Page, base_url: str, script: str):
    page.goto(f"{base_url}/static/js/figures/axes.js")  # any page of this origin: the modules import from it
    return page.evaluate(script, {"tokens": TOKENS, "text": TEXT})


def test_a_chip_of_continuation_bytes_says_what_it_holds(page: Page, base_url: str):
    chip = run(page, base_url, """async ({tokens}) => {
        const { fillChip } = await import('/static/js/views/tokens.js');
        const chip = fillChip(document.createElement('span'), tokens[2], 2);
        return { text: chip.textContent, title: chip.title };
    }""")
    assert chip["text"] == "⋯"
    assert "character at 6–7" in chip["title"] and "token before" in chip["title"]


def test_a_chip_of_the_inserted_space_alone_says_so(page: Page, base_url: str):
    """Llama's "▁" before a first character spelt in bytes: a token of the space the tokenizer added."""
    chip = run(page, base_url, """async () => {
        const { fillChip } = await import('/static/js/views/tokens.js');
        const token = { text: '\\u2581', display: '', start: 0, end: 1, special: false, segment: 0 };
        const chip = fillChip(document.createElement('span'), token, 1);
        return { text: chip.textContent, title: chip.title };
    }""")
    assert chip["text"] == "␣"
    assert "a space the tokenizer put before the text" in chip["title"]
