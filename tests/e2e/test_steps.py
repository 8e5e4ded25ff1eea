"""The walkthrough page (/steps) in real Chromium, compared with /api/v1/trace fetched by the test."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import Page, expect

from bench.common import TextMaker

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

SENTENCE = "The cat sat on the mat."
# MiniLM's walk: the attention's steps, then the rest of its post-norm block (figures/block.js walkSteps)
BLOCK = ["add_1", "norm_1", "mlp_hidden", "mlp_act", "mlp_out", "add_2", "norm_2"]
WALK = STEPS + BLOCK
XSS = "<img src=x onerror=alert(1)> <a href=http://example.com/x>link</a>"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def trace(api, text: str, layer: int, head: int, pair: str | None = None) -> dict:
    """What the page should draw of the attention, fetched by the test itself (without the rest of the block, which
    test_steps_block.py checks)."""
    response = api.post("/api/v1/trace", json={"text": text, "text_pair": pair, "layer": layer, "head": head})
    assert response.status_code == 200, response.text
    return response.json()


def steps_url(text: str, **params) -> str:
    query = "&".join([f"text={quote(text)}"] + [f"{key}={value}" for key, value in params.items()])
    return f"/steps?{query}"


def query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def ui_text(page: Page, key: str, **values) -> str:
    """The string `key` of the page's dictionary (its language), filled as the page fills it."""
    return page.evaluate(
        "([key, values]) => import('/static/js/i18n/index.js').then((i18n) => i18n.t(key, values))", [key, values]
    )


def drawn_window(page: Page, key: str) -> tuple[list[list[float | None]], list[int], list[int]]:
    """The numbers a figure draws and which rows and columns of its matrix they are (its y and x)."""
    z, y, x = (drawn(page, key, field) for field in ("z", "y", "x"))
    return z, [int(i) for i in y], [int(j) for j in x]


def test_play_at_the_fastest_speed_visits_every_step_in_order(page: Page):
    page.goto(steps_url(SENTENCE, layer=1, head=2, query=3))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#step-list button.step-item")).to_have_count(17)
    assert page.locator("#step-list button.step-item").evaluate_all("(bs) => bs.map((b) => b.dataset.step)") == WALK
    expect(page.locator("#step-list button.step-item .step-name")).to_have_text(
        ["Input", "Project", "Split", "Scores", "Scale", "Mask", "Softmax", "Weighted sum", "Concat", "Output",
         "+ Residual", "Norm 1", "MLP up", "Activation", "MLP down", "+ Residual 2", "Norm 2"]
    )
    page.evaluate(RECORD_STEPS)
    fastest = page.locator("#step-speed option").last.get_attribute("value")
    assert int(fastest) == min(int(v) for v in page.locator("#step-speed option").evaluate_all("(os) => os.map((o) => o.value)"))
    page.select_option("#step-speed", fastest)

    play = page.locator("#step-play")
    play.click()
    expect(play).to_have_attribute("aria-pressed", "true")
    expect(play).to_have_text(re.compile("Pause"))
    expect(stage(page)).to_have_attribute("data-step", "norm_2", timeout=30_000)
    expect(play).to_have_attribute("aria-pressed", "false")  # it stops at the last step

    assert page.evaluate("() => window.__seen") == WALK
    assert query(page)["step"] == ["norm_2"]  # the step is in the URL (replaced, not pushed)
    expect(page.locator("#step-position")).to_have_text("17 / 17")
    expect(page.locator("#step-next")).to_be_disabled()

    # Play again from the end starts over at the first step.
    page.evaluate(RECORD_STEPS)
    play.click()
    expect(stage(page)).to_have_attribute("data-step", "norm_2", timeout=30_000)
    expect(play).to_have_attribute("aria-pressed", "false")
    assert page.evaluate("() => window.__seen") == ["norm_2"] + WALK


def test_next_previous_slider_and_step_list(page: Page):
    page.goto(steps_url(SENTENCE, layer=0, head=0, query=1))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#step-prev")).to_be_disabled()

    page.locator("#step-next").click()
    expect(stage(page)).to_have_attribute("data-step", "project")
    page.locator("#step-next").click()
    expect(stage(page)).to_have_attribute("data-step", "split")
    page.locator("#step-prev").click()
    expect(stage(page)).to_have_attribute("data-step", "project")
    expect(page.locator("#step-slider")).to_have_value("1")
    expect(page.locator("#step-position")).to_have_text("2 / 17")

    # Scrubbing: the slider is a range input over the steps.
    page.locator("#step-slider").evaluate("(el) => { el.value = '6'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    page.locator("#step-slider").press("ArrowRight")
    expect(stage(page)).to_have_attribute("data-step", "weighted_sum")
    page.locator("#step-slider").press("End")
    expect(stage(page)).to_have_attribute("data-step", "norm_2")  # the layer's output, after the whole block
    page.locator("#step-slider").press("Home")
    expect(stage(page)).to_have_attribute("data-step", "input")

    show_step(page, "concat")
    expect(page.locator("#step-list button[aria-current]")).to_have_count(1)
    expect(page.locator("#step-list button.is-done")).to_have_count(8)
    expect(page.locator("#stage-title")).to_have_text("Concatenate heads")
    expect(page.locator("#stage-body")).to_contain_text("The 12 heads' outputs")
    expect(page.locator("#step-slider")).to_have_value("8")


def test_every_step_shows_the_traces_numbers(page: Page, api):
    layer, head, q = 2, 5, 3
    expected = trace(api, SENTENCE, layer, head)
    steps = expected["steps"]
    tokens = [token["text"] for token in expected["tokens"]]
    n = len(tokens)
    d_head = expected["d_head"]
    page.goto(steps_url(SENTENCE, layer=layer, head=head, query=q))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#tokens .chip")).to_have_text(tokens)
    expect(page.locator("#tokens .chip[aria-pressed=true]")).to_have_text(tokens[q])
    expect(page.locator("#query-select")).to_have_value(str(q))

    assert max_abs_diff(drawn(page, "input"), steps["input"]) <= 1e-6

    show_step(page, "project")
    for m in "qkv":
        assert max_abs_diff(drawn(page, f"project-{m}"), steps["project"][m]) <= 1e-6
    # The head's 32 columns are outlined: a rectangle from column 160 - 0.5 to 191 + 0.5.
    shapes = page.evaluate("() => document.getElementById('plot-project-q').layout.shapes.filter((s) => s.type === 'rect')")
    assert [(s["x0"], s["x1"]) for s in shapes] == [(head * d_head - 0.5, (head + 1) * d_head - 0.5)]

    show_step(page, "split")
    for m in "qkv":
        assert max_abs_diff(drawn(page, f"split-{m}"), steps["split"][m][0]) <= 1e-6
        assert drawn(page, f"split-{m}", "x") == list(range(head * d_head, (head + 1) * d_head))  # columns 160…191

    show_step(page, "scores")
    assert max_abs_diff(drawn(page, "scores"), steps["scores"][0]) <= 1e-5
    labels = page.locator("#plot-scores .heatmap-label text")
    expect(labels).to_have_count(n * n)  # 9 × 9: the numbers are written in the cells
    written = [float(t.replace("−", "-")) for t in labels.all_text_contents()]
    flat = [v for row in steps["scores"][0] for v in row]
    assert sorted(written) == pytest.approx(sorted(flat), abs=0.051)
    expect(page.locator("#qk-panel")).to_have_class(re.compile("is-linked"))  # the query/key view is this step's

    show_step(page, "scale")
    expect(page.locator("#qk-panel")).not_to_have_class(re.compile("is-linked"))
    factor = page.locator("#scale-factor").text_content()
    assert float(factor.replace("×", "").strip()) == round(1 / math.sqrt(32), 4) == 0.1768
    expect(page.locator("#stage-title")).to_have_text("Scale by 1/√d_head = 0.1768")
    assert max_abs_diff(drawn(page, "scale"), steps["scale"][0]) <= 1e-5
    assert max_abs_diff(drawn(page, "scale-before"), steps["scores"][0]) <= 1e-5

    show_step(page, "mask")
    assert max_abs_diff(drawn(page, "mask"), steps["mask"][0]) <= 1e-5
    expect(page.locator("#stage-note")).to_be_visible()
    expect(page.locator("#stage-note")).to_have_text(re.compile("^Nothing is hidden"))

    show_step(page, "softmax")
    assert max_abs_diff(drawn(page, "softmax"), steps["softmax"][0]) <= 1e-6
    bars = drawn(page, "softmax-bars", "y")
    assert bars == pytest.approx(steps["softmax"][0][q], abs=1e-7)
    assert sum(bars) == pytest.approx(1, abs=1e-5)
    ticks = page.evaluate("() => document.getElementById('plot-softmax-bars').layout.xaxis.ticktext")
    assert ticks == tokens

    show_step(page, "weighted_sum")
    assert drawn(page, "ws-weights") == [[w] for w in steps["softmax"][0][q]]
    assert max_abs_diff(drawn(page, "ws-v"), steps["split"]["v"][0]) <= 1e-6
    weighted = drawn(page, "ws-rows")
    total = drawn(page, "ws-sum")
    assert max_abs_diff(total, [steps["weighted_sum"][0][q]]) <= 1e-6
    column_sums = [sum(row[d] for row in weighted) for d in range(d_head)]
    assert max_abs_diff([column_sums], total) <= 1e-4  # the sum of the weighted rows is the output

    show_step(page, "concat")
    assert max_abs_diff(drawn(page, "concat"), steps["concat"]) <= 1e-6
    assert max_abs_diff(drawn(page, "concat-strip"), [steps["concat"][q]]) <= 1e-6
    # This head's slot of the concatenation is its weighted sum.
    assert max_abs_diff([steps["concat"][q][head * d_head:(head + 1) * d_head]], [steps["weighted_sum"][0][q]]) <= 1e-5

    show_step(page, "output")
    assert max_abs_diff(drawn(page, "output"), steps["output"]) <= 1e-6


def test_query_key_view_sums_to_the_scores_row(page: Page, api):
    layer, head, q = 3, 7, 2
    expected = trace(api, SENTENCE, layer, head)
    steps = expected["steps"]
    page.goto(steps_url(SENTENCE, layer=layer, head=head, query=q))
    expect(page.locator("#qk-panel")).to_have_attribute("data-query", str(q))

    assert drawn(page, "qk-q") == [steps["split"]["q"][0][q]]
    assert max_abs_diff(drawn(page, "qk-k"), steps["split"]["k"][0]) <= 1e-7
    products = drawn(page, "qk-products")
    sums = [row[0] for row in drawn(page, "qk-sums")]
    assert sums == pytest.approx(steps["scores"][0][q], abs=1e-4)
    assert [sum(row) for row in products] == pytest.approx(sums, abs=1e-9)
    expect(page.locator("#qk-check")).to_contain_text(f"row {q} of the scores step")

    # The button jumps the animation to the scores step, where row q is outlined.
    page.get_by_role("button", name="See it in the scores step").click()
    expect(stage(page)).to_have_attribute("data-step", "scores")
    expect(page.locator("#qk-panel")).to_have_class(re.compile("is-linked"))
    rects = page.evaluate("() => document.getElementById('plot-scores').layout.shapes.filter((s) => s.type === 'rect')")
    assert [(r["y0"], r["y1"]) for r in rects] == [(q - 0.5, q + 0.5)]
    assert [row[0] for row in drawn(page, "qk-sums")] == pytest.approx(drawn(page, "scores")[q], abs=1e-4)


def test_query_head_and_layer_choices_push_history(page: Page, api, browser_log):
    first = trace(api, SENTENCE, 2, 5)
    other_head = trace(api, SENTENCE, 2, 7)
    other_layer = trace(api, SENTENCE, 4, 7)
    page.goto(steps_url(SENTENCE, layer=2, head=5, query=3, step="softmax"))
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    assert drawn(page, "softmax-bars", "y") == pytest.approx(first["steps"]["softmax"][0][3], abs=1e-7)

    # A token chip makes it the query: no new request, the same step, a history entry.
    page.locator("#tokens .chip").nth(1).click()
    expect(stage(page)).to_have_attribute("data-query", "1")
    expect(page.locator("#tokens .chip[aria-pressed=true]")).to_have_text("the")
    assert drawn(page, "softmax-bars", "y") == pytest.approx(first["steps"]["softmax"][0][1], abs=1e-7)
    assert query(page)["query"] == ["1"] and query(page)["step"] == ["softmax"]
    assert browser_log.api_posts("/api/v1/trace") == 1

    page.select_option("#head-select", "7")
    expect(stage(page)).to_have_attribute("data-head", "7")
    assert max_abs_diff(drawn(page, "softmax"), other_head["steps"]["softmax"][0]) <= 1e-6
    assert query(page)["head"] == ["7"]

    page.select_option("#layer-select", "4")
    wait_until(page,
        "(want) => Math.abs(document.getElementById('plot-softmax').data[0].z[0][0] - want) < 1e-9",
        arg=other_layer["steps"]["softmax"][0][0][0],
    )
    assert max_abs_diff(drawn(page, "softmax"), other_layer["steps"]["softmax"][0]) <= 1e-6
    assert query(page)["layer"] == ["4"]

    page.go_back()  # layer 2, head 7
    expect(page.locator("#layer-select")).to_have_value("2")
    wait_until(page,
        "(want) => Math.abs(document.getElementById('plot-softmax').data[0].z[0][0] - want) < 1e-9",
        arg=other_head["steps"]["softmax"][0][0][0],
    )
    page.go_back()  # head 5, query 1
    expect(page.locator("#head-select")).to_have_value("5")
    expect(stage(page)).to_have_attribute("data-head", "5")
    page.go_back()  # query 3
    expect(page.locator("#query-select")).to_have_value("3")
    expect(stage(page)).to_have_attribute("data-query", "3")
    assert drawn(page, "softmax-bars", "y") == pytest.approx(first["steps"]["softmax"][0][3], abs=1e-7)
    assert browser_log.api_posts("/api/v1/trace") == 3  # layer 2 head 5 and head 7 came from the cache


def test_invalid_indices_fall_back_to_zero(page: Page, api):
    expected = trace(api, SENTENCE, 0, 0)
    page.goto(steps_url(SENTENCE, layer=99, head=-1, query=999, step="nonsense"))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page).to_have_url(re.compile(r"layer=0&head=0&query=0&step=input$"))
    assert max_abs_diff(drawn(page, "input"), expected["steps"]["input"]) <= 1e-6


def test_markup_in_the_sentence_is_shown_as_text(page: Page, api):
    expected = trace(api, XSS, 0, 0)
    tokens = [token["text"] for token in expected["tokens"]]
    assert "<" in tokens
    page.goto(steps_url(XSS, layer=0, head=0, query=1, step="scores"))
    expect(stage(page)).to_have_attribute("data-step", "scores")
    expect(page.locator("#tokens .chip")).to_have_text(tokens)
    expect(page.locator("#text-input")).to_have_value(XSS)
    assert page.locator("#main img").count() == 0
    assert page.locator('a[href^="http"], img[src="x"], [onerror]').count() == 0
    # The one link that carries the sentence holds it URL-encoded, to this server.
    assert page.locator("#explorer-link").get_attribute("href").startswith("/?text=%3Cimg+src%3Dx")
    assert page.locator("#main svg a").count() == 0
    ticks = page.locator("#plot-scores .xtick text").all_text_contents()
    assert "<" in ticks and "=" in ticks
    options = page.locator("#query-select option").all_text_contents()
    assert options[1] == "1 · <"

    # Hover text is escaped too: query "<" (index 1) -> key "a".
    key = tokens.index("a")
    cell = page.evaluate(
        """([q, k]) => { const gd = document.getElementById('plot-scores'), layout = gd._fullLayout;
                        const box = gd.getBoundingClientRect();
                        return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(k),
                                y: box.top + layout.yaxis._offset + layout.yaxis.l2p(q)}; }""",
        [1, key],
    )
    page.mouse.move(cell["x"], cell["y"])
    hover = page.locator("#plot-scores .hoverlayer .hovertext")
    expect(hover).to_contain_text(f"query 1 “<” · key {key} “a”: ")
    assert page.locator("#plot-scores .hoverlayer a").count() == 0
    z, rows, cols = drawn_window(page, "scores")  # this sentence is long enough to be drawn through a window
    assert max_abs_diff(z, [[expected["steps"]["scores"][0][r][c] for c in cols] for r in rows]) <= 1e-5


def test_explorer_links_to_the_selected_head(page: Page, api):
    page.goto(f"/?text={quote(SENTENCE)}&layer=2&head=5")
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 2 · Head 5")
    page.get_by_role("button", name="layer 4 head 7", exact=True).click()
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 4 · Head 7")

    page.get_by_role("link", name="Step through this head").click()

    expect(stage(page)).to_have_attribute("data-step", "input")
    assert urlsplit(page.url).path == "/steps"
    assert query(page)["text"] == [SENTENCE]
    assert query(page)["layer"] == ["4"] and query(page)["head"] == ["7"]
    expect(page.locator("#layer-select")).to_have_value("4")
    expect(page.locator("#head-select")).to_have_value("7")
    expected = trace(api, SENTENCE, 4, 7)
    assert max_abs_diff(drawn(page, "input"), expected["steps"]["input"]) <= 1e-6
    assert not any(token["unknown"] for token in expected["tokens"])
    expect(page.locator("#unknown-note")).to_be_hidden()  # MiniLM knows every token: nothing to say

    # And back from /steps to the explorer, at the same layer and head.
    page.get_by_role("link", name="All heads in the explorer").click()
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 4 · Head 7")


def test_pages_carry_the_csp_and_the_nav(page: Page):
    for path, current in [("/steps", "Steps"), ("/positions", "Positions"), ("/iris", "Labs"), ("/seq2seq", "Labs"),
                          ("/induction", "Labs"), ("/flash", "Cost"),
                          ("/toy", "Toy example")]:
        response = page.goto(path)
        assert response.status == 200
        assert response.headers["content-security-policy"] == CSP
        expect(page.locator(".site-nav a")).to_have_text(["Explorer", "Steps", "Compare", "Toy example", "Positions", "Labs", "Cost",
                                                            "Learn", "API docs"])
        expect(page.locator('.site-nav a[aria-current="page"]')).to_have_text(current)
    expect(page.locator("#stage")).to_have_attribute("data-step", "input")  # /toy has drawn its example
    # /flash from the header: "Cost" opens /cost, whose tabs lead to /flash (both tabs marked where they are)
    page.locator(".site-nav a", has_text="Cost").click()
    expect(page).to_have_url(re.compile(r"/cost$"))
    tabs = page.locator(".labs-nav a")
    expect(tabs).to_have_text(["What attention costs", "FlashAttention, tile by tile", "RNN vs conv vs attention"])
    expect(page.locator('.labs-nav a[aria-current="page"]')).to_have_attribute("href", "/cost")
    tabs.nth(1).click()
    expect(page).to_have_url(re.compile(r"/flash$"))
    expect(page.locator("#flash-walk")).to_have_attribute("data-step", "f0")
    expect(page.locator('.labs-nav a[aria-current="page"]')).to_have_attribute("href", "/flash")
    expect(page.locator('.site-nav a[aria-current="page"]')).to_have_text("Cost")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_tokens_the_model_cannot_read_are_counted_beside_them(page: Page, api, language: str):
    text = "注意力机制让模型学会聚焦重要的信息。"
    tokens = trace(api, text, 0, 0)["tokens"]
    unknown = [token for token in tokens if token["unknown"]]
    characters = sum(len([c for c in token["display"] if not c.isspace()]) for token in unknown)
    assert unknown  # MiniLM reads most of these characters as [UNK]
    page.goto(steps_url(text, layer=0, head=0, query=2, lang=language))
    expect(stage(page)).to_have_attribute("data-step", "input")
    note = page.locator("#unknown-note")
    expect(note).to_be_visible()
    said = note.inner_text()
    numbers = [int(n) for n in re.findall(r"\d+", re.split(r"[.。]", said)[0])]  # the sentence that counts
    assert len(unknown) in numbers and len(tokens) in numbers and characters in numbers, (said, len(unknown), characters)
    assert "[UNK]" in said and bool(re.search(r"[\u4e00-\u9fff]", said.replace(text, ""))) == (language == "zh")
    # beside the tokens it counts: in the form's panel, right under the token chips
    assert page.evaluate("() => document.getElementById('tokens').closest('section').contains(document.getElementById('unknown-note'))")


def test_without_a_sentence_the_page_offers_examples(page: Page):
    page.goto("/steps")
    expect(page.locator("#intro")).to_be_visible()
    expect(page.locator("#results")).to_be_hidden()
    page.get_by_role("link", name="The cat sat on the mat.").click()
    expect(stage(page)).to_have_attribute("data-step", "input")
    assert query(page)["query"] == ["2"]


@pytest.mark.expect_http_errors(422)
def test_a_blank_sentence_is_said_in_the_pages_words(page: Page, api):
    error = api.post("/api/v1/trace", json={"text": "  ", "layer": 0, "head": 0}).json()["errors"][0]
    assert (error["loc"], error["type"]) == (["body", "text"], "value_error")  # what the page words it from
    page.goto("/steps?text=%20%20&layer=0&head=0")
    expect(page.locator("#status")).to_have_text(ui_text(page, "error.blank"))
    expect(page.locator("#status")).to_have_class(re.compile("is-error"))
    expect(page.locator("#loading")).to_be_hidden()
    expect(page.locator("#results")).to_be_hidden()


# ---- long inputs: drawn through windows ---------------------------------------------------------

LONG_QUERY = 300
VIEWPORT_HEIGHT = 1000  # conftest.py VIEWPORT


@pytest.fixture(scope="module")
def long_text() -> str:
    """Random words, exactly 512 tokens: the packaged model's limit."""
    return TextMaker(seed=11).text(512)


def expected_window(steps: dict, key: str, rows: list[int], cols: list[int], query: int, c0: int):
    """What the figure `key` must draw at rows × cols (its y and x), from the trace; None: not checked."""
    pick = {
        "input": lambda r, c: steps["input"][r][c],
        "split-q": lambda r, c: steps["split"]["q"][0][r][c - c0],
        "split-k": lambda r, c: steps["split"]["k"][0][r][c - c0],
        "split-v": lambda r, c: steps["split"]["v"][0][r][c - c0],
        "scores-q": lambda r, c: steps["split"]["q"][0][r][c - c0],
        "scores-kt": lambda r, c: steps["split"]["k"][0][c][r - c0],  # rows are dimensions, columns keys
        "scores": lambda r, c: steps["scores"][0][r][c],
        "scale-before": lambda r, c: steps["scores"][0][r][c],
        "scale": lambda r, c: steps["scale"][0][r][c],
        "mask-before": lambda r, c: steps["scale"][0][r][c],
        "mask": lambda r, c: steps["mask"][0][r][c],
        "softmax": lambda r, c: steps["softmax"][0][r][c],
        "ws-weights": lambda r, c: steps["softmax"][0][query][r],
        "ws-v": lambda r, c: steps["split"]["v"][0][r][c - c0],
        "ws-rows": lambda r, c: steps["softmax"][0][query][r] * steps["split"]["v"][0][r][c - c0],
        "ws-sum": lambda r, c: steps["weighted_sum"][0][query][c - c0],
        "concat": lambda r, c: steps["concat"][r][c],
        "concat-strip": lambda r, c: steps["concat"][r][c],
        "output-concat": lambda r, c: steps["concat"][r][c],
        "output": lambda r, c: steps["output"][r][c],
        "qk-q": lambda r, c: steps["split"]["q"][0][r][c - c0],
        "qk-k": lambda r, c: steps["split"]["k"][0][r][c - c0],
        "qk-sums": lambda r, c: steps["scores"][0][query][r],
    }
    for m in "qkv":
        pick[f"project-{m}"] = pick[f"split-{m}-full"] = lambda r, c, m=m: steps["project"][m][r][c]
    if key not in pick:
        return None
    return [[pick[key](r, c) for c in cols] for r in rows]


# Pairs of consecutive tick labels (in axis order) whose boxes overlap, for every figure under `root`.
OVERLAPPING_LABELS = """(root) => {
  const found = [];
  for (const gd of document.querySelectorAll(`${root} .plot`)) {
    for (const axis of ['xtick', 'ytick']) {
      const boxes = [...gd.querySelectorAll(`.${axis} text`)].map((text) => [text.textContent, text.getBoundingClientRect()])
        .filter(([, box]) => box.width > 0 && box.height > 0)
        .sort(([, a], [, b]) => (axis === 'xtick' ? a.left - b.left : a.top - b.top));
      for (let i = 1; i < boxes.length; i++) {
        const [[ta, a], [tb, b]] = [boxes[i - 1], boxes[i]];
        const across = Math.min(a.right, b.right) - Math.max(a.left, b.left);
        const along = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
        if (across > 0.5 && along > 0.5) found.push(`${gd.id} ${axis}: "${ta}" and "${tb}" overlap`);
      }
    }
  }
  return found;
}"""

PLOT_HEIGHTS = """(root) => Object.fromEntries([...document.querySelectorAll(`${root} .plot`)]
  .map((gd) => [gd.id, gd.getBoundingClientRect().height]))"""


def test_512_tokens_every_step_fits_the_screen_with_readable_labels_and_the_traces_numbers(page: Page, api, long_text):
    layer, head, q = 2, 5, LONG_QUERY
    expected = trace(api, long_text, layer, head)
    assert len(expected["tokens"]) == 512
    steps, c0 = expected["steps"], head * expected["d_head"]
    page.goto(steps_url(long_text, layer=layer, head=head, query=q))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#stage-window")).to_be_visible()  # the navigator: the whole matrix, the window outlined
    expect(page.locator("#stage-window")).to_have_attribute("data-rows", f"{q - 16}-{q + 15}")
    expect(page.locator("#stage-window")).to_have_attribute("data-keys", f"{q - 16}-{q + 15}")
    expect(page.locator("#tokens .chip[aria-pressed=true]")).to_be_in_viewport()  # the picker scrolled to it

    draw_ms = {}
    for step in STEPS:
        show_step(page, step)
        draw_ms[step] = int(stage(page).get_attribute("data-draw-ms"))
        for root in ("#stage-grid", "#qk-grid"):
            heights = page.evaluate(PLOT_HEIGHTS, root)
            assert heights and all(0 < h <= 900 for h in heights.values()), (step, heights)
            assert page.evaluate(OVERLAPPING_LABELS, root) == [], step
        grid = page.locator("#stage-grid").bounding_box()
        assert grid["height"] <= VIEWPORT_HEIGHT, (step, grid)  # the whole step fits the screen
        for key in page.locator("#stage-grid .plot, #qk-grid .plot").evaluate_all("(ps) => ps.map((p) => p.dataset.matrix)"):
            z, rows, cols = drawn_window(page, key)
            want = expected_window(steps, key, rows, cols, q, c0)
            if key == "softmax-bars":  # one query's weights: y over the keys x
                assert drawn(page, key, "y") == pytest.approx([steps["softmax"][0][q][c] for c in cols], abs=1e-7)
                continue
            if want is None:
                continue
            assert len(rows) <= 32 and len(cols) <= 384, (key, len(rows), len(cols))
            assert max_abs_diff(z, want) <= 1e-4, (step, key)
    print(f"drawing time per step at 512 tokens (ms): {draw_ms}")  # reported, never asserted: shared machines

    # The chosen query's row and every drawn key are labelled on the scores map.
    show_step(page, "scores")
    ticks = page.evaluate("() => { const l = document.getElementById('plot-scores').layout; return [l.yaxis.tickvals, l.xaxis.tickvals]; }")
    assert ticks == [list(range(q - 16, q + 16))] * 2


def test_the_key_window_moves_and_the_overview_chooses_where_to_look(page: Page, api, long_text):
    layer, head, q = 1, 3, LONG_QUERY
    expected = trace(api, long_text, layer, head)
    scores = expected["steps"]["scores"][0]
    page.goto(steps_url(long_text, layer=layer, head=head, query=q, step="scores"))
    expect(stage(page)).to_have_attribute("data-step", "scores")
    expect(stage(page)).to_have_attribute("data-keys", str(q - 16))
    expect(page.locator("#window-follow")).to_be_disabled()

    def assert_keys(first: int) -> None:
        expect(stage(page)).to_have_attribute("data-keys", str(first))
        expect(page.locator("#qk-panel")).to_have_attribute("data-keys", str(first))
        z, rows, cols = drawn_window(page, "scores")
        assert cols == list(range(first, first + 32)) and rows == list(range(q - 16, q + 16))
        assert max_abs_diff(z, [[scores[r][c] for c in cols] for r in rows]) <= 1e-4
        sums = [row[0] for row in drawn(page, "qk-sums")]
        assert sums == pytest.approx(scores[q][first:first + 32], abs=1e-3)

    page.locator("#window-keys-next").click()  # half a window later
    assert_keys(q)
    assert query(page)["keys"] == [str(q)] and query(page)["query"] == [str(q)]
    expect(page.locator("#window-follow")).to_be_enabled()
    page.locator("#qk-keys-prev").click()
    page.locator("#qk-keys-prev").click()
    assert_keys(q - 32)
    page.locator("#window-follow").click()
    assert_keys(q - 16)
    assert "keys" not in query(page)

    # Clicking the overview at (query 100, key 400) looks there: the query moves, the keys centre on 400.
    point = page.evaluate(
        """([r, c]) => { const gd = document.getElementById('stage-overview'), l = gd._fullLayout;
                        const box = gd.getBoundingClientRect();
                        return {x: box.left + l.xaxis._offset + l.xaxis.l2p(c), y: box.top + l.yaxis._offset + l.yaxis.l2p(r)}; }""",
        [100, 400],
    )
    page.mouse.click(point["x"], point["y"])
    expect(page.locator("#query-select")).not_to_have_value(str(q))
    chosen = int(query(page)["query"][0])
    first = int(query(page)["keys"][0])
    assert abs(chosen - 100) <= 6 and first <= 400 < first + 32  # the thumbnail pools 4 × 4 cells
    expect(stage(page)).to_have_attribute("data-query", str(chosen))
    assert_rows = drawn_window(page, "scores")[1]
    assert chosen in assert_rows and len(assert_rows) == 32

    # Every move was a history entry: Back returns to the keys around query 300.
    page.go_back()
    expect(stage(page)).to_have_attribute("data-query", str(q))
    assert_keys(q - 16)


@pytest.mark.parametrize("reload", [False, True], ids=["switched", "reloaded"])
def test_in_chinese_no_english_is_left(page: Page, api, reload: bool):
    # Long enough to be drawn through windows, so that the navigator is on screen too.
    text = "注意力机制让模型学会聚焦于最相关的部分。" * 12
    page.goto(steps_url(text, layer=1, head=2, query=40))
    expect(stage(page)).to_have_attribute("data-step", "input")
    switch_to_chinese(page)
    if reload:
        page.reload()  # the choice is remembered
        expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#stage-window")).to_be_visible()
    zh = [ui_text(page, f"step.{step}.label") for step in STEPS] + [ui_text(page, f"steps.block.label.{step}") for step in BLOCK]
    assert all(re.search(r"[\u4e00-\u9fff]", label) for label in zh if label != "softmax")
    expect(page.locator("#step-list .step-name")).to_have_text(zh)
    for step in STEPS:
        show_step(page, step)
        assert re.search(r"[\u4e00-\u9fff]", page.locator("#stage-body").text_content()), step
        assert english_left(page) == [], step
    expect(page.locator("#stage-title")).to_have_text(ui_text(page, "step.output.title"))
    expect(page.locator("#step-play")).to_have_text(ui_text(page, "walk.play"))


def test_a_lang_parameter_wins_over_the_stored_choice(page: Page):
    page.goto(steps_url(SENTENCE, layer=0, head=0, query=2))
    expect(stage(page)).to_have_attribute("data-step", "input")
    switch_to_chinese(page)
    expect(page.locator("#stage-title")).to_have_text("输入 X")
    page.goto(steps_url(SENTENCE, layer=0, head=0, query=2, lang="en"))
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#stage-title")).to_have_text("Input X")
    expect(page.locator("#step-list .step-name").first).to_have_text("Input")
    page.locator("#tokens .chip").nth(3).click()  # the page's own URLs keep the parameter
    expect(stage(page)).to_have_attribute("data-query", "3")
    assert query(page)["lang"] == ["en"]


def test_at_800_px_a_two_dozen_token_sentence_is_drawn_whole_and_legible(page: Page):
    """An 800 px screen draws a 24-token sentence without a window, every label apart from the next."""
    text = "The animal didn't cross the street because it was too tired to walk any further that day"
    page.set_viewport_size({"width": 800, "height": VIEWPORT_HEIGHT})
    page.goto(steps_url(text, layer=0, head=0, query=3))
    expect(stage(page)).to_have_attribute("data-step", "input")
    n = len(page.locator("#tokens .chip").all())
    assert 20 <= n <= 24, n
    for step in STEPS:
        show_step(page, step)
        expect(page.locator("#stage-window")).to_be_hidden()  # nothing windowed: the whole sentence
        assert page.evaluate(OVERLAPPING_LABELS, "#stage-grid") == [], step
        heights = page.evaluate(PLOT_HEIGHTS, "#stage-grid")
        assert all(0 < h <= 900 for h in heights.values()), (step, heights)
    show_step(page, "scores")
    ticks = page.evaluate("() => document.getElementById('plot-scores').layout.xaxis.tickvals")
    assert ticks == list(range(n))  # every key named
