"""The explorer's activation patching panel on a grouped-query model, in real Chromium, on the Llama family's server
(conftest.py llama_family_server: "tiny-llama" has 4 query heads sharing 2 key-value heads). The pattern grid and the head and
position grid are grouped by key-value head as the explorer's main grid is (a label above each group, an empty column
with a line between); the grid drawn equals a fetch of POST /api/v1/patch; the head and position grid shows each
cell at its best position, then every head at the slider's position; captions are recomputed here from the answer."""

from __future__ import annotations

import re
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Page, expect

from ..helpers import wait_until
from ..test_patching import DRAWN, best

LLAMA = "tiny-llama"
LLAMA_TEXT, LLAMA_CORRUPTED = "The cat sat on the mat.", "The the sat on the mat."


@pytest.fixture(scope="module")
def gqa_server(llama_family_server):
    return llama_family_server


@pytest.fixture
def live_server(gqa_server) -> str:
    return gqa_server.base


@pytest.fixture(scope="module")
def context(open_context, gqa_server):
    context = open_context(gqa_server.base)
    yield context
    context.close()


def gqa_grid(page: Page, live: str, target: str) -> dict:
    page.goto(f"/?text={quote(LLAMA_TEXT)}&model={LLAMA}")
    expect(page.locator("#patch-answers")).to_be_visible()
    page.locator("#patch-corrupted").fill(LLAMA_CORRUPTED)
    page.locator("#patch-good").fill("cat")
    page.locator("#patch-bad").fill("the")
    page.locator("#patch-target").select_option(target)
    page.locator("#patch-run").click()
    expect(page.locator("#patch-panel")).to_have_attribute("data-target", target)
    expect(page.locator("#patch-panel")).to_have_attribute("aria-busy", "false")
    with httpx.Client(base_url=live, trust_env=False, timeout=60) as client:
        answer = client.post("/api/v1/patch", json={"clean": LLAMA_TEXT, "corrupted": LLAMA_CORRUPTED, "model": LLAMA,
                                                    "target": target, "answer": ["cat", "the"]}).json()
    assert (answer["n_heads"], answer["n_kv_heads"], answer["normalised"]) == (4, 2, True)
    # grouped by key-value head: heads 0, 1 | gap | heads 2, 3, a line at the gap and a label above each group
    layout = page.evaluate("() => { const gd = document.getElementById('patch-grid'); return gd.layout; }")
    assert [(a["text"], a["x"]) for a in layout["annotations"]] == [("KV 0", 0.5), ("KV 1", 3.5)]
    assert [(s["x0"], s["x1"]) for s in layout["shapes"] if s["type"] == "line"] == [(2, 2)]
    expect(page.locator("#patch-grid .annotation-text").first).to_have_text("KV 0")
    return answer


def with_gap(rows: list[list[float]]) -> list[list[float | None]]:
    return [[row[0], row[1], None, row[2], row[3]] for row in rows]


def test_grouped_pattern_grid(page: Page, live_server: str):
    answer = gqa_grid(page, live_server, "pattern")
    assert page.evaluate(DRAWN) == with_gap(answer["grid"])
    layer, head, value = best(answer["grid"])
    expect(page.locator("#patch-caption")).to_have_text(
        f"Layer {layer}, head {head}’s attention pattern restores most: {value:.2f} of the gap in logit difference "
        "(good − bad).")


def test_grouped_head_position_grid_at_its_best_and_at_a_chosen_position_at_390_px(page: Page, live_server: str):
    page.set_viewport_size({"width": 390, "height": 844})
    answer = gqa_grid(page, live_server, "head_position")
    cells = answer["grid"]  # [layer][head][position]
    best_of = [[max(range(len(c)), key=lambda p, c=c: (c[p], -p)) for c in row] for row in cells]
    at_best = [[c[p] for c, p in zip(row, ps, strict=True)] for row, ps in zip(cells, best_of, strict=True)]
    assert page.evaluate(DRAWN) == with_gap(at_best)
    layer, head, value = best(at_best)
    position = best_of[layer][head]
    expect(page.locator("#patch-caption")).to_have_text(re.compile(
        rf"^Layer {layer}, head {head} at position {position} \(.+\) restores most: {value:.2f} of the gap"))
    # every head at one chosen position: the slider (keyboard) after unticking "best"
    page.locator("#patch-best").uncheck()
    last = len(answer["clean_tokens"]) - 1
    expect(page.locator("#patch-panel")).to_have_attribute("data-position", str(last))
    page.locator("#patch-position").focus()
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#patch-panel")).to_have_attribute("data-position", str(last - 1))
    at = [[c[last - 1] for c in row] for row in cells]
    wait_until(page, f"(z) => JSON.stringify(({DRAWN})()) === JSON.stringify(z)", with_gap(at))
    layer, head, value = best(at)
    token = answer["clean_tokens"][last - 1]["text"].replace("\u2581", " ")
    expect(page.locator("#patch-position-label")).to_contain_text(f"position {last - 1}")
    expect(page.locator("#patch-caption")).to_contain_text(
        f"Layer {layer}, head {head} at position {last - 1} (")
    expect(page.locator("#patch-caption")).to_contain_text(f"restores most: {value:.2f} of the gap")
    assert token  # the position's token is shown as data
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
