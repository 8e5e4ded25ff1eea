"""The walkthrough page (/steps) in real Chromium, compared with /api/v1/trace fetched by the test."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import Page, expect

from .helpers import RECORD_STEPS, STEPS, drawn, max_abs_diff, show_step, stage

SENTENCE = "The cat sat on the mat."
XSS = "<img src=x onerror=alert(1)> <a href=http://example.com/x>link</a>"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


def trace(api, text: str, layer: int, head: int, pair: str | None = None) -> dict:
    """What the page should draw, fetched by the test itself."""
    response = api.post("/api/v1/trace", json={"text": text, "text_pair": pair, "layer": layer, "head": head})
    assert response.status_code == 200, response.text
    return response.json()


def steps_url(text: str, **params) -> str:
    query = "&".join([f"text={quote(text)}"] + [f"{key}={value}" for key, value in params.items()])
    return f"/steps?{query}"


def query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def test_play_at_the_fastest_speed_visits_every_step_in_order(page: Page):
    page.goto(steps_url(SENTENCE, layer=1, head=2, query=3))
    expect(stage(page)).to_have_attribute("data-step", "input")
    expect(page.locator("#step-list button.step-item")).to_have_count(10)
    assert page.locator("#step-list button.step-item").evaluate_all("(bs) => bs.map((b) => b.dataset.step)") == STEPS
    expect(page.locator("#step-list button.step-item .step-name")).to_have_text(
        ["Input", "Project", "Split", "Scores", "Scale", "Mask", "Softmax", "Weighted sum", "Concat", "Output"]
    )
    page.evaluate(RECORD_STEPS)
    fastest = page.locator("#step-speed option").last.get_attribute("value")
    assert int(fastest) == min(int(v) for v in page.locator("#step-speed option").evaluate_all("(os) => os.map((o) => o.value)"))
    page.select_option("#step-speed", fastest)

    play = page.locator("#step-play")
    play.click()
    expect(play).to_have_attribute("aria-pressed", "true")
    expect(play).to_have_text(re.compile("Pause"))
    expect(stage(page)).to_have_attribute("data-step", "output", timeout=20_000)
    expect(play).to_have_attribute("aria-pressed", "false")  # it stops at the last step

    assert page.evaluate("() => window.__seen") == STEPS
    assert query(page)["step"] == ["output"]  # the step is in the URL (replaced, not pushed)
    expect(page.locator("#step-position")).to_have_text("10 / 10")
    expect(page.locator("#step-next")).to_be_disabled()

    # Play again from the end starts over at the first step.
    page.evaluate(RECORD_STEPS)
    play.click()
    expect(stage(page)).to_have_attribute("data-step", "output", timeout=20_000)
    expect(play).to_have_attribute("aria-pressed", "false")
    assert page.evaluate("() => window.__seen") == ["output"] + STEPS


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
    expect(page.locator("#step-position")).to_have_text("2 / 10")

    # Scrubbing: the slider is a range input over the steps.
    page.locator("#step-slider").evaluate("(el) => { el.value = '6'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    expect(stage(page)).to_have_attribute("data-step", "softmax")
    page.locator("#step-slider").press("ArrowRight")
    expect(stage(page)).to_have_attribute("data-step", "weighted_sum")
    page.locator("#step-slider").press("End")
    expect(stage(page)).to_have_attribute("data-step", "output")
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
    page.wait_for_function(
        "(want) => Math.abs(document.getElementById('plot-softmax').data[0].z[0][0] - want) < 1e-9",
        arg=other_layer["steps"]["softmax"][0][0][0],
    )
    assert max_abs_diff(drawn(page, "softmax"), other_layer["steps"]["softmax"][0]) <= 1e-6
    assert query(page)["layer"] == ["4"]

    page.go_back()  # layer 2, head 7
    expect(page.locator("#layer-select")).to_have_value("2")
    page.wait_for_function(
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
    assert max_abs_diff(drawn(page, "scores"), expected["steps"]["scores"][0]) <= 1e-5


def test_explorer_links_to_the_selected_head(page: Page, api):
    page.goto(f"/?text={quote(SENTENCE)}&layer=2&head=5")
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 2 · Head 5")
    page.get_by_role("button", name="layer 4 head 7", exact=True).click()
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 4 · Head 7")

    page.get_by_role("button", name="Step through this head").click()

    expect(stage(page)).to_have_attribute("data-step", "input")
    assert urlsplit(page.url).path == "/steps"
    assert query(page)["text"] == [SENTENCE]
    assert query(page)["layer"] == ["4"] and query(page)["head"] == ["7"]
    expect(page.locator("#layer-select")).to_have_value("4")
    expect(page.locator("#head-select")).to_have_value("7")
    expected = trace(api, SENTENCE, 4, 7)
    assert max_abs_diff(drawn(page, "input"), expected["steps"]["input"]) <= 1e-6

    # And back from /steps to the explorer, at the same layer and head.
    page.get_by_role("link", name="All heads in the explorer").click()
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 4 · Head 7")


def test_pages_carry_the_csp_and_the_nav(page: Page):
    for path, current in [("/steps", "Steps"), ("/toy", "Toy example")]:
        response = page.goto(path)
        assert response.status == 200
        assert response.headers["content-security-policy"] == CSP
        expect(page.locator(".site-nav a")).to_have_text(["Explorer", "Steps", "Toy example", "API docs"])
        expect(page.locator('.site-nav a[aria-current="page"]')).to_have_text(current)
    expect(page.locator("#stage")).to_have_attribute("data-step", "input")  # /toy has drawn its example


def test_without_a_sentence_the_page_offers_examples(page: Page):
    page.goto("/steps")
    expect(page.locator("#intro")).to_be_visible()
    expect(page.locator("#results")).to_be_hidden()
    page.get_by_role("link", name="The cat sat on the mat.").click()
    expect(stage(page)).to_have_attribute("data-step", "input")
    assert query(page)["query"] == ["2"]


@pytest.mark.expect_http_errors(422)
def test_a_blank_sentence_shows_the_servers_message(page: Page, api):
    detail = api.post("/api/v1/trace", json={"text": "  ", "layer": 0, "head": 0}).json()["detail"]
    page.goto("/steps?text=%20%20&layer=0&head=0")
    expect(page.locator("#status")).to_have_text(detail)
    expect(page.locator("#status")).to_have_class(re.compile("is-error"))
    expect(page.locator("#loading")).to_be_hidden()
    expect(page.locator("#results")).to_be_hidden()
