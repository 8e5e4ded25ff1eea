"""The explorer's head view (#head-view, static/js/views/head-view.js) and the overview grid's colouring,
scale and focus (static/js/views/overview.js), in real Chromium, compared with the API.

The head view shows the layer of the URL: a line per (head, query, key) whose weight is at least the
view's cutoff, 0.01 (its legend says so). It opens on the URL's head alone and, of every token's lines, each
query token's 3 strongest (at most 3 x N lines); its "lines per token" menu and head toggles add the rest. What it stroked is read back from the container
(`headViewLines()`, `data-*`), and compared with /api/v1/attention fetched by the test."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from playwright.sync_api import Page, expect

from bench.common import TextMaker

SENTENCE = "The cat sat on the mat because it was warm."
LAYER = 3
CUTOFF = 0.01
MAX_DRAWN = 1500
OPENING_LIMIT = 3  # lines per query token the view opens with (static/js/views/head-view-layout.js)
# The page's maps come in the compact u16 encoding: weights exact to 7.7e-6 (docs/encoding.md). A weight this close
# to the cutoff may fall on either side of it there.
COMPACT = 7.7e-6
BAND = 2 * COMPACT

# Viridis, as Plotly lists it (positions 16k/255 and 1): an independent copy of the page's sequential scale.
VIRIDIS = [
    "#440154", "#48186a", "#472d7b", "#424086", "#3b528b", "#33638d", "#2c728e", "#26828e", "#21918c",
    "#1fa088", "#28ae80", "#3fbc73", "#5ec962", "#84d44b", "#addc30", "#d8e219", "#fde725",
]
STOPS = [(1.0 if i == len(VIRIDIS) - 1 else 16 * i / 255, tuple(int(c[j : j + 2], 16) for j in (1, 3, 5)))
         for i, c in enumerate(VIRIDIS)]


def viridis(x: float) -> tuple[int, ...]:
    x = min(max(x, 0.0), 1.0)
    for (p0, a), (p1, b) in zip(STOPS, STOPS[1:], strict=False):
        if x <= p1:
            f = (x - p0) / (p1 - p0)
            return tuple(round(u + (v - u) * f) for u, v in zip(a, b, strict=True))
    return STOPS[-1][1]


def layer_maps(api, text: str, layer: int = LAYER) -> dict:
    """One layer's maps of every head, as JSON (asked for 6 heads at a time: 512 tokens x 12 heads is over the
    JSON answer's cap)."""
    answer = None
    for first in range(0, 64, 6):
        response = api.post("/api/v1/attention", json={"text": text, "layers": [layer], "heads": list(range(first, first + 6))})
        if response.status_code == 422 and answer is not None:  # past the model's last head
            break
        assert response.status_code == 200, response.text
        part = response.json()
        if answer is None:
            answer = part
        else:
            answer["heads"] += part["heads"]
            answer["attention"][0] += part["attention"][0]
    return answer


def expected_lines(maps: list[list[list[float]]], heads: list[int], *, query: int | None = None,
                   key: int | None = None, cutoff: float = CUTOFF) -> dict[tuple[int, int, int], float]:
    """(head, query, key) -> weight for every weight of at least the cutoff (of one query row or key column)."""
    out = {}
    for h, matrix in zip(heads, maps, strict=True):
        for q, row in enumerate(matrix):
            if query is not None and q != query:
                continue
            for k, w in enumerate(row):
                if (key is None or k == key) and w >= cutoff:
                    out[(h, q, k)] = w
    return out


def drawn_lines(page: Page) -> dict[tuple[int, int, int], float]:
    lines = page.evaluate(
        """() => { const l = document.getElementById('head-view').headViewLines();
                   return {head: Array.from(l.head), query: Array.from(l.query), key: Array.from(l.key),
                           weight: Array.from(l.weight)}; }"""
    )
    out = {}
    for h, q, k, w in zip(lines["head"], lines["query"], lines["key"], lines["weight"], strict=True):
        assert (h, q, k) not in out, f"line {(h, q, k)} drawn twice"
        out[(h, q, k)] = w
    return out


def assert_same_lines(drawn: dict, expected: dict, maps: list, heads: list[int], cutoff: float = CUTOFF) -> None:
    """Equal sets up to weights within BAND of the cutoff; each drawn weight equal to the API's."""
    def weight(hqk):
        h, q, k = hqk
        return maps[heads.index(h)][q][k]

    missing = [x for x in expected if x not in drawn and weight(x) >= cutoff + BAND]
    extra = [x for x in drawn if x not in expected and weight(x) < cutoff - BAND]
    assert missing == [] and extra == [], f"{len(missing)} lines missing, {len(extra)} extra"
    worst = max((abs(w - weight(x)) for x, w in drawn.items()), default=0.0)
    assert worst <= COMPACT


def open_head_view(page: Page, text: str, extra: str = "") -> int:
    """Open the explorer at LAYER and wait for the head view; returns the number of tokens it shows."""
    page.goto(f"/?text={quote(text)}&layer={LAYER}&head=0{extra}")
    view = page.locator("#head-view")
    expect(view).to_have_attribute("data-layer", str(LAYER))
    expect(view).to_have_attribute("data-mode", re.compile(r"^(all|query|key)$"))
    return view.locator(".head-view-queries .head-view-token").count()


def show_every_line(page: Page) -> None:
    """Every head, and every line of weight >= 0.01 of every token (the view opens with fewer)."""
    view = page.locator("#head-view")
    view.locator(".head-view-limit").select_option("all")
    expect(view).to_have_attribute("data-limit", "all")
    view.locator(".head-view-all").click()
    expect(view.locator(".head-view-toggle[aria-pressed='false']")).to_have_count(0)


def assert_strongest(drawn: dict, maps: list, heads: list[int], shown: list[int], limit: int, *,
                     complete: bool) -> None:
    """Each drawn line is among its query row's `limit` strongest weights of at least the cutoff, in a shown
    head; `complete`: every row is in view, so each row's `limit` strongest are all drawn. (Up to weights
    within BAND of each other or of the cutoff: the compact encoding.)"""
    assert {h for h, _, _ in drawn} <= set(shown)
    for h in shown:
        matrix = maps[heads.index(h)]
        for q, row in enumerate(matrix):
            keys = [k for (hh, qq, k) in drawn if hh == h and qq == q]
            assert len(keys) <= limit, f"head {h} query {q}: {len(keys)} lines"
            for k in keys:
                assert row[k] >= CUTOFF - BAND
                assert sum(w > row[k] + BAND for w in row) < limit, f"head {h} query {q} key {k} is not a strongest"
            if complete:
                left = [w for k, w in enumerate(row) if k not in keys]
                floor = min((row[k] for k in keys), default=1.0) if len(keys) == limit else CUTOFF
                assert all(w <= floor + BAND for w in left), f"head {h} query {q}: a stronger line is not drawn"


def token(page: Page, side: str, index: int):
    column = "head-view-queries" if side == "query" else "head-view-keys"
    return page.locator(f"#head-view .{column} .head-view-token").nth(index)


def url_query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


# ---- head view -----------------------------------------------------------------------------------------


def every_tokens_lines(page: Page, maps: list, heads: list[int]) -> None:
    """Every token's lines, all rows in view: each weight of at least 0.01, or when more than the per-frame
    budget, of at least the weight the view says (data-from, at an opacity level's edge)."""
    view = page.locator("#head-view")
    expect(view).to_have_attribute("data-mode", "all")
    lowest = float(view.get_attribute("data-from"))
    expected = expected_lines(maps, heads, cutoff=lowest)
    assert_same_lines(drawn_lines(page), expected, maps, heads, cutoff=lowest)
    assert int(view.get_attribute("data-drawn")) <= MAX_DRAWN
    assert (lowest > CUTOFF) == (len(expected_lines(maps, heads)) > MAX_DRAWN)


@pytest.mark.parametrize("tokens", [None, 512], ids=["sentence", "512-tokens"])
def test_the_view_opens_on_the_selected_head_and_each_tokens_strongest_lines(page: Page, api, tokens):
    text = SENTENCE if tokens is None else TextMaker(seed=12).text(tokens)
    reference = layer_maps(api, text)
    maps, heads = reference["attention"][0], reference["heads"]
    page.goto(f"/?text={quote(text)}&layer={LAYER}&head=5")
    view = page.locator("#head-view")
    expect(view).to_have_attribute("data-layer", str(LAYER))
    n = len(reference["tokens"])
    # On open: head 5 alone, each query token's 3 strongest lines: at most 3 x N, in view or not.
    expect(view).to_have_attribute("data-heads", "5")
    expect(view).to_have_attribute("data-limit", str(OPENING_LIMIT))
    expect(view).to_have_attribute("data-mode", "all")
    expect(view.locator(".head-view-toggle[aria-pressed='true']")).to_have_count(1)
    expect(view.locator(".head-view-limit")).to_have_value(str(OPENING_LIMIT))
    assert int(view.get_attribute("data-lines")) <= OPENING_LIMIT * n
    assert int(view.get_attribute("data-drawn")) <= OPENING_LIMIT * n
    complete = tokens is None  # every row in view: each row's top 3 are drawn
    assert_strongest(drawn_lines(page), maps, heads, [5], OPENING_LIMIT, complete=complete)
    if complete:
        assert len(drawn_lines(page)) == int(view.get_attribute("data-lines"))
    expect(view.locator(".head-view-status")).to_have_text(re.compile(r"^Each query token's 3 strongest lines per head: \d+ \(heads shown: 1\)\.$"))

    # The menu: the strongest line alone, then every line of weight >= 0.01.
    view.locator(".head-view-limit").select_option("1")
    expect(view).to_have_attribute("data-limit", "1")
    tops = [max(row) for row in maps[heads.index(5)]]  # one line per row whose strongest weight reaches 0.01
    lines = int(view.get_attribute("data-lines"))
    assert abs(lines - sum(w >= CUTOFF for w in tops)) <= sum(abs(w - CUTOFF) < BAND for w in tops)
    assert_strongest(drawn_lines(page), maps, heads, [5], 1, complete=complete)
    view.locator(".head-view-limit").select_option("all")
    expect(view).to_have_attribute("data-limit", "all")
    if complete:
        every_tokens_lines(page, [maps[heads.index(5)]], [5])
    else:  # counted in full, in view or not
        lines = int(view.get_attribute("data-lines"))
        assert abs(lines - len(expected_lines([maps[heads.index(5)]], [5]))) <= sum(
            abs(w - CUTOFF) < BAND for row in maps[heads.index(5)] for w in row)

    # Choosing another head in the explorer moves the view to it while the learner has not picked heads.
    page.locator("#head-select").select_option("7")
    expect(view).to_have_attribute("data-heads", "7")
    # Adding heads: All shows the 12, and the view keeps them when another head is selected.
    view.locator(".head-view-all").click()
    expect(view).to_have_attribute("data-heads", ",".join(map(str, heads)))
    if complete:
        every_tokens_lines(page, maps, heads)
    page.locator("#head-select").select_option("2")
    expect(page).to_have_url(re.compile(r"[?&]head=2(&|$)"))
    expect(view).to_have_attribute("data-heads", ",".join(map(str, heads)))


@pytest.mark.parametrize("tokens", [None, 32], ids=["sentence", "32-tokens"])
def test_hovering_a_query_token_draws_its_weights_above_the_cutoff(page: Page, api, tokens):
    text = SENTENCE if tokens is None else TextMaker(seed=32).text(tokens)
    reference = layer_maps(api, text)
    maps, heads = reference["attention"][0], reference["heads"]
    n = open_head_view(page, text)
    assert n == len(reference["tokens"])
    view = page.locator("#head-view")
    expect(view.locator(".head-view-legend")).to_contain_text("0.01")
    show_every_line(page)
    every_tokens_lines(page, maps, heads)

    for q in (1, 7):
        token(page, "query", q).hover()
        expect(view).to_have_attribute("data-token", str(q))
        expect(view).to_have_attribute("data-mode", "query")
        assert_same_lines(drawn_lines(page), expected_lines(maps, heads, query=q), maps, heads)
        expect(token(page, "query", q)).to_have_class(re.compile(r"\bis-active\b"))
        expect(view.locator(".head-view-overlay")).to_be_visible()
        expect(view.locator(".head-view-base")).to_be_hidden()

    # The overlay has ink where the hovered query's strongest line starts, the base canvas does not show.
    ink = page.evaluate(
        """() => { const c = document.querySelector('#head-view .head-view-overlay');
                   const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                   let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n += 1; return n; }"""
    )
    assert ink > 0

    # Leaving the columns shows every token's lines again.
    page.mouse.move(2, 2)
    every_tokens_lines(page, maps, heads)


def test_hovering_a_key_token_draws_every_query_line_into_it(page: Page, api):
    reference = layer_maps(api, SENTENCE)
    maps, heads = reference["attention"][0], reference["heads"]
    open_head_view(page, SENTENCE)
    show_every_line(page)
    view = page.locator("#head-view")
    last = len(reference["tokens"]) - 1  # [SEP]: most heads' sink
    token(page, "key", last).hover()
    expect(view).to_have_attribute("data-mode", "key")
    expect(view).to_have_attribute("data-token", str(last))
    assert_same_lines(drawn_lines(page), expected_lines(maps, heads, key=last), maps, heads)


def test_head_toggles_change_what_is_drawn(page: Page, api):
    reference = layer_maps(api, SENTENCE)
    maps, heads = reference["attention"][0], reference["heads"]
    open_head_view(page, SENTENCE)
    show_every_line(page)
    view = page.locator("#head-view")
    toggle = view.get_by_role("button", name="Show or hide head 4", exact=True)
    expect(toggle).to_have_attribute("aria-pressed", "true")

    toggle.click()
    expect(toggle).to_have_attribute("aria-pressed", "false")
    shown = [h for h in heads if h != 4]
    expect(view).to_have_attribute("data-heads", ",".join(map(str, shown)))
    kept = [maps[heads.index(h)] for h in shown]
    every_tokens_lines(page, kept, shown)
    token(page, "query", 3).hover()
    expect(view).to_have_attribute("data-token", "3")
    assert_same_lines(drawn_lines(page), expected_lines(kept, shown, query=3), maps, heads)

    page.mouse.move(2, 2)
    view.locator(".head-view-none").click()
    expect(view).to_have_attribute("data-heads", "")
    expect(view).to_have_attribute("data-lines", "0")
    assert drawn_lines(page) == {}
    only = view.get_by_role("button", name="Show or hide head 2", exact=True)
    only.click()
    expect(view).to_have_attribute("data-heads", "2")
    every_tokens_lines(page, [maps[heads.index(2)]], [2])
    view.locator(".head-view-all").click()
    expect(view).to_have_attribute("data-heads", ",".join(map(str, heads)))
    expect(view.locator(".head-view-toggle[aria-pressed='true']")).to_have_count(len(heads))


def test_clicking_a_token_focuses_it_everywhere_and_escape_lets_go(page: Page, api):
    reference = layer_maps(api, SENTENCE)
    maps, heads = reference["attention"][0], reference["heads"]
    open_head_view(page, SENTENCE)
    show_every_line(page)
    view = page.locator("#head-view")
    token(page, "query", 5).click()
    expect(token(page, "query", 5)).to_have_attribute("aria-pressed", "true")
    expect(page).to_have_url(re.compile(r"[?&]focus=5(&|$)"))
    page.mouse.move(2, 2)  # the clicked token's lines stay
    expect(view).to_have_attribute("data-mode", "query")
    expect(view).to_have_attribute("data-token", "5")
    assert_same_lines(drawn_lines(page), expected_lines(maps, heads, query=5), maps, heads)
    expect(page.locator("#overview")).to_have_attribute("data-focus", "5")

    token(page, "query", 5).press("Escape")
    expect(page).not_to_have_url(re.compile(r"[?&]focus="))
    expect(token(page, "query", 5)).to_have_attribute("aria-pressed", "false")
    expect(view).to_have_attribute("data-mode", "all")


def test_focus_from_the_url_keeps_that_tokens_lines(page: Page, api):
    reference = layer_maps(api, SENTENCE)
    maps, heads = reference["attention"][0], reference["heads"]
    open_head_view(page, SENTENCE, "&focus=8")
    show_every_line(page)
    view = page.locator("#head-view")
    expect(view).to_have_attribute("data-token", "8")
    assert_same_lines(drawn_lines(page), expected_lines(maps, heads, query=8), maps, heads)


def test_tokens_are_reachable_by_keyboard(page: Page):
    open_head_view(page, SENTENCE)
    view = page.locator("#head-view")
    first = token(page, "query", 0)
    expect(first).to_have_attribute("tabindex", "0")
    expect(token(page, "query", 1)).to_have_attribute("tabindex", "-1")
    expect(first).to_have_attribute("aria-label", "query 0: [CLS]")
    first.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(token(page, "query", 2)).to_be_focused()
    expect(view).to_have_attribute("data-mode", "query")  # keyboard focus acts as a hover
    expect(view).to_have_attribute("data-token", "2")
    page.keyboard.press("ArrowRight")
    expect(token(page, "key", 2)).to_be_focused()
    expect(view).to_have_attribute("data-mode", "key")
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]focus=2(&|$)"))
    expect(view.locator(".head-view-base")).to_have_attribute("aria-label", re.compile(r"from query 2 “cat”"))


def test_512_tokens(page: Page, api):
    text = TextMaker(seed=12).text(512)
    reference = layer_maps(api, text)
    maps, heads = reference["attention"][0], reference["heads"]
    n = open_head_view(page, text)
    assert n == 512
    show_every_line(page)
    view = page.locator("#head-view")
    every = expected_lines(maps, heads)
    # Every token's lines: counted in full, drawn up to the per-frame budget, the strongest first.
    lines = int(view.get_attribute("data-lines"))
    assert abs(lines - len(every)) <= sum(1 for h in range(len(heads)) for row in maps[h] for w in row
                                          if abs(w - CUTOFF) < BAND)
    drawn = drawn_lines(page)
    assert 0 < len(drawn) <= MAX_DRAWN
    lowest = float(view.get_attribute("data-from"))
    assert min(drawn.values()) >= lowest - COMPACT
    if lowest > CUTOFF:
        expect(view.locator(".head-view-status")).to_contain_text(f"weights from {lowest:.2f}")
    # The canvas is the viewport's size, not the 512 rows' (9216 px): the column scrolls.
    box = page.evaluate(
        """() => { const s = document.querySelector('#head-view .head-view-scroll');
                   const c = document.querySelector('#head-view .head-view-base');
                   return {client: s.clientHeight, scroll: s.scrollHeight, canvas: c.height / devicePixelRatio}; }"""
    )
    assert box["scroll"] == 512 * 18 and box["client"] < box["scroll"] and box["canvas"] <= box["client"] + 1

    for q in (300, 511):
        token(page, "query", q).hover()  # scrolls the column to it
        expect(view).to_have_attribute("data-token", str(q))
        assert_same_lines(drawn_lines(page), expected_lines(maps, heads, query=q), maps, heads)

    token(page, "query", 300).click()
    expect(page).to_have_url(re.compile(r"[?&]focus=300(&|$)"))
    # The grid's maps are pooled to 64 x 64 at 512 tokens: the focus marks the bins holding token 300.
    summary = api.post("/api/v1/attention/summary", json={"text": text, "layers": [0], "heads": [0]}).json()
    holding = [i for i, (start, end) in enumerate(summary["bins"]) if start <= 300 < end]
    expect(page.locator("#overview")).to_have_attribute("data-focus-bins", f"{holding[0]}-{holding[-1]}")


# ---- overview grid ----------------------------------------------------------------------------------------


def thumbnail_pixels(page: Page, layer: int, head: int) -> dict:
    return page.evaluate(
        """([layer, head]) => { const c = document.querySelector(`button.thumb[data-layer="${layer}"][data-head="${head}"] canvas`);
                   return {n: c.width, data: Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)}; }""",
        [layer, head],
    )


def test_overview_colour_by_a_metric(page: Page, api):
    metrics = api.post("/api/v1/metrics", json={"text": SENTENCE}).json()["metrics"]["entropy"]
    low, high = min(min(row) for row in metrics), max(max(row) for row in metrics)
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=1&colour=entropy")
    grid = page.locator("#overview")
    expect(grid).to_have_attribute("data-metric", re.compile(r"."))
    expect(grid.locator("button.thumb.has-metric")).to_have_count(len(metrics) * len(metrics[0]))
    for layer, head in ((0, 0), (2, 5), (5, 11)):
        value = metrics[layer][head]
        button = grid.locator(f'button.thumb[data-layer="{layer}"][data-head="{head}"]')
        assert float(button.get_attribute("data-value")) == pytest.approx(value, abs=1e-6)
        shown = re.escape(f"{value:.3g}")
        expect(button).to_have_attribute("aria-label", re.compile(rf"^layer {layer} head {head}, .+: {shown}$"))
        colour = button.evaluate("(b) => getComputedStyle(b).borderTopColor")
        expected = viridis((value - low) / (high - low))
        got = tuple(int(x) for x in re.findall(r"\d+", colour)[:3])
        assert max(abs(a - b) for a, b in zip(got, expected, strict=True)) <= 1, (colour, expected)


def test_overview_shared_scale_with_gamma(page: Page, api):
    summary = api.post("/api/v1/attention/summary", json={"text": SENTENCE}).json()
    peak = max(w for layer in summary["attention"] for head in layer for row in head for w in row)
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=1&scale=shared&gamma=0.5")
    grid = page.locator("#overview")
    expect(grid).to_have_attribute("data-scale", "shared")
    expect(grid).to_have_attribute("data-gamma", "0.5")
    for layer, head in ((0, 3), (4, 7)):
        matrix = summary["attention"][layer][head]
        pixels = thumbnail_pixels(page, layer, head)
        n = pixels["n"]
        assert n == len(matrix)
        worst = max(
            abs(pixels["data"][4 * (q * n + k) + c] - viridis((matrix[q][k] / peak) ** 0.5)[c])
            for q in range(n) for k in range(n) for c in range(3)
        )
        assert worst <= 1

    # Each head to its own maximum, gamma 1: the default.
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=1")
    expect(grid).to_have_attribute("data-scale", "own")
    matrix = summary["attention"][4][7]
    own = max(max(row) for row in matrix)
    pixels = thumbnail_pixels(page, 4, 7)
    n = pixels["n"]
    worst = max(abs(pixels["data"][4 * (q * n + k) + c] - viridis(matrix[q][k] / own)[c])
                for q in range(n) for k in range(n) for c in range(3))
    assert worst <= 1


def test_overview_focus_marks_the_tokens_row_and_column(page: Page, api):
    n = len(layer_maps(api, SENTENCE)["tokens"])
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=1&focus=4")
    grid = page.locator("#overview")
    expect(grid).to_have_attribute("data-focus", "4")
    expect(grid).to_have_attribute("data-focus-bins", "4-4")
    thumbs = grid.locator("button.thumb")
    expect(grid.locator(".thumb-focus-row")).to_have_count(thumbs.count())
    row = grid.locator('button.thumb[data-layer="2"][data-head="3"] .thumb-focus-row')
    box, map_box = row.bounding_box(), row.locator("xpath=..").bounding_box()
    assert box["y"] - map_box["y"] == pytest.approx(map_box["height"] * 4 / n, abs=1.0)
    col = grid.locator('button.thumb[data-layer="2"][data-head="3"] .thumb-focus-col').bounding_box()
    assert col["x"] - map_box["x"] == pytest.approx(map_box["width"] * 4 / n, abs=1.0)


def test_overview_keyboard_navigation(page: Page):
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=1")
    grid = page.locator("#overview")
    selected = grid.locator('button.thumb[data-layer="1"][data-head="1"]')
    expect(selected).to_have_attribute("aria-pressed", "true")
    expect(selected).to_have_attribute("tabindex", "0")
    selected.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowDown")
    target = grid.locator('button.thumb[data-layer="2"][data-head="2"]')
    expect(target).to_be_focused()
    outline = target.evaluate("(b) => getComputedStyle(b).outlineStyle")
    assert outline != "none"  # the keyboard's position is visible
    page.keyboard.press("Enter")
    expect(target).to_have_attribute("aria-pressed", "true")
    assert url_query(page)["layer"] == ["2"] and url_query(page)["head"] == ["2"]
