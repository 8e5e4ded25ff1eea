"""The /toy mechanisms in real Chromium: variant, temperature, seed, straight-through, widths,
positions and hidden keys; the hard variants' soft weights; the compare view; the permutation demo.
What is drawn is compared with POST /api/v1/toy fetched here with the body the page sent."""

from __future__ import annotations

import json
import re
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .helpers import drawn, english_left, max_abs_diff, stage, switch_to_chinese, wait_until
from .test_toy import full_body, toy


def is_toy_post(request, **wanted) -> bool:
    if request.method != "POST" or not request.url.split("?")[0].endswith("/api/v1/toy"):
        return False
    body = json.loads(request.post_data or "{}")
    return all(body.get(name, None) == value for name, value in wanted.items())


def wait_for_matrix(page: Page, key: str, matrix: list[list[float]], tolerance: float = 1e-12) -> None:
    """Wait until the figure drawn for `key` holds `matrix` (hidden entries as null)."""
    wait_until(page,
        """([key, want, tol]) => { const gd = document.querySelector(`[data-matrix="${key}"]`);
             if (!gd || !gd.data) return false; const z = gd.data[0].z;
             return z.length === want.length && want.every((row, i) => z[i].length === row.length
               && row.every((v, j) => (v === null ? z[i][j] === null : Math.abs(z[i][j] - v) <= tol))); }""",
        arg=[key, matrix, tolerance],
    )


def open_at(page: Page, query: str = "", step: str = "softmax") -> None:
    page.goto(f"/toy?step={step}" + (f"&{query}" if query else ""))
    expect(stage(page)).to_have_attribute("data-step", step)


# (URL to start from, how to change the control, the field the request must carry, its value,
#  the step and figure to check, the step's key in the answer)
CONTROLS = [
    ("", lambda p: p.select_option("#toy-variant", "additive"), "variant", "additive", "scores", "scores"),
    ("", lambda p: p.select_option("#toy-variant", "dot"), "variant", "dot", "softmax", "softmax"),
    ("", lambda p: p.locator("#toy-temperature").fill("0.25"), "temperature", 0.25, "softmax", "softmax"),
    ("", lambda p: p.locator("#toy-temperature-range").fill("3.5"), "temperature", 3.5, "softmax", "softmax"),
    ("variant=sample", lambda p: p.locator("#toy-seed").fill("7"), "seed", 7, "softmax", "softmax"),
    ("variant=gumbel", lambda p: p.locator("#toy-straight-through").check(), "straight_through", True, "softmax", "softmax"),
    ("", lambda p: p.locator("#toy-d-keys").fill("1"), "d_keys", 1, "scores", "scores"),
    ("", lambda p: p.locator("#toy-d-values").fill("3"), "d_values", 3, "output", "output"),
    ("", lambda p: p.select_option("#toy-positions", "rope"), "positions", "rope", "scores", "scores"),
    ("", lambda p: p.select_option("#toy-positions", "sinusoidal"), "positions", "sinusoidal", "input", None),
    ("", lambda p: p.locator("#toy-hidden input[value='2']").check(), "hidden_keys", [2], "softmax", "softmax"),
]


@pytest.mark.parametrize("start, change, field, value, step, answer_key", CONTROLS,
                         ids=[f"{c[2]}={c[3]}" for c in CONTROLS])
def test_each_control_changes_the_request_and_the_drawing(page: Page, api, start, change, field, value, step, answer_key):
    open_at(page, start, step)
    with page.expect_request(lambda r: is_toy_post(r, **{field: value})) as sent:
        change(page)
    body = json.loads(sent.value.post_data)
    assert body[field] == value
    answer = toy(api, body)
    steps = answer["steps"]
    if answer_key == "output":
        wait_for_matrix(page, "output", steps["output"])
    elif answer_key is None:  # sinusoidal: the input step shows X + P
        wait_for_matrix(page, "input-q", steps["input"]["q"])
        assert steps["input"]["q"] != full_body()["queries"]
    else:
        wait_for_matrix(page, answer_key, steps[answer_key][0])
    if field == "hidden_keys":
        assert [row[2] for row in drawn(page, "softmax")] == [0, 0, 0, 0]
    if field == "d_keys":  # the weights took the shapes of the new widths: d_model × heads·d_keys
        assert len(answer["weights"]["q"][0]) == 2
        expect(page.locator("#editor-wq input[data-row='0']")).to_have_count(2)


def test_straight_through_is_for_gumbel_only(page: Page):
    open_at(page)
    expect(page.locator("#toy-straight-through")).to_be_disabled()
    page.select_option("#toy-variant", "gumbel")
    expect(page.locator("#toy-straight-through")).to_be_enabled()


def test_the_mechanisms_live_in_the_url(page: Page, api):
    link = "variant=gumbel&temperature=0.5&seed=3&straight_through=1&d_keys=1&d_values=3&positions=alibi&hidden=1,3"
    open_at(page, link, "softmax")
    expect(page.locator("#toy-variant")).to_have_value("gumbel")
    expect(page.locator("#toy-temperature")).to_have_value("0.5")
    expect(page.locator("#toy-temperature-range")).to_have_value("0.5")
    expect(page.locator("#toy-seed")).to_have_value("3")
    expect(page.locator("#toy-straight-through")).to_be_checked()
    expect(page.locator("#toy-d-keys")).to_have_value("1")
    expect(page.locator("#toy-d-values")).to_have_value("3")
    expect(page.locator("#toy-positions")).to_have_value("alibi")
    expect(page.locator("#toy-hidden input:checked")).to_have_count(2)
    body = full_body(variant="gumbel", temperature=0.5, seed=3, straight_through=True, d_keys=1, d_values=3,
                     positions="alibi", hidden_keys=[1, 3])
    eye = lambda r, c: [[1 if i == j else 0 for j in range(c)] for i in range(r)]  # noqa: E731
    body["weights"] = {"q": eye(4, 2), "k": eye(4, 2), "v": eye(4, 6), "o": eye(6, 4)}
    expected = toy(api, body)["steps"]
    wait_for_matrix(page, "softmax", expected["softmax"][0])
    # The link stays as it came (the defaults are left out), and the defaults leave it.
    params = parse_qs(urlsplit(page.url).query)
    assert params == {"variant": ["gumbel"], "temperature": ["0.5"], "seed": ["3"], "straight_through": ["1"],
                      "d_keys": ["1"], "d_values": ["3"], "positions": ["alibi"], "hidden": ["1,3"], "step": ["softmax"]}
    page.select_option("#toy-variant", "scaled_dot")
    page.select_option("#toy-positions", "none")
    page.locator("#toy-d-keys").fill("")
    page.locator("#toy-d-values").fill("")
    page.locator("#toy-temperature").fill("1")
    page.locator("#toy-seed").fill("0")
    page.locator("#toy-hidden input[value='1']").uncheck()
    page.locator("#toy-hidden input[value='3']").uncheck()
    expect(page).to_have_url(re.compile(r"/toy\?step=softmax$"))
    wait_for_matrix(page, "softmax", toy(api, full_body())["steps"]["softmax"][0])


@pytest.mark.expect_http_errors(422)
def test_a_refused_control_is_named_beside_it_and_the_result_stays(page: Page, api):
    refused = api.post("/api/v1/toy", json=full_body(temperature=0))
    assert refused.status_code == 422
    open_at(page, "", "softmax")
    good = drawn(page, "softmax")
    page.locator("#toy-temperature").fill("0")
    expect(page.locator("#error-temperature")).to_have_text(re.compile(r"^must be (greater than|at least|a number of at least) 0"))
    expect(page.locator("#field-temperature")).to_have_class(re.compile("is-invalid"))
    expect(page.locator("#toy-stale")).to_have_text(re.compile("^Showing the last valid result"))
    assert drawn(page, "softmax") == good

    # An odd d_keys with RoPE: the control the server names (d_keys) says so, in the dictionary's words.
    page.locator("#toy-temperature").fill("1")
    expect(page.locator("#error-temperature")).to_be_hidden()
    page.locator("#toy-d-keys").fill("3")
    page.select_option("#toy-positions", "rope")
    expect(page.locator(".field-error:not([hidden])")).to_have_text(
        ["RoPE needs an even d_keys, not 3; change d_keys or pick other positions"])
    expect(page.locator("#results")).to_have_class(re.compile("is-stale"))

    # A hidden key the keys do not have (through a link).
    page.goto("/toy?hidden=9")
    expect(page.locator("#error-hidden_keys")).to_have_text("key 9 does not exist; there are 4 keys")


@pytest.mark.expect_http_errors(422)
def test_chinese_names_the_mechanisms(page: Page):
    page.goto("/toy?variant=hard&positions=rope&step=softmax")
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    switch_to_chinese(page)
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    expect(page.locator("#toy-variant")).to_have_value("hard")
    expect(page.locator("#toy-variant option:checked")).to_have_text("硬注意力（取最大值）")
    assert english_left(page) == []
    page.locator("#toy-temperature").fill("0")
    expect(page.locator("#error-temperature")).to_have_text(re.compile("^(必须大于|至少为|必须是不小于)"))
    assert english_left(page) == []


def test_the_numbers_match_for_the_drawn_softmax(page: Page, api):
    """A sanity pin of the tolerance helper against the worked example."""
    open_at(page)
    assert max_abs_diff(drawn(page, "softmax"), toy(api, full_body())["steps"]["softmax"][0]) <= 1e-12
    assert np.isclose(sum(drawn(page, "softmax")[0]), 1)


@pytest.mark.parametrize("variant", ["hard", "sample", "gumbel"])
def test_hard_variants_show_one_hot_rows_beside_the_soft_ones(page: Page, api, variant):
    # gumbel is one-hot with straight-through (its forward); without it its weights are soft, and no `soft` comes
    extra = "&straight_through=1" if variant == "gumbel" else ""
    open_at(page, f"variant={variant}{extra}", "softmax")
    body = full_body(variant=variant, **({"straight_through": True} if variant == "gumbel" else {}))
    answer = toy(api, body)
    wait_for_matrix(page, "softmax", answer["steps"]["softmax"][0])
    wait_for_matrix(page, "softmax-soft", answer["soft"][0])
    used = np.array(drawn(page, "softmax"))
    soft = np.array(drawn(page, "softmax-soft"))
    assert np.allclose(soft.sum(axis=1), 1)
    # one-hot rows; hard: at the soft row's largest weight
    assert ((used == 0) | (used == 1)).all() and (used.sum(axis=1) == 1).all()
    if variant == "hard":
        assert (used.argmax(axis=1) == soft.argmax(axis=1)).all()
    page.select_option("#head-select", "1")
    wait_for_matrix(page, "softmax-soft", answer["soft"][1])


@pytest.mark.parametrize("variant", ["additive", "gumbel"])
def test_soft_variants_draw_no_soft_panel(page: Page, variant):
    open_at(page, f"variant={variant}", "softmax")
    expect(page.locator("[data-matrix='softmax']")).to_be_visible()
    expect(page.locator("[data-matrix='softmax-soft']")).to_have_count(0)
