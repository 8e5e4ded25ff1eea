"""The explorer on a causal model in real Chromium, on a server of the test GPT-2 (tests/checkpoints.py, served as
"tiny-gpt2" beside MiniLM): the large map's colour scale tops out at the largest weight from a quarter of the rows
down (recomputed here from POST /api/v1/attention) and its legend says why, MiniLM's keeps its maximum; the logit
lens shows a byte token's control character as its picture, never the raw character."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from ..helpers import wait_until

TEXT = "The cat sat on the mat. The cat sat on the mat. The cat sat on the mat."
MODEL = "tiny-gpt2"
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
C0 = re.compile(r"[\x00-\x1f\x7f]")  # the controls that have a picture (␀ … ␟, ␡)


def drawn_top(page: Page) -> float:
    wait_until(page, "() => document.getElementById('heatmap').data[0].zmax > 0")
    return page.evaluate("() => document.getElementById('heatmap').data[0].zmax")


def test_a_causal_maps_scale_leaves_out_its_first_rows_and_says_so(page: Page, local_api):
    answer = local_api.post("/api/v1/attention", json={"model": MODEL, "text": TEXT})
    assert answer.status_code == 200, answer.text
    weights = answer.json()["attention"][0][0]  # layer 0, head 0: (query, key)
    n = len(weights)
    assert all(weights[q][k] == 0 for q in range(n) for k in range(q + 1, n))  # causal
    first = n // 4
    expected = max(max(row) for row in weights[first:])
    assert expected < 0.9 * max(max(row) for row in weights)  # the control: row 0's 1.0 would set the top

    page.goto(f"/?model={MODEL}&text={quote(TEXT)}&layer=0&head=0")
    assert drawn_top(page) == pytest.approx(expected, abs=1e-5)  # the page reads u16 maps (error ≤ 7.7e-6)
    expect(page.locator("#overview")).to_have_attribute("data-causal", "true")
    expect(page.locator("#scale-legend")).to_contain_text("a quarter of the way down")
    expect(page.locator("#scale-legend")).to_contain_text("causal model")

    page.goto(f"/?model=minilm&text={quote(TEXT)}&layer=0&head=0")  # an encoder: its own maximum
    minilm = local_api.post("/api/v1/attention", json={"model": "minilm", "text": TEXT}).json()["attention"][0][0]
    assert drawn_top(page) == pytest.approx(max(max(row) for row in minilm), abs=1e-5)  # the page reads u16 maps (error ≤ 7.7e-6)
    expect(page.locator("#overview")).to_have_attribute("data-causal", "false")
    expect(page.locator("#scale-legend")).not_to_contain_text("causal")


def test_the_lens_shows_a_byte_tokens_control_character_as_its_picture(page: Page, local_api):
    n = len(local_api.post("/api/v1/attention", json={"model": MODEL, "text": TEXT}).json()["tokens"])
    found = None
    for position in range(n):
        answer = local_api.post("/api/v1/lens", json={"model": MODEL, "text": TEXT, "position": position}).json()
        controls = [p["display"] for layer in answer["layers"] for p in layer["predictions"] if C0.search(p["display"])]
        if controls:
            found = (position, controls)
            break
    assert found, "no prediction of the test GPT-2 is a control byte: choose another text"
    position, controls = found
    page.goto(f"/?model={MODEL}&text={quote(TEXT)}&lens={position}")
    cells = page.locator("#lens-panel td.lens-cell .lens-token")
    expect(cells.first).to_be_visible()
    shown = cells.all_inner_texts()
    titles = cells.evaluate_all("(cells) => cells.map((cell) => cell.title)")
    assert not [text for text in shown + titles if CONTROL.search(text)], (shown, titles)
    picture = "".join(chr(0x2421) if c == "\x7f" else chr(0x2400 + ord(c)) for c in C0.findall(controls[0]))
    assert any(picture in text for text in shown), (picture, shown)
