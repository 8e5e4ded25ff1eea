"""The worked example (/toy) in real Chromium: the numbers drawn against /api/v1/toy and numbers written here."""

from __future__ import annotations

import copy
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from .helpers import (
    RECORD_STEPS,
    STEPS,
    drawn,
    english_left,
    max_abs_diff,
    show_step,
    stage,
    switch_to_chinese,
    wait_until,
)

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


def wait_for_drawn(page: Page, key: str, matrix: list[list[float]]) -> None:
    """Wait until the figure drawn for `key` holds exactly `matrix`."""
    wait_until(page,
        """([key, want]) => { const gd = document.querySelector(`[data-matrix="${key}"]`);
                             return !!gd && !!gd.data && JSON.stringify(gd.data[0].z) === JSON.stringify(want); }""",
        arg=[key, matrix],
    )


def wait_for_scores(page: Page, first_row: list[float]) -> None:
    wait_until(page,
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
def test_an_invalid_cell_is_named_as_labelled_and_the_result_marked_stale(page: Page, api):
    queries = copy.deepcopy(QUERIES)
    queries[1][2] = "abc"
    refused = api.post("/api/v1/toy", json=full_body(queries=queries))
    assert refused.status_code == 422
    assert [(e["loc"], e["type"]) for e in refused.json()["errors"]] == [(["body", "queries", "1", "2"], "float_type")]
    open_toy(page)
    show_step(page, "scores")
    error = page.locator("#toy-error")
    expect(error).to_be_hidden()
    expect(page.locator("#toy-stale")).to_be_hidden()

    cell(page, "queries", 1, 2).fill("abc")

    # Named as the editor labels it (row q1, column 2), never as the raw path queries.1.2.
    expect(error).to_have_text("Queries, row q1, column 2: not a number; type one such as 0.5 or −2")
    expect(cell(page, "queries", 1, 2)).to_have_attribute("aria-invalid", "true")
    expect(cell(page, "queries", 1, 1)).not_to_have_attribute("aria-invalid", "true")
    expect(page.locator("#editor-queries")).to_have_class(re.compile("is-invalid"))
    # The last good result stays, marked as stale.
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^Showing the last valid result"))
    expect(page.locator("#results")).to_have_class(re.compile("is-stale"))
    assert drawn(page, "scores") == SCORES_HEAD_0
    expect(stage(page)).to_have_attribute("data-step", "scores")

    # An empty cell is refused too, and said to be empty.
    cell(page, "queries", 1, 2).fill("")
    expect(error).to_have_text("Queries, row q1, column 2: empty; type a number")
    assert "queries.1.2" not in error.inner_text()

    # A valid edit recomputes and clears every mark.
    queries[1][2] = 5
    expected = toy(api, full_body(queries=queries))["steps"]
    cell(page, "queries", 1, 2).fill("5")
    expect(error).to_be_hidden()
    expect(page.locator("#toy-stale")).to_be_hidden()
    expect(page.locator("#results")).not_to_have_class(re.compile("is-stale"))
    expect(page.locator("#editor-queries")).not_to_have_class(re.compile("is-invalid"))
    expect(cell(page, "queries", 1, 2)).not_to_have_attribute("aria-invalid", "true")
    page.select_option("#head-select", "1")  # column 2 belongs to head 1
    wait_for_drawn(page, "scores", expected["scores"][1])

    # A bad cell of a weight matrix is named by its legend.
    cell(page, "wk", 0, 3).fill("x")
    expect(error).to_have_text("W_k, row 0, column 3: not a number; type one such as 0.5 or −2")
    expect(page.locator("#editor-wk")).to_have_class(re.compile("is-invalid"))
    expect(cell(page, "wk", 0, 3)).to_have_attribute("aria-invalid", "true")

    page.get_by_role("button", name="Reset to the worked example").click()
    expect(error).to_be_hidden()
    expect(page.locator("#results")).not_to_have_class(re.compile("is-stale"))
    expect(cell(page, "queries", 1, 2)).to_have_value("1")
    expect(cell(page, "wk", 0, 3)).to_have_value("0")
    wait_for_drawn(page, "scores", SCORES_HEAD_1)


@pytest.mark.expect_http_errors(422)
def test_shape_errors_mark_the_field_the_server_names(page: Page, api):
    # One value row less than keys, through the URL: the values editor is named and marked.
    refused = api.post("/api/v1/toy", json=full_body(values=copy.deepcopy(VALUES)[:3]))
    assert refused.status_code == 422
    assert [(e["loc"], e["type"], e["ctx"]) for e in refused.json()["errors"]] == [
        (["body", "values"], "toy_value_rows", {"values": 3, "keys": 4}),
    ]
    page.goto("/toy?v=10,11,20,21;12,13,22,23;14,15,24,25")
    expect(stage(page)).to_have_attribute("data-step", "input")
    error = page.locator("#toy-error")
    expect(error).to_have_text("Values: has 3 rows for 4 keys; give every key one value row")
    expect(page.locator("#editor-values")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#editor-keys")).not_to_have_class(re.compile("is-invalid"))
    expect(page.locator("#shape-values")).to_have_text("3×4")
    # Nothing valid was shown yet: the worked example stands in, marked as such.
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^Showing the worked example"))
    assert drawn(page, "input-v") == VALUES

    # n_heads that does not divide d_model: the Heads field.
    refused = api.post("/api/v1/toy", json=full_body(n_heads=3))
    assert [(e["loc"], e["type"], e["ctx"]) for e in refused.json()["errors"]] == [
        (["body", "n_heads"], "toy_heads_divide", {"n_heads": 3, "d_model": 4}),
    ]
    page.goto("/toy")
    expect(cell(page, "values", 3, 3)).to_have_value("27")
    page.locator("#toy-heads").fill("3")
    expect(error).to_have_text("Heads: must divide d_model (4); use 1, 2, or 4")
    expect(page.locator("#field-heads")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#toy-heads")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#editor-values")).not_to_have_class(re.compile("is-invalid"))
    expect(page.locator("#results")).to_have_class(re.compile("is-stale"))
    assert drawn(page, "input-v") == VALUES
    assert "heads=3" in page.url  # a setup that is refused is still a setup the link keeps

    page.locator("#toy-heads").fill("1")
    expect(error).to_be_hidden()
    expect(page.locator("#field-heads")).not_to_have_class(re.compile("is-invalid"))
    expect(page.locator("#head-select option")).to_have_count(1)


# Each rule a link can break, worded from the error's type and ctx: (link, the request it makes
# (changes to full_body), the error's type and ctx, the line shown, the element marked).
RULES_THROUGH_LINKS = [
    ("k=1,2,3;4,5,6;7,8,9;1,2,3", {"keys": [[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 2, 3]]},
     "toy_columns", {"cols": 3, "d_model": 4}, "Keys: has 3 columns; it needs d_model = 4, as many as the queries",
     "#editor-keys"),
    ("wq=1,0;0,1", {"weights": {"q": [[1, 0], [0, 1]], "k": IDENTITY, "v": IDENTITY, "o": IDENTITY}},
     "toy_weight_shape", {"rows": 2, "cols": 2, "d_model": 4},
     "W_q: is 2 × 2; it must be d_model × d_model = 4 × 4", "#editor-wq"),
    ("q=2000000,0,2,1;0,1,1,2;1,1,0,1;2,0,1,0", {"queries": [[2e6, 0, 2, 1], *QUERIES[1:]]},
     "toy_magnitude", {"max": 1e6}, "Queries, row q0, column 0: too large in magnitude (at most 1,000,000); scale it down",
     "#editor-queries"),
    ("heads=0", {"n_heads": 0}, "greater_than_equal", {"ge": 1}, "Heads: must be at least 1", "#field-heads"),
]


@pytest.mark.expect_http_errors(422)
@pytest.mark.parametrize("link, changes, type_, ctx, line, marked", RULES_THROUGH_LINKS,
                         ids=[case[2] for case in RULES_THROUGH_LINKS])
def test_each_rule_is_worded_from_its_type_and_numbers(page: Page, api, link, changes, type_, ctx, line, marked):
    refused = api.post("/api/v1/toy", json=full_body(**changes))
    assert [(e["type"], e.get("ctx")) for e in refused.json()["errors"]] == [(type_, ctx)]
    page.goto(f"/toy?{link}")
    expect(page.locator("#toy-error")).to_have_text(line)
    expect(page.locator(marked)).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^Showing the worked example"))


@pytest.mark.expect_http_errors(422)
def test_an_odd_d_model_asks_for_heads(page: Page):
    page.goto("/toy?q=1,2,3&k=1,2,3&v=1,2,3")
    error = page.locator("#toy-error")
    expect(error).to_have_text("Heads: must divide d_model (3); use 1 or 3")
    page.locator("#toy-heads").fill("")  # no n_heads: the default, 2
    expect(error).to_have_text("Heads: d_model (3) is odd, so the default of 2 heads does not divide it; type 1 or 3")
    expect(page.locator("#field-heads")).to_have_class(re.compile("is-invalid"))
    page.locator("#toy-heads").fill("3")
    expect(error).to_be_hidden()
    expect(page.locator("#head-select option")).to_have_count(3)


@pytest.mark.expect_http_errors(422)
def test_the_words_come_from_the_answer_not_from_the_sizes_sent(page: Page):
    """An answer whose numbers differ from the editors' is worded with its own numbers; a type the
    dictionary does not know is shown in the server's words, as they are."""
    open_toy(page)
    errors = [
        {"loc": ["body", "keys"], "msg": "keys are odd", "type": "toy_columns", "ctx": {"cols": 7, "d_model": 9}},
        {"loc": ["body", "values", "2"], "msg": "values: a rule of a later server", "type": "toy_later_rule"},
    ]
    page.route("**/api/v1/toy", lambda route: route.fulfill(
        status=422, content_type="application/json", body=json.dumps({"detail": "Refused.", "errors": errors})))
    cell(page, "queries", 0, 0).fill("5")
    expect(page.locator("#toy-error li")).to_have_text([
        "Keys: has 7 columns; it needs d_model = 9, as many as the queries",
        "Values, row k2: values: a rule of a later server",
    ])
    expect(page.locator("#editor-keys")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#editor-values")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^Showing the last valid result"))


def test_the_setup_lives_in_the_url_and_a_link_reopens_it(page: Page, api):
    open_toy(page)
    history = page.evaluate("() => history.length")
    cell(page, "queries", 0, 0).fill("3")
    cell(page, "queries", 2, 3).fill("-0.125")
    cell(page, "wv", 1, 2).fill("0.123456789")
    page.locator("#toy-heads").fill("1")
    page.locator("#toy-causal").check()
    page.select_option("#query-select", "2")
    show_step(page, "scores")
    expect(page).to_have_url(re.compile(r"step=scores"))

    # Compact and readable: only what differs from the worked example, rows split by ";" and numbers by ",".
    query = urlsplit(page.url).query
    assert "q=3,0,2,1;0,1,1,2;1,1,0,-0.125;2,0,1,0" in query
    assert "wv=1,0,0,0;0,1,0.123456789,0;0,0,1,0;0,0,0,1" in query
    assert parse_qs(query) == {
        "q": ["3,0,2,1;0,1,1,2;1,1,0,-0.125;2,0,1,0"], "wv": ["1,0,0,0;0,1,0.123456789,0;0,0,1,0;0,0,0,1"],
        "heads": ["1"], "causal": ["1"], "query": ["2"], "step": ["scores"],
    }
    assert page.evaluate("() => history.length") == history  # typing replaces the entry, it adds none

    queries = copy.deepcopy(QUERIES)
    queries[0][0], queries[2][3] = 3, -0.125
    w_v = copy.deepcopy(IDENTITY)
    w_v[1][2] = 0.123456789
    weights = {"q": IDENTITY, "k": IDENTITY, "v": w_v, "o": IDENTITY}
    expected = toy(api, full_body(queries=queries, n_heads=1, causal=True, weights=weights))["steps"]

    page.reload()
    expect(stage(page)).to_have_attribute("data-step", "scores")
    expect(stage(page)).to_have_attribute("data-query", "2")
    expect(cell(page, "queries", 0, 0)).to_have_value("3")
    expect(cell(page, "queries", 2, 3)).to_have_value("-0.125")
    expect(cell(page, "keys", 0, 0)).to_have_value("1")  # keys are the example's: only the queries changed
    expect(cell(page, "wv", 1, 2)).to_have_value("0.123456789")
    expect(page.locator("#toy-heads")).to_have_value("1")
    expect(page.locator("#toy-causal")).to_be_checked()
    expect(page.locator("#query-select")).to_have_value("2")
    expect(page.locator("#head-select option")).to_have_count(1)
    wait_until(page, "() => document.getElementById('plot-scores').data[0].z[0].length === 4")
    assert drawn(page, "scores") == expected["scores"][0]
    show_step(page, "weighted_sum")
    assert max_abs_diff(drawn(page, "ws-sum"), [expected["weighted_sum"][0][2]]) <= 1e-12  # query 2
    show_step(page, "output")
    assert max_abs_diff(drawn(page, "output"), expected["output"]) <= 1e-12
    show_step(page, "input")
    assert drawn(page, "input-q") == queries


def test_reset_and_rows_push_history_and_back_restores_the_setup(page: Page):
    open_toy(page)
    cell(page, "queries", 0, 0).fill("7")
    expect(page).to_have_url(re.compile(r"q=7,"))
    page.get_by_role("button", name="Add a key and value row").click()
    expect(page.locator("#shape-keys")).to_have_text("5×4")
    expect(page).to_have_url(re.compile(r"k=.*;0,0,0,0"))
    page.get_by_role("button", name="Reset to the worked example").click()
    expect(page).to_have_url(re.compile(r"/toy$"))
    expect(cell(page, "queries", 0, 0)).to_have_value("1")

    page.go_back()
    expect(page.locator("#shape-keys")).to_have_text("5×4")
    expect(cell(page, "queries", 0, 0)).to_have_value("7")
    wait_until(page, "() => document.getElementById('plot-input-k').data[0].z.length === 5")
    page.go_back()
    expect(page.locator("#shape-keys")).to_have_text("4×4")
    expect(cell(page, "queries", 0, 0)).to_have_value("7")


def test_an_unreadable_link_falls_back_to_the_example_and_says_so(page: Page):
    page.goto("/toy?q=1,2;x&heads=two&causal=1&wk=1,0;0")
    expect(stage(page)).to_have_attribute("data-step", "input")
    note = page.locator("#toy-url-note")
    expect(note).to_have_text(
        "These parts of the link could not be read: Queries, W_k, and Heads. The worked example’s values are shown there instead."
    )
    expect(cell(page, "queries", 3, 3)).to_have_value("0")
    expect(cell(page, "wk", 0, 0)).to_have_value("1")
    expect(page.locator("#toy-heads")).to_have_value("2")
    expect(page.locator("#toy-causal")).to_be_checked()  # what could be read is kept
    expect(page.locator("#toy-error")).to_be_hidden()
    expect(page).to_have_url(re.compile(r"/toy\?causal=1$"))  # the unreadable parts leave the address
    wait_until(page, "() => document.getElementById('plot-input-q').data[0].z.length === 4")
    assert drawn(page, "input-q") == QUERIES


@pytest.mark.expect_http_errors(422)
def test_chinese_keeps_the_edited_setup_and_names_errors_in_chinese(page: Page):
    open_toy(page)
    cell(page, "queries", 0, 1).fill("4")
    page.get_by_role("button", name="Remove the last query row").click()
    expect(page.locator("#shape-queries")).to_have_text("3×4")
    expect(page).to_have_url(re.compile(r"q=1,4,2,1;0,1,1,2;1,1,0,1(&|$)"))

    switch_to_chinese(page)

    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(cell(page, "queries", 0, 1)).to_have_value("4")
    expect(page.locator("#shape-queries")).to_have_text("3×4")
    expect(page.locator("#query-select option")).to_have_count(3)
    expect(page.get_by_role("button", name="恢复为原始例子")).to_be_visible()
    expect(cell(page, "queries", 0, 1)).to_have_attribute("aria-label", "查询，第 q0 行，第 1 列")
    assert english_left(page) == []

    cell(page, "values", 2, 0).fill("?")
    expect(page.locator("#toy-error")).to_have_text("值，第 k2 行，第 0 列：不是数字，请输入像 0.5 或 −2 这样的数")
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^正在显示上一次有效的结果"))
    page.locator("#toy-heads").fill("x")  # refused by the same validation as the cell: both are listed
    expect(page.locator("#toy-error li")).to_have_text([
        "值，第 k2 行，第 0 列：不是数字，请输入像 0.5 或 −2 这样的数", "头数：不是整数，请输入像 2 这样的数",
    ])
    cell(page, "values", 2, 0).fill("1")  # the schema's rules first; the toy's rules once they pass
    page.locator("#toy-heads").fill("3")
    expect(page.locator("#toy-error li")).to_have_text(["头数：必须能整除 d_model（4），可选 1、2或4"])
    assert english_left(page) == []


def test_rows_can_be_added_and_removed_for_cross_attention(page: Page, api):
    keys = copy.deepcopy(QUERIES) + [[0, 0, 0, 0]]
    values = copy.deepcopy(VALUES) + [[0, 0, 0, 0]]
    expected = toy(api, full_body(queries=copy.deepcopy(QUERIES)[:3], keys=keys, values=values))["steps"]
    open_toy(page)
    show_step(page, "scores")

    page.get_by_role("button", name="Remove the last query row").click()
    page.get_by_role("button", name="Add a key and value row").click()

    wait_until(page, "() => { const z = document.getElementById('plot-scores').data[0].z; return z.length === 3 && z[0].length === 5; }")
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

    wait_until(page, "() => document.getElementById('plot-mask').data[0].z[0][1] === null")
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


# Each query/key plot's drawing area (Plotly's plot size) and the boxes of its column numbers, as drawn.
_QK_PLOTS = """() => ['qk-q', 'qk-k', 'qk-products'].map((key) => {
  const gd = document.querySelector(`[data-matrix="${key}"]`);
  const ticks = [...gd.querySelectorAll('.xtick text')].map((node) => node.getBoundingClientRect())
    .map((box) => [box.left, box.right]);
  return { key, width: gd._fullLayout._size.w, ticks };
})"""


def test_the_query_key_view_is_readable_on_a_phone(page: Page):
    """At 390 px the query · key view stacks q, the keys and their products (side by side they were slivers
    of about 20 px with their column numbers on top of each other): each plot is at least 150 px wide and no
    two of its column numbers overlap."""
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto("/toy?step=scores&d_keys=8&d_values=2")  # 8 columns of q and k: the harder case for the numbers
    expect(stage(page)).to_have_attribute("data-step", "scores")
    expect(page.locator("#qk-panel")).to_have_attribute("data-query", "0")
    for plot in page.evaluate(_QK_PLOTS):
        assert plot["width"] >= 150, plot
        ticks = sorted(plot["ticks"])
        assert len(ticks) >= 2, plot
        assert all(left[1] <= right[0] for left, right in zip(ticks, ticks[1:], strict=False)), plot
