"""The explorer's activation patching panel in real Chromium with MiniLM: the grid drawn equals a fetch of POST
/api/v1/patch, the caption's cell and value are recomputed here from that answer, a click on a head's cell opens that
head in the explorer, a refused input (different token counts) is shown, and the panel works at 390 px in 中文; a
gap too small to divide by shows the raw metric and says why. (The grids grouped by key-value head:
test_patching_gqa.py.)"""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from .helpers import switch_to_chinese, wait_until

TEXT = "The cat sat on the mat because it was warm."
SUGGESTED = "The warm sat on the mat because it was warm."  # figures/patch.js suggestCorrupted: the 2nd word as the last
DRAWN = "() => document.getElementById('patch-grid').data[0].z"


def run_panel(page: Page, target: str = "heads", corrupted: str | None = None) -> None:
    page.goto(f"/?text={quote(TEXT)}")
    expect(page.locator("#patch-panel")).to_be_visible()
    expect(page.locator("#patch-corrupted")).to_have_value(SUGGESTED)
    if corrupted is not None:
        page.locator("#patch-corrupted").fill(corrupted)
    page.locator("#patch-target").select_option(target)
    page.locator("#patch-run").click()


def best(grid: list[list[float]]) -> tuple[int, int, float]:
    """The cell that restores most (the first of equal ones, row by row)."""
    layer, index = max(((row, i) for row in range(len(grid)) for i in range(len(grid[0]))),
                       key=lambda cell: (grid[cell[0]][cell[1]], -cell[0], -cell[1]))
    return layer, index, grid[layer][index]


def drawn_answer(page: Page, api, target: str) -> dict:
    expect(page.locator("#patch-result")).to_be_visible()
    wait_until(page, f"() => ({DRAWN})().length > 0")
    expect(page.locator("#patch-panel")).to_have_attribute("aria-busy", "false")
    answer = api.post("/api/v1/patch", json={"clean": TEXT, "corrupted": SUGGESTED, "target": target}).json()
    assert page.evaluate(DRAWN) == answer["grid"]
    return answer


def test_heads_grid_equals_the_api_its_caption_is_true_and_a_click_opens_the_head(page: Page, api):
    run_panel(page)
    answer = drawn_answer(page, api, "heads")
    assert (len(answer["grid"]), len(answer["grid"][0])) == (6, 12) and answer["metric"]["clean"] == pytest.approx(1)
    layer, head, value = best(answer["grid"])
    expect(page.locator("#patch-caption")).to_have_text(
        f"Layer {layer}, head {head} restores most: {value:.2f} of the gap in cosine similarity to the sentence’s "
        "embedding.")
    expect(page.locator("#patch-metric")).to_contain_text(f"corrupted {answer['metric']['corrupted']:.4f}")
    # a real click on that cell: the explorer selects the layer and head (URL and the head select) and outlines it
    page.locator("#patch-grid").scroll_into_view_if_needed()
    point = page.evaluate("""([l, h]) => {
        const gd = document.getElementById('patch-grid');
        const size = gd._fullLayout._size;
        const box = gd.getBoundingClientRect();
        return {x: box.left + size.l + gd._fullLayout.xaxis.d2p(h), y: box.top + size.t + gd._fullLayout.yaxis.d2p(l)};
    }""", [layer, head])
    page.mouse.click(point["x"], point["y"])
    expect(page).to_have_url(re.compile(rf"layer={layer}&head={head}\b"))
    expect(page.locator("#head-select")).to_have_value(str(head))
    wait_until(page, """([l, h]) => document.getElementById('patch-grid').layout.shapes.some(
        (s) => s.x0 === h - 0.5 && s.y0 === l - 0.5)""", [layer, head])


def test_residual_grid_at_390_px_in_chinese(page: Page, api):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/?text={quote(TEXT)}")
    switch_to_chinese(page)
    expect(page.locator("#patch-heading")).to_have_text("激活修补：哪些头承载了差异？")
    page.locator("#patch-target").select_option("residual")
    page.locator("#patch-run").click()
    answer = drawn_answer(page, api, "residual")
    assert answer["columns"] == "position" and len(answer["grid"][0]) == len(answer["clean_tokens"])
    layer, position, value = best(answer["grid"])
    expect(page.locator("#patch-caption")).to_contain_text(
        f"进入第 {layer} 层、位置 {position}（")
    expect(page.locator("#patch-caption")).to_contain_text(f"差距的 {value:.2f}。")
    # nothing is wider than the page
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    box = page.locator("#patch-grid").bounding_box()
    assert box is not None and box["x"] + box["width"] <= 390


@pytest.mark.expect_http_errors(422)
def test_different_token_counts_are_refused_with_both_counts(page: Page):
    run_panel(page, corrupted="A dog.")
    status = page.locator("#patch-status")
    expect(status).to_have_text(re.compile(r"The sentence has 13 tokens and the corrupted text 5"))
    expect(status).to_have_class(re.compile(r"\bis-error\b"))
    expect(page.locator("#patch-result")).to_be_hidden()


def raw_best(answer: dict) -> tuple[int, int, float]:
    """The cell that moves the raw metric furthest toward the clean one (the first of equal ones, row by row)."""
    sign = 1 if answer["metric"]["clean"] >= answer["metric"]["corrupted"] else -1
    cells = answer["patched"]
    layer, index = max(((row, i) for row in range(len(cells)) for i in range(len(cells[0]))),
                       key=lambda c: ((cells[c[0]][c[1]] - answer["metric"]["corrupted"]) * sign, -c[0], -c[1]))
    return layer, index, cells[layer][index]


def test_a_tiny_gap_draws_the_raw_metric_and_says_why(page: Page, api):
    corrupted = "The cat sat on a mat because it was warm."
    run_panel(page, "mlp", corrupted)
    expect(page.locator("#patch-panel")).to_have_attribute("data-normalised", "false")
    expect(page.locator("#patch-legend")).to_be_hidden()
    wait_until(page, f"() => ({DRAWN})().length > 0")
    answer = api.post("/api/v1/patch", json={"clean": TEXT, "corrupted": corrupted, "target": "mlp"}).json()
    assert answer["normalised"] is False and answer["grid"] is None
    assert page.evaluate(DRAWN) == answer["patched"]
    expect(page.locator("#patch-raw")).to_contain_text(
        f"differ by only {abs(answer['gap']):.4f} in cosine similarity to the sentence’s embedding, less than "
        f"{answer['min_gap']:.4f}")
    layer, position, value = raw_best(answer)
    expect(page.locator("#patch-caption")).to_have_text(re.compile(
        rf"^The MLP of layer {layer} at position {position} \(.+\) moves the metric furthest toward the "
        rf"sentence’s: cosine similarity to the sentence’s embedding {value:.4f}\.$"))
