"""The worked example (/toy) in real Chromium: the numbers drawn against /api/v1/toy and numbers written here."""

from __future__ import annotations

import copy
import re

import pytest
from playwright.sync_api import Page, expect

from .helpers import RECORD_STEPS, STEPS, drawn, max_abs_diff, show_step, stage

# The worked example of the course notes, written out (not fetched): d_model 4, 2 heads, identity weights.
QUERIES = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]]
VALUES = [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]]
IDENTITY = [[1 if i == j else 0 for j in range(4)] for i in range(4)]
# Head 0 works with columns 0-1: scores = Q_0 K_0ᵀ.
SCORES_HEAD_0 = [[1, 0, 1, 2], [0, 1, 1, 0], [1, 1, 2, 2], [2, 0, 2, 4]]
SCORES_HEAD_1 = [[5, 4, 1, 2], [4, 5, 2, 1], [1, 2, 1, 0], [2, 1, 0, 1]]


def full_body(**changes) -> dict:
    """The request the page sends for the worked example as shown in its editors, with changes."""
    body = {
        "queries": copy.deepcopy(QUERIES),
        "keys": copy.deepcopy(QUERIES),
        "values": copy.deepcopy(VALUES),
        "n_heads": 2,
        "causal": False,
        "weights": {name: copy.deepcopy(IDENTITY) for name in "qkvo"},
    }
    body.update(changes)
    return body


def toy(api, body: dict) -> dict:
    response = api.post("/api/v1/toy", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def cell(page: Page, editor: str, row: int, col: int):
    return page.locator(f'#editor-{editor} input[data-row="{row}"][data-col="{col}"]')


def cell_texts(page: Page, key: str) -> list[str]:
    return page.locator(f"#plot-{key} .heatmap-label text").all_text_contents()


def open_toy(page: Page) -> None:
    page.goto("/toy")
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(cell(page, "queries", 3, 3)).to_have_value("0")


def wait_for_scores(page: Page, first_row: list[float]) -> None:
    page.wait_for_function(
        """(want) => { const gd = document.getElementById('plot-scores');
                       return !!gd && !!gd.data && want.every((v, j) => Math.abs(gd.data[0].z[0][j] - v) < 1e-9); }""",
        arg=first_row,
    )


def test_the_worked_example_is_shown_with_its_numbers(page: Page, api):
    assert toy(api, {})["steps"]["scores"] == [SCORES_HEAD_0, SCORES_HEAD_1]  # the API agrees with the notes
    open_toy(page)

    # The editors hold the example.
    for i, row in enumerate(QUERIES):
        for j, value in enumerate(row):
            expect(cell(page, "queries", i, j)).to_have_value(str(value))
            expect(cell(page, "keys", i, j)).to_have_value(str(value))
            expect(cell(page, "values", i, j)).to_have_value(str(VALUES[i][j]))
            expect(cell(page, "wq", i, j)).to_have_value(str(IDENTITY[i][j]))
    expect(page.locator("#toy-heads")).to_have_value("2")
    expect(page.locator("#toy-causal")).not_to_be_checked()
    assert drawn(page, "input-v") == VALUES

    show_step(page, "scores")
    assert drawn(page, "scores") == SCORES_HEAD_0
    # Small matrices have their numbers written in the cells, row by row.
    assert sorted(cell_texts(page, "scores")) == sorted(str(v) for row in SCORES_HEAD_0 for v in row)
    assert cell_texts(page, "scores") == [str(v) for row in SCORES_HEAD_0 for v in row]

    page.select_option("#head-select", "1")
    expect(stage(page)).to_have_attribute("data-head", "1")
    assert drawn(page, "scores") == SCORES_HEAD_1
    assert cell_texts(page, "scores") == [str(v) for row in SCORES_HEAD_1 for v in row]

    show_step(page, "scale")
    expect(page.locator("#scale-factor")).to_have_text("× 0.7071")  # d_head 2
    expect(page.locator("#plot-scale .heatmap-label text").first).to_have_text("3.54")  # 5 × 0.7071


def test_editing_a_cell_recomputes_through_the_api(page: Page, api, browser_log):
    queries = copy.deepcopy(QUERIES)
    queries[0][0] = 3
    expected = toy(api, full_body(queries=queries))["steps"]
    assert expected["scores"][0] != SCORES_HEAD_0
    open_toy(page)
    show_step(page, "scores")
    assert drawn(page, "scores") == SCORES_HEAD_0

    cell(page, "queries", 0, 0).fill("3")

    wait_for_scores(page, expected["scores"][0][0])
    assert drawn(page, "scores") == expected["scores"][0]
    assert cell_texts(page, "scores")[:4] == ["3", "0", "3", "6"]
    expect(stage(page)).to_have_attribute("data-step", "scores")  # the step stays
    assert drawn(page, "qk-q") == [[3, 0]]
    assert [row[0] for row in drawn(page, "qk-sums")] == expected["scores"][0][0]

    show_step(page, "softmax")
    assert max_abs_diff(drawn(page, "softmax"), expected["softmax"][0]) <= 1e-12
    assert drawn(page, "softmax-bars", "y") == pytest.approx(expected["softmax"][0][0], abs=1e-12)
    assert browser_log.api_posts("/api/v1/toy") == 2  # the example, then one debounced edit


@pytest.mark.expect_http_errors(422)
def test_an_invalid_edit_shows_the_servers_message_and_keeps_the_result(page: Page, api):
    queries = copy.deepcopy(QUERIES)
    queries[1][2] = "abc"
    not_a_number = api.post("/api/v1/toy", json=full_body(queries=queries))
    assert not_a_number.status_code == 422
    too_many_heads = api.post("/api/v1/toy", json=full_body(n_heads=3))
    assert too_many_heads.status_code == 422
    open_toy(page)
    show_step(page, "scores")
    error = page.locator("#toy-error")
    expect(error).to_be_hidden()

    cell(page, "queries", 1, 2).fill("abc")

    expect(error).to_have_text(not_a_number.json()["detail"])
    expect(cell(page, "queries", 1, 2)).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#editor-queries")).to_have_class(re.compile("is-invalid"))
    assert drawn(page, "scores") == SCORES_HEAD_0  # the last good result stays
    expect(stage(page)).to_have_attribute("data-step", "scores")

    # An empty cell is refused too.
    cell(page, "queries", 1, 2).fill("")
    expect(error).to_contain_text("queries.1.2")

    cell(page, "queries", 1, 2).fill("1")
    expect(error).to_be_hidden()
    expect(cell(page, "queries", 1, 2)).not_to_have_attribute("aria-invalid", "true")

    page.locator("#toy-heads").fill("3")
    expect(error).to_have_text(too_many_heads.json()["detail"])
    expect(page.locator("#field-heads")).to_have_class(re.compile("is-invalid"))
    assert drawn(page, "scores") == SCORES_HEAD_0

    page.get_by_role("button", name="Reset to the worked example").click()
    expect(error).to_be_hidden()
    expect(page.locator("#toy-heads")).to_have_value("2")
    assert drawn(page, "scores") == SCORES_HEAD_0


def test_rows_can_be_added_and_removed_for_cross_attention(page: Page, api):
    keys = copy.deepcopy(QUERIES) + [[0, 0, 0, 0]]
    values = copy.deepcopy(VALUES) + [[0, 0, 0, 0]]
    expected = toy(api, full_body(queries=copy.deepcopy(QUERIES)[:3], keys=keys, values=values))["steps"]
    open_toy(page)
    show_step(page, "scores")

    page.get_by_role("button", name="Remove the last query row").click()
    page.get_by_role("button", name="Add a key and value row").click()

    page.wait_for_function("() => { const z = document.getElementById('plot-scores').data[0].z; return z.length === 3 && z[0].length === 5; }")
    assert drawn(page, "scores") == expected["scores"][0]
    expect(page.locator("#shape-queries")).to_have_text("3×4")
    expect(page.locator("#shape-keys")).to_have_text("5×4")
    expect(page.locator("#query-select option")).to_have_count(3)

    show_step(page, "weighted_sum")
    assert max_abs_diff(drawn(page, "ws-sum"), [expected["weighted_sum"][0][0]]) <= 1e-12


def test_causal_mask_hides_the_future(page: Page, api):
    expected = toy(api, full_body(causal=True))["steps"]
    assert expected["mask"][0][0][1] is None
    open_toy(page)
    show_step(page, "mask")
    expect(page.locator("#stage-note")).to_have_text(re.compile("^Nothing is hidden"))
    assert "−∞" not in cell_texts(page, "mask")

    page.locator("#toy-causal").check()

    page.wait_for_function("() => document.getElementById('plot-mask').data[0].z[0][1] === null")
    assert max_abs_diff(drawn(page, "mask"), expected["mask"][0]) <= 1e-12
    expect(page.locator("#stage-note")).to_have_text(re.compile("^Causal mask"))
    texts = cell_texts(page, "mask")
    assert texts.count("−∞") == 6  # above the diagonal of 4 × 4
    assert texts[:4] == ["0.71", "−∞", "−∞", "−∞"]

    show_step(page, "softmax")
    assert drawn(page, "softmax-bars", "y") == pytest.approx([1, 0, 0, 0])


def test_play_walks_the_same_steps(page: Page):
    open_toy(page)
    page.evaluate(RECORD_STEPS)
    page.select_option("#step-speed", page.locator("#step-speed option").last.get_attribute("value"))
    page.locator("#step-play").click()
    expect(stage(page)).to_have_attribute("data-step", "output", timeout=20_000)
    expect(page.locator("#step-play")).to_have_attribute("aria-pressed", "false")
    assert page.evaluate("() => window.__seen") == STEPS
