"""The /toy backward pass in real Chromium: every figure against POST /api/v1/toy/backward fetched
here with the body the page sent, the reverse order, the head selection, the hard variants' note,
the URL, Chinese, and 800 px."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from .helpers import drawn, english_left, max_abs_diff, stage, switch_to_chinese, wait_until

URL = "/api/v1/toy/backward"
ORDER = ["output", "concat", "weighted_sum", "v", "softmax", "scores", "q", "k", "weights", "biases", "inputs"]
PER_HEAD = ["weighted_sum", "v", "softmax", "scores", "q", "k"]
WHOLE = ["output", "concat", "w_o", "w_v", "w_k", "w_q", "queries", "keys", "values"]
BIASES = ["b_o", "b_v", "b_k", "b_q"]


def is_backward_post(request) -> bool:
    return request.method == "POST" and request.url.split("?")[0].endswith(URL)


def open_backward(page: Page, query: str = "") -> dict:
    """Open /toy (with `query`), press Backward; the body the page posted to /toy/backward."""
    page.goto("/toy" + (f"?{query}" if query else ""))
    expect(stage(page)).to_have_attribute("data-step", "input")
    with page.expect_request(is_backward_post) as sent:
        page.locator("#backward-toggle").click()
    wait_drawn(page)
    return json.loads(sent.value.post_data)


def wait_drawn(page: Page) -> None:
    expect(page.locator("#backward-panel")).to_have_attribute("aria-busy", "false")
    expect(page.locator('[data-matrix="grad-values"] .main-svg').first).to_be_attached()


def gradients(api, body: dict) -> dict:
    response = api.post(URL, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def assert_figures_are(page: Page, answer: dict, head: int) -> None:
    g = answer["gradients"]
    worst = 0.0
    for name in PER_HEAD:
        worst = max(worst, max_abs_diff(drawn(page, f"grad-{name}"), g[name][head]))
    for name in WHOLE:
        worst = max(worst, max_abs_diff(drawn(page, f"grad-{name}"), g[name]))
    for name in BIASES:
        worst = max(worst, max_abs_diff(drawn(page, f"grad-{name}"), [g[name]]))
    assert worst == 0.0  # the page draws the API's numbers as they came
    assert max_abs_diff(drawn(page, "fwd-softmax"), answer["forward"]["steps"]["softmax"][head]) == 0.0


def test_backward_draws_the_apis_gradients_in_reverse_order(page: Page, api):
    body = open_backward(page)
    answer = gradients(api, body)
    assert_figures_are(page, answer, head=0)
    steps = page.locator("[data-back-step]")
    assert steps.evaluate_all("(items) => items.map((item) => item.dataset.backStep)") == ORDER
    assert "backward=1" in page.url
    check = page.locator("#backward-check")
    expect(check).to_contain_text("torch.autograd")
    assert float(check.get_attribute("data-max-abs-diff")) == answer["check"]["max_abs_diff"] <= 1e-12
    expect(page.locator("#backward-upstream")).to_contain_text("all ones")
    expect(page.locator("#backward-note")).to_be_hidden()


def test_the_head_selection_is_shared_with_the_forward(page: Page, api):
    body = open_backward(page)
    answer = gradients(api, body)
    page.locator("#head-select").select_option("1")
    wait_until(page,
        "(want) => { const gd = document.querySelector('[data-matrix=\"grad-scores\"]');"
        " return gd && gd.data && JSON.stringify(gd.data[0].z) === JSON.stringify(want); }",
        arg=answer["gradients"]["scores"][1],
    )
    wait_drawn(page)
    assert_figures_are(page, answer, head=1)
    assert "head=1" in page.url


def test_the_url_reopens_the_backward_pass(page: Page, api):
    """Reopened from its URL with the additive variant: the additive scorer's own parameters are drawn as W[h],
    U[h], v[h] with their gradients (never W_q, W_k, the projections' names), and the notation is one name per
    thing: dA the weights' gradient, dQ, dK, dV the projections' outputs' gradients, no dP anywhere."""
    with page.expect_request(is_backward_post) as sent:
        page.goto("/toy?backward=1&variant=additive&head=1")
    wait_drawn(page)
    expect(page.locator("#backward-toggle")).to_have_attribute("aria-expanded", "true")
    body = json.loads(sent.value.post_data)
    assert body["variant"] == "additive"
    answer = gradients(api, body)
    assert_figures_are(page, answer, head=1)
    for name, forward, symbol in (("additive_w_q", "W[1]", "dW[1]"), ("additive_w_k", "U[1]", "dU[1]")):
        assert drawn(page, f"fwd-{name}") == answer["forward"]["additive"][name[-3:]][1]
        assert drawn(page, f"grad-{name}") == answer["gradients"][name][1]
        captions = page.locator(f'[data-pair="{name}"] figcaption').all_inner_texts()
        assert captions == [f"forward {forward}", f"gradient {symbol}"]
    formulas = dict(zip(ORDER, page.locator(".backward-formula").all_inner_texts(), strict=True))
    assert formulas["softmax"].startswith("dA_h = ") and "dW_q = X_qᵀ · dQ" in formulas["weights"]
    assert "W_q" not in formulas["q"] and "W_k" not in formulas["k"]  # the scorer's W and U
    assert "dP" not in page.locator("#backward-panel").inner_text()


def test_hard_variant_says_the_scores_get_no_gradient(page: Page, api):
    open_backward(page)
    with page.expect_request(lambda r: is_backward_post(r) and json.loads(r.post_data).get("variant") == "hard") as sent:
        page.select_option("#toy-variant", "hard")
    note = page.locator("#backward-note")
    expect(note).to_be_visible()
    expect(note).to_have_attribute("data-flow", "none")
    expect(note).to_contain_text("no gradient")
    wait_drawn(page)
    answer = gradients(api, json.loads(sent.value.post_data))
    wait_until(page,
        "() => { const gd = document.querySelector('[data-matrix=\"grad-scores\"]');"
        " return gd && gd.data && gd.data[0].z.every((row) => row.every((v) => v === 0)); }"
    )
    assert answer["flow"] == "none"
    assert_figures_are(page, answer, head=0)
    expect(page.locator('[data-back-step="scores"] .backward-formula')).to_contain_text("dS_h = 0")


def test_straight_through_is_said(page: Page):
    open_backward(page, "variant=gumbel&straight_through=1")
    expect(page.locator("#backward-note")).to_have_attribute("data-flow", "straight_through")
    expect(page.locator("#backward-note")).to_contain_text("Straight-through")


def test_chinese_has_no_english_left(page: Page):
    open_backward(page, "variant=hard&positions=rope")
    switch_to_chinese(page)
    wait_drawn(page)
    expect(page.locator("#backward-note")).to_be_visible()
    expect(page.locator("#backward-toggle")).to_have_text("隐藏反向传播")
    assert english_left(page) == []


def test_works_at_800_px(page: Page, api):
    page.set_viewport_size({"width": 800, "height": 1000})
    body = open_backward(page)
    assert_figures_are(page, gradients(api, body), head=0)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
    for name in ("fwd-scores", "grad-scores"):
        box = page.locator(f'[data-matrix="{name}"]').bounding_box()
        assert box and box["width"] > 200 and box["x"] + box["width"] <= 800
    forward, gradient = (page.locator(f'[data-matrix="{n}"]').bounding_box() for n in ("fwd-scores", "grad-scores"))
    assert gradient["x"] > forward["x"]  # side by side, the gradient beside its forward value


def test_the_upstream_gradient_can_be_one_querys_row(page: Page, api):
    open_backward(page)
    page.locator("#query-select").select_option("2")
    with page.expect_request(lambda r: is_backward_post(r) and "upstream" in json.loads(r.post_data)) as sent:
        page.select_option("#backward-upstream-mode", "row")
    body = json.loads(sent.value.post_data)
    row = [[1 if i == 2 else 0 for _ in range(4)] for i in range(4)]  # ones on q2's output row
    assert body["upstream"] == row
    wait_until(page,
        "(want) => { const gd = document.querySelector('[data-matrix=\"grad-output\"]');"
        " return gd && gd.data && JSON.stringify(gd.data[0].z) === JSON.stringify(want); }", arg=row,
    )
    wait_drawn(page)
    answer = gradients(api, body)
    assert answer["upstream_default"] is False
    assert_figures_are(page, answer, head=0)
    v = answer["gradients"]["v"][0]  # dV = Aᵀ·dctx: only q2's weights reach the values now
    weights = answer["forward"]["steps"]["softmax"][0][2]
    assert max(abs(v[j][c] - weights[j]) for j in range(4) for c in range(2)) <= 1e-12
    expect(page.locator("#backward-upstream")).to_contain_text("q2")
    assert "upstream=row" in page.url
    page.reload()
    wait_drawn(page)
    expect(page.locator("#backward-upstream-mode")).to_have_value("row")
