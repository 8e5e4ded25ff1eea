"""The explorer page (/) in real Chromium, compared with the API it draws."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.sync_api import Page, expect

from .helpers import wait_until

SENTENCE = "The cat sat on the mat."
OTHER_SENTENCE = "A dog barked at the postman."
CHINESE = "注意力机制让模型学会聚焦于最相关的部分。"
XSS = "<img src=x onerror=alert(1)> <a href=http://example.com/x>link</a>"

# Viridis at 0, 16/255, ..., 240/255 and 1 (Plotly's own "Viridis" stops): the scale static/js/figures/colormap.js
# interpolates in, written out here again as the test's reference.
VIRIDIS = [
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
    "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725",
]
STOPS = [(1.0 if i == len(VIRIDIS) - 1 else 16 * i / 255, tuple(int(c[j:j + 2], 16) for j in (1, 3, 5))) for i, c in enumerate(VIRIDIS)]


def reference(api, text: str, pair: str | None = None) -> dict:
    """The attention the page should draw, fetched by the test itself."""
    response = api.post("/api/v1/attention", json={"text": text, "text_pair": pair})
    assert response.status_code == 200, response.text
    return response.json()


# The page downloads maps in the compact u16 encoding: weights are exact to 7.7e-6 (docs/encoding.md).
COMPACT = 7.7e-6


def max_abs_diff(a: list[list[float]], b: list[list[float]]) -> float:
    assert len(a) == len(b) and all(len(ra) == len(rb) for ra, rb in zip(a, b, strict=True)), "shapes differ"
    return max(abs(x - y) for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def drawn_z(page: Page) -> list[list[float]]:
    return page.evaluate("() => document.getElementById('heatmap').data[0].z")


def expect_head(page: Page, layer: int, head: int) -> None:
    expect(page.locator("#heatmap .gtitle")).to_have_text(f"Layer {layer} · Head {head}")
    expect(page.get_by_role("button", name=f"layer {layer} head {head}", exact=True)).to_have_attribute("aria-pressed", "true")


def query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def chip_texts(page: Page) -> list[str]:
    return page.locator("#tokens .chip").all_text_contents()


def tick_texts(page: Page, axis: str) -> list[str]:
    """The drawn tick labels of the big map in screen order: x left to right (by their right ends: they are rotated), y top to bottom."""
    return page.evaluate(
        """(axis) => Array.from(document.querySelectorAll(`#heatmap .${axis}tick text`))
              .map((t) => ({text: t.textContent, box: t.getBoundingClientRect()}))
              .sort((a, b) => axis === 'x' ? a.box.right - b.box.right : a.box.top - b.box.top)
              .map((t) => t.text)""",
        axis,
    )


def viridis(t: float) -> tuple[int, ...]:
    """An independent re-implementation of the page's colour map (value in [0, 1] -> RGB)."""
    p = min(max(t, 0.0), 1.0)
    i = 0
    while i < len(STOPS) - 2 and p > STOPS[i + 1][0]:
        i += 1
    (p0, a), (p1, b) = STOPS[i], STOPS[i + 1]
    f = (p - p0) / (p1 - p0)
    return tuple(round(x + (y - x) * f) for x, y in zip(a, b, strict=True))


def test_link_renders_grid_and_selected_head(page: Page, api, browser_log):
    expected = reference(api, SENTENCE)
    tokens = [token["text"] for token in expected["tokens"]]

    page.goto(f"/?text={SENTENCE}&layer=2&head=5")

    expect(page.locator("#overview button.thumb")).to_have_count(72)
    expect(page.locator("#overview .axis-label").filter(has_text=re.compile(r"^L\d$"))).to_have_text([f"L{i}" for i in range(6)])
    expect(page.locator("#overview .axis-label").filter(has_text=re.compile(r"^H\d+$"))).to_have_text([f"H{i}" for i in range(12)])
    expect_head(page, 2, 5)
    expect(page.locator("#overview button.thumb[aria-pressed=true]")).to_have_count(1)

    assert max_abs_diff(drawn_z(page), expected["attention"][2][5]) <= COMPACT
    figure = page.evaluate(
        """() => { const gd = document.getElementById('heatmap');
                   return {type: gd.data[0].type, x: gd.layout.xaxis.tickvals, y: gd.layout.yaxis.tickvals}; }"""
    )
    assert figure == {"type": "heatmap", "x": list(range(len(tokens))), "y": list(range(len(tokens)))}
    assert tick_texts(page, "x") == tokens  # two "the" tokens stay two columns
    assert tick_texts(page, "y") == tokens  # top to bottom: the first query is at the top
    assert chip_texts(page) == tokens
    expect(page.locator("#tokens .chip-special")).to_have_text(["[CLS]", "[SEP]"])
    expect(page.locator("#text-input")).to_have_value(SENTENCE)
    expect(page.locator("#status")).not_to_have_class(re.compile("is-error"))

    # The thumbnail of layer 2 head 5 shows the same numbers: pixel (key, query) coloured by weight / head max.
    pixels = page.evaluate(
        """() => { const canvas = document.querySelector('button.thumb[data-layer="2"][data-head="5"] canvas');
                   return {n: canvas.width, data: Array.from(canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data)}; }"""
    )
    matrix = expected["attention"][2][5]
    n, peak = len(tokens), max(max(row) for row in matrix)
    assert pixels["n"] == n
    worst = max(
        abs(pixels["data"][4 * (q * n + k) + c] - viridis(matrix[q][k] / peak)[c]) for q in range(n) for k in range(n) for c in range(3)
    )
    assert worst <= 1
    # Only what is on screen: the grid's summaries and the selected layer's heads (the large map and the head view),
    # one request each.
    assert browser_log.api_posts("/api/v1/attention/summary") == 1
    assert browser_log.api_posts() == 1


def test_clicking_a_thumbnail_fetches_only_that_layer(page: Page, api, browser_log):
    expected = reference(api, SENTENCE)
    page.goto(f"/?text={SENTENCE}&layer=2&head=5")
    expect_head(page, 2, 5)

    page.get_by_role("button", name="layer 4 head 7", exact=True).click()

    expect_head(page, 4, 7)
    expect(page.locator("#overview button.thumb[aria-pressed=true]")).to_have_count(1)
    assert max_abs_diff(drawn_z(page), expected["attention"][4][7]) <= COMPACT
    assert max_abs_diff(drawn_z(page), expected["attention"][2][5]) > 1e-3  # the control: heads differ
    assert query(page)["layer"] == ["4"] and query(page)["head"] == ["7"]
    assert query(page)["text"] == [SENTENCE]
    expect(page.locator("#layer-select")).to_have_value("4")
    expect(page.locator("#head-select")).to_have_value("7")
    assert browser_log.api_posts("/api/v1/attention/summary") == 1  # the grid was not fetched again
    assert browser_log.api_posts() == 2  # one more request: the new layer's heads at full resolution

    # Back returns to the previous head, which the page still has.
    page.go_back()
    expect_head(page, 2, 5)
    assert max_abs_diff(drawn_z(page), expected["attention"][2][5]) <= COMPACT
    assert browser_log.api_posts() == 2

    # The keyboard: the grid is one tab stop (the selected map); arrows move, Enter selects.
    expect(page.locator("#overview button.thumb[tabindex='0']")).to_have_count(1)
    page.get_by_role("button", name="layer 2 head 5", exact=True).focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect_head(page, 3, 6)
    assert max_abs_diff(drawn_z(page), expected["attention"][3][6]) <= COMPACT
    assert browser_log.api_posts("/api/v1/attention/summary") == 1


def test_new_sentence_then_back(page: Page, api):
    first = [token["text"] for token in reference(api, SENTENCE)["tokens"]]
    second = [token["text"] for token in reference(api, OTHER_SENTENCE)["tokens"]]
    page.goto(f"/?text={SENTENCE}&layer=1&head=3")
    expect(page.locator("#tokens .chip")).to_have_text(first)
    expect_head(page, 1, 3)

    page.locator("#text-input").fill(OTHER_SENTENCE)
    page.locator("#text-input").press("Enter")

    expect(page.locator("#tokens .chip")).to_have_text(second)
    expect(page).to_have_url(re.compile(r"text=A\+dog\+barked"))
    assert query(page)["text"] == [OTHER_SENTENCE]
    expect_head(page, 1, 3)  # the selected head stays
    assert tick_texts(page, "x") == second

    page.go_back()

    expect(page.locator("#text-input")).to_have_value(SENTENCE)
    expect(page.locator("#tokens .chip")).to_have_text(first)
    assert query(page)["text"] == [SENTENCE]
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 1 · Head 3")
    wait_until(page, "(n) => document.getElementById('heatmap').data[0].z.length === n", arg=len(first))
    assert tick_texts(page, "x") == first

    page.go_forward()
    expect(page.locator("#text-input")).to_have_value(OTHER_SENTENCE)
    expect(page.locator("#tokens .chip")).to_have_text(second)


def test_markup_in_the_sentence_is_shown_as_text(page: Page, api):
    expected = reference(api, XSS)
    tokens = [token["text"] for token in expected["tokens"]]
    assert "<" in tokens and "href" not in tokens  # wordpieces: "hr", "##ef"

    page.goto("/?" + "&".join([f"text={XSS.replace('&', '%26')}", "layer=0", "head=0"]).replace(" ", "%20"))

    expect(page.locator("#tokens .chip")).to_have_text(tokens)
    expect_head(page, 0, 0)
    expect(page.locator("#text-input")).to_have_value(XSS)
    content = "#main"
    assert page.locator(f"{content} img").count() == 0
    links = page.locator(f"{content} #results a, {content} #heatmap a, {content} .controls a")
    expect(links).to_have_count(1)  # the page's own "Step through this head" link, and no link made of the text
    expect(links).to_have_attribute("id", "steps-link")
    assert page.locator('a[href*="example.com"]:not(#steps-link), img[src="x"], [onerror]').count() == 0
    assert page.locator("#heatmap svg a").count() == 0

    # Tick labels show the literal token text; only the labelled indices (tickvals) are drawn.
    tickvals = page.evaluate("() => document.getElementById('heatmap').layout.xaxis.tickvals")
    assert tick_texts(page, "x") == [tokens[i] for i in tickvals]
    assert tick_texts(page, "y") == [tokens[i] for i in tickvals]
    assert "=" in tick_texts(page, "x")

    # Hover text is escaped too: query "<" (index 1) -> key "a" shows as literal text.
    cell = page.evaluate(
        """([q, k]) => { const gd = document.getElementById('heatmap'), layout = gd._fullLayout;
                        const box = gd.getBoundingClientRect();
                        return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(k),
                                y: box.top + layout.yaxis._offset + layout.yaxis.l2p(q)}; }""",
        [1, tokens.index("a")],
    )
    page.mouse.move(cell["x"], cell["y"])
    hover = page.locator("#heatmap .hoverlayer .hovertext")
    expect(hover).to_contain_text("< → a: ")
    assert page.locator("#heatmap .hoverlayer a").count() == 0
    expect(page.locator("#heatmap .modebar-btn")).not_to_have_count(0)
    expect(page.locator("#heatmap [data-title^='Share']")).to_have_count(0)  # nothing is uploaded anywhere
    assert max_abs_diff(drawn_z(page), expected["attention"][0][0]) <= COMPACT


def test_plotly_labels_are_escaped_and_the_check_can_fail(page: Page, live_server):
    """escapeForPlotly keeps markup literal in real Plotly; without it Plotly makes a live link."""
    page.goto("/")
    expect(page.locator("#intro")).to_be_visible()
    wait_until(page, "() => typeof window.Plotly === 'object'")
    label = '<a href="http://example.com/x">x</a> <b>bold</b> & "q"'
    result = page.evaluate(
        """async (label) => {
             const { escapeForPlotly } = await import('/static/js/figures/escape.js');
             const { attentionHeatmapFigure } = await import('/static/js/figures/heatmap.js');
             const draw = async (ticktext) => {
               const div = document.createElement('div');
               document.body.append(div);
               await window.Plotly.newPlot(div, [{type: 'heatmap', z: [[1]]}],
                 {xaxis: {tickmode: 'array', tickvals: [0], ticktext: [ticktext]}, width: 400, height: 300});
               const out = {links: div.querySelectorAll('.xtick a').length, text: div.querySelector('.xtick text').textContent};
               window.Plotly.purge(div);
               div.remove();
               return out;
             };
             const figure = attentionHeatmapFigure({tokens: [{text: label}, {text: '[SEP]'}], matrix: [[0.5, 0.5], [1, 0]], layer: 0, head: 0});
             return {raw: await draw(label), escaped: await draw(escapeForPlotly(label)),
                     figureTicks: figure.layout.xaxis.ticktext, hover: figure.data[0].text};
           }""",
        label,
    )
    assert result["raw"]["links"] == 1  # the control: Plotly parses unescaped markup
    assert result["escaped"] == {"links": 0, "text": label}
    assert result["figureTicks"][0] == "&lt;a href=&#34;http://example.com/x&#34;&gt;x&lt;/a&gt; &lt;b&gt;bold&lt;/b&gt; &amp; &#34;q&#34;"
    assert result["hover"][0][1] == result["figureTicks"][0] + " → [SEP]"


@pytest.mark.expect_http_errors(422)
def test_blank_text_in_the_link_is_said_in_the_pages_words(page: Page, api):
    error = api.post("/api/v1/attention", json={"text": "  "}).json()["errors"][0]
    assert (error["loc"], error["type"]) == (["body", "text"], "value_error")  # what the page words it from
    page.goto("/?text=%20%20")
    status = page.locator("#status")
    expect(status).to_have_text("The sentence is blank: type at least one word.")
    expect(status).to_have_class(re.compile("is-error"))
    expect(page.locator("#loading")).to_be_hidden()


@pytest.mark.expect_http_errors(413)
def test_too_many_tokens_keeps_the_last_good_result(page: Page, api, browser_log):
    too_long = " ".join(["word"] * 600)
    response = api.post("/api/v1/attention", json={"text": too_long})
    assert response.status_code == 413
    tokens = [token["text"] for token in reference(api, SENTENCE)["tokens"]]
    page.goto(f"/?text={SENTENCE}&layer=3&head=1")
    expect_head(page, 3, 1)

    page.locator("#text-input").fill(too_long)
    page.get_by_role("button", name="Run", exact=True).click()

    status = page.locator("#status")
    count = response.json()["errors"][0]["ctx"]["count"]
    expect(status).to_have_text(f"This input has {count} tokens; minilm takes at most 512. "
                                "Shorten the text or choose another model.")
    expect(status).to_have_class(re.compile("is-error"))
    expect(page.locator("#tokens .chip")).to_have_text(tokens)  # the last good result stays
    expect_head(page, 3, 1)
    expect(page.locator("#overview button.thumb")).to_have_count(72)
    assert any(m.startswith("Failed to load resource") and "413" in m for m in browser_log.console_errors)
    assert browser_log.api_posts("/api/v1/attention/summary") == 2  # the good one, then the refused one

    # The maps on screen stay usable: another head of the last good sentence, without a new overview.
    page.get_by_role("button", name="layer 0 head 1", exact=True).click()
    expect_head(page, 0, 1)
    assert query(page)["text"] == [SENTENCE]
    assert browser_log.api_posts("/api/v1/attention/summary") == 2


def test_invalid_layer_and_head_in_the_link_fall_back_to_zero(page: Page, api):
    expected = reference(api, SENTENCE)
    page.goto(f"/?text={SENTENCE}&layer=99&head=-1")
    expect_head(page, 0, 0)
    assert max_abs_diff(drawn_z(page), expected["attention"][0][0]) <= COMPACT
    expect(page).to_have_url(re.compile(r"layer=0&head=0$"))


def test_a_chinese_sentence_shows_the_characters_behind_each_unknown_token(page: Page, api):
    tokens = reference(api, CHINESE)["tokens"]
    unknown = [token for token in tokens if token["text"] == "[UNK]"]
    assert len(unknown) >= 10  # the packaged vocabulary lacks most of these characters
    page.goto(f"/?text={CHINESE}")

    chips = page.locator("#tokens .chip")
    expect(chips).to_have_count(len(tokens))
    # Every chip shows its source characters, cut from the sentence by the offsets; unknown ones are marked.
    expected = [
        token["text"] if token["special"] else CHINESE[token["start"]:token["end"]] + ("⟨UNK⟩" if token["text"] == "[UNK]" else "")
        for token in tokens
    ]
    expect(chips).to_have_text(expected)
    expect(page.locator("#tokens .chip-unknown")).to_have_count(len(unknown))
    assert "[UNK]" in (page.locator("#tokens .chip-unknown").first.get_attribute("title") or "")
    note = page.locator("#unknown-note")
    expect(note).to_be_visible()
    expect(note).to_contain_text(str(len(unknown)))
    # The map's labels say the same, and an English sentence has no note.
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    assert tick_texts(page, "y") == expected
    page.locator("#text-input").fill(SENTENCE)
    page.locator("#text-input").press("Enter")
    expect(page.locator("#tokens .chip-unknown")).to_have_count(0)
    expect(note).to_be_hidden()


def test_a_click_on_a_row_chooses_the_query_that_step_through_opens(page: Page, api):
    tokens = [token["text"] for token in reference(api, SENTENCE)["tokens"]]
    page.goto(f"/?text={SENTENCE}&layer=3&head=4")
    expect_head(page, 3, 4)
    assert "query" not in query(page)
    cell = page.evaluate(
        """([q, k]) => { const gd = document.getElementById('heatmap'), layout = gd._fullLayout;
                        const box = gd.getBoundingClientRect();
                        return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(k),
                                y: box.top + layout.yaxis._offset + layout.yaxis.l2p(q)}; }""",
        [2, 5],
    )
    page.mouse.click(cell["x"], cell["y"])

    expect(page).to_have_url(re.compile(r"query=2"))
    expect(page.locator("#query-note .query-token")).to_have_text(tokens[2])
    # the chosen row is outlined (once the map is drawn again)
    wait_until(page, "() => JSON.stringify(document.getElementById('heatmap').layout.shapes.map((s) => [s.y0, s.y1])) === '[[1.5,2.5]]'")
    link = page.locator("#steps-link")
    href = link.get_attribute("href") or ""
    assert parse_qs(urlsplit(href).query) == {"text": [SENTENCE], "layer": ["3"], "head": ["4"], "query": ["2"]}

    link.click()
    expect(page).to_have_url(re.compile(r"/steps\?"))
    expect(page.locator("#query-select")).to_have_value("2")
    expect(page.locator("#layer-select")).to_have_value("3")
    expect(page.locator("#head-select")).to_have_value("4")
    page.go_back()
    expect(page.locator("#query-note .query-token")).to_have_text(tokens[2])
