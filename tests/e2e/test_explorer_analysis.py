"""The explorer's analysis features in real Chromium: what the large map shows (weight, mean over heads,
rollout, contribution), the head metrics table and the grid's colouring, the colour scale, token focus,
the segment boundary, zooming into a long input, and the modules the cold page preloads. Drawn values
(gd.data[0].z) are compared with the API, fetched by the test, at 32 and at 512 tokens."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .helpers import switch_to_chinese, wait_until

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the cat sat on a mat and then the dog ran to it".split()
COMPACT = 7.7e-6  # the compact u16 maps' error bound (docs/encoding.md)
JSON_EXACT = 1e-6  # JSON answers are float32 in shortest round-trip form


def text_of(n_tokens: int) -> str:
    """A text of exactly n_tokens tokens with [CLS] and [SEP] (each of WORDS is one token)."""
    return " ".join(WORDS[i % len(WORDS)] for i in range(n_tokens - 2))


def post(api, path: str, body: dict) -> dict:
    response = api.post(path, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def all_heads(api, text: str, layers: list[int] | None = None) -> np.ndarray:
    """(layer, head, query, key) from the compact answer, decoded here with numpy (the JSON answer of every
    head at 512 tokens is over the server's JSON cap)."""
    response = api.post("/api/v1/attention?encoding=u16", json={"text": text, "layers": layers})
    assert response.status_code == 200, response.text
    body = response.content
    assert body[:4] == b"ATN1"
    size = int.from_bytes(body[4:8], "little")
    header = json.loads(body[8:8 + size])
    values = np.frombuffer(body, dtype="<u2", offset=8 + size, count=int(np.prod(header["shape"])))
    return values.reshape(header["shape"]).astype(np.float64) / header["scale"]


def drawn(page: Page) -> np.ndarray:
    return np.array(page.evaluate("() => document.getElementById('heatmap').data[0].z"), dtype=np.float64)


def url_query(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query)


def wait_title(page: Page, title: str) -> None:
    expect(page.locator("#heatmap .gtitle")).to_have_text(title)


def link(text: str, **params: object) -> str:
    extra = "".join(f"&{key}={quote(str(value), safe=',')}" for key, value in params.items())
    return f"/?text={quote(text)}{extra}"


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_the_large_map_shows_each_kind_with_the_apis_numbers(page: Page, api, n_tokens: int):
    text = text_of(n_tokens)
    page.goto(link(text, layer=3, head=7))
    wait_title(page, "Layer 3 · Head 7")
    weights = post(api, "/api/v1/attention", {"text": text, "layers": [3], "heads": [7]})["attention"][0][0]
    assert np.abs(drawn(page) - np.array(weights)).max() <= COMPACT
    expect(page.locator("#kind-note")).to_contain_text("the share of query i’s attention that goes to key j")
    expect(page.locator("#rows-legend")).to_contain_text("each row sums to 1")

    # The kind selector: mean over heads, then rollout, then contribution; each one in the URL.
    page.locator("#kind-select").select_option("mean")
    wait_title(page, "Layer 3 · mean over heads")
    assert url_query(page)["kind"] == ["mean"]
    mean = np.array(post(api, "/api/v1/aggregate", {"text": text, "kind": "mean"})["maps"][3])
    assert np.abs(drawn(page) - mean).max() <= JSON_EXACT
    # the reference of the reference: the mean of the layer's heads, from /attention
    heads = all_heads(api, text, [3])[0]
    assert np.abs(drawn(page) - heads.mean(axis=0)).max() <= 1e-5
    expect(page.locator("#head-select")).to_be_disabled()

    page.locator("#kind-select").select_option("rollout")
    wait_title(page, "Rollout up to layer 3")
    rollout = np.array(post(api, "/api/v1/aggregate", {"text": text, "kind": "rollout"})["maps"][3])
    assert np.abs(drawn(page) - rollout).max() <= JSON_EXACT
    assert np.abs(rollout - mean).max() > 1e-3  # the control: rollout is not the layer's mean
    expect(page.locator("#kind-note")).to_contain_text("Abnar")

    page.locator("#kind-select").select_option("contribution")
    wait_title(page, "Layer 3 · Head 7 · contribution ‖αf(x)‖")
    assert url_query(page)["kind"] == ["contribution"]
    norms = np.array(post(api, "/api/v1/contributions", {"text": text, "layers": [3], "heads": [7]})["contributions"][0][0])
    z = drawn(page)
    assert np.abs(z - norms).max() <= JSON_EXACT * max(1.0, float(norms.max()))
    assert np.abs(z.sum(axis=1) - 1).max() > 1e-2  # the control: norms are not shares
    expect(page.locator("#kind-note")).to_contain_text("Kobayashi")

    page.go_back()
    wait_title(page, "Rollout up to layer 3")


def test_metrics_table_sorts_selects_and_states_its_thresholds(page: Page, api):
    text = text_of(32)
    expected = post(api, "/api/v1/metrics", {"text": text})
    page.goto(link(text, layer=0, head=0))
    rows = page.locator("#metrics-body tr")
    expect(rows).to_have_count(72)
    expect(page.locator("#metrics-thresholds")).to_contain_text("Clark")
    broad = expected["thresholds"]["broad"]["at_least"]
    expect(page.locator("#metrics-thresholds")).to_contain_text(f"{broad:.3f}")
    # the thresholds in words, with the numbers the answer's rules hold: the share, and broad's entropy over ln N
    share = expected["thresholds"]["previous"]["at_least"]
    fraction = broad / math.log(len(expected["tokens"]))
    expect(page.locator("#metrics-thresholds")).to_contain_text(
        f"at least {share:g} of each row's attention on average; broad needs a mean row entropy of at least "
        f"{fraction:.3g} of a uniform row's, ln N")
    assert "_" not in (page.locator("#metrics-thresholds").text_content() or "")  # no variable names

    # Sort by entropy: highest first, then lowest first; the order is the API's.
    entropy = np.array(expected["metrics"]["entropy"])
    page.locator("#metrics-head th[data-column=entropy] button").click()
    expect(page.locator("#metrics-head th[data-column=entropy]")).to_have_attribute("aria-sort", "descending")
    order = page.evaluate("() => Array.from(document.querySelectorAll('#metrics-body tr'), (tr) => [Number(tr.dataset.layer), Number(tr.dataset.head)])")
    values = [entropy[layer][head] for layer, head in order]
    assert values == sorted(values, reverse=True)
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#metrics-body tr td:nth-child(3)'), (td) => Number(td.dataset.value))")
    assert np.abs(np.array(shown) - np.array(values)).max() <= 1e-6
    page.locator("#metrics-head th[data-column=entropy] button").click()
    expect(page.locator("#metrics-head th[data-column=entropy]")).to_have_attribute("aria-sort", "ascending")
    first = page.evaluate("() => { const tr = document.querySelector('#metrics-body tr'); return [Number(tr.dataset.layer), Number(tr.dataset.head)]; }")
    assert entropy[first[0]][first[1]] == entropy.min()

    # The repeated sequence's scores: two columns marked R R, the API's numbers, and a line saying where they come from.
    repeated = expected["repeated"]
    for column in ("previous_token", "induction"):
        cells = page.evaluate(f"""() => Array.from(document.querySelectorAll('#metrics-body tr'), (tr) =>
            [Number(tr.dataset.layer), Number(tr.dataset.head),
             Number(tr.querySelector('td:nth-child(' + (Array.from(document.querySelectorAll('#metrics-head th'))
               .findIndex((th) => th.dataset.column === '{column}') + 1) + ')').dataset.value)])""")
        assert len(cells) == 72
        assert max(abs(value - repeated[column][layer][head]) for layer, head, value in cells) <= 1e-6
    expect(page.locator(".metrics-repeated")).to_have_text(
        f"The two columns marked R R are measured not on your text but on a sequence R R that repeats: R is "
        f"{repeated['half']} tokens drawn at random from the model's vocabulary (seed {repeated['seed']}), then R "
        "comes again. The previous-token score is a head's mean weight on the token right before; the induction "
        "score, over the second R, its mean weight on the token that followed the same token the first time, which "
        "is where an induction head looks.")

    # Labels are the API's.
    layer, head = 2, 4
    row = page.locator(f"#metrics-body tr[data-layer='{layer}'][data-head='{head}']")
    names = {"broad": "broad", "previous": "previous token", "next": "next token", "cls": "[CLS]", "sep": "[SEP]", "self": "self",
             "sink": "sink (first token)"}
    expect(row.locator("td").last).to_have_text(", ".join(names[label] for label in expected["labels"][layer][head]))

    # A click on a row selects that head.
    row.click()
    wait_title(page, f"Layer {layer} · Head {head}")
    assert url_query(page)["layer"] == [str(layer)] and url_query(page)["head"] == [str(head)]
    expect(row).to_have_class(re.compile("is-selected"))

    # Colour the grid by the share to [SEP]: in the URL, the range stated is the API's.
    page.locator("#colour-select").select_option("to_sep")
    expect(page).to_have_url(re.compile(r"colour=to_sep"))
    share = np.array(expected["metrics"]["to_sep"])
    expect(page.locator("#colour-note")).to_contain_text(f"from {share.min():.3f} to {share.max():.3f}")

    # In Chinese the thresholds are stated in Chinese, with the same numbers; only the cited title stays English.
    switch_to_chinese(page)
    expect(page.locator("#metrics-thresholds")).to_contain_text(
        f"阈值由 attnscope 自定：占比类标签要求每行平均至少 {expected['thresholds']['previous']['at_least']:g} 的注意力")
    outside_cite = page.evaluate("""() => Array.from(document.getElementById('metrics-thresholds').childNodes)
        .filter((node) => node.nodeName !== 'CITE').map((node) => node.textContent).join('')""")
    assert "threshold" not in outside_cite and "attention" not in outside_cite, outside_cite
    expect(page.locator(".metrics-repeated")).to_contain_text(f"R 是从模型词表中随机抽取的 {repeated['half']} 个词元")


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_a_shared_scale_and_a_gamma_are_used_and_stated(page: Page, api, n_tokens: int):
    text = text_of(n_tokens)
    page.goto(link(text, layer=1, head=2))
    wait_title(page, "Layer 1 · Head 2")
    own = page.evaluate("() => document.getElementById('heatmap').data[0].zmax")
    weights = np.array(post(api, "/api/v1/attention", {"text": text, "layers": [1], "heads": [2]})["attention"][0][0])
    assert abs(own - weights.max()) <= COMPACT

    page.locator("#scale-select").select_option("shared")
    expect(page).to_have_url(re.compile(r"scale=shared"))
    expect(page.locator("#scale-legend")).to_contain_text("one scale shared by all heads")
    every = all_heads(api, text)
    wait_until(page, "(own) => document.getElementById('heatmap').data[0].zmax !== own", arg=own)
    shared = page.evaluate("() => document.getElementById('heatmap').data[0].zmax")
    assert abs(shared - every.max()) <= COMPACT
    assert shared > own  # the control: this head's maximum is not the largest of all heads

    page.locator("#gamma-select").select_option("0.5")
    expect(page).to_have_url(re.compile(r"gamma=0.5"))
    expect(page.locator("#scale-legend")).to_contain_text("Gamma 0.5")
    scale = page.evaluate("() => document.getElementById('heatmap').data[0].colorscale")
    # the colour at a quarter of the scale is the linear scale's colour at a half
    linear = page.evaluate("async () => (await import('/static/js/figures/colormap.js')).sequential(0.5)")
    at_quarter = next(colour for position, colour in scale if abs(position - 0.25) < 1e-9)
    assert at_quarter == f"rgb({','.join(map(str, linear))})"
    assert np.abs(drawn(page) - weights).max() <= COMPACT  # z stays in weights


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_focusing_a_token_highlights_its_row_and_column(page: Page, api, n_tokens: int):
    text = text_of(n_tokens)
    page.goto(link(text, layer=0, head=1))
    wait_title(page, "Layer 0 · Head 1")
    target = 5
    page.locator(f"#tokens button.chip[data-index='{target}']").click()
    expect(page).to_have_url(re.compile(rf"focus={target}"))
    expect(page.locator(f"#tokens button.chip[data-index='{target}']")).to_have_attribute("aria-pressed", "true")
    wait_until(page,
        """(i) => document.getElementById('heatmap').layout.shapes.filter((s) => s.type === 'rect')
                    .some((s) => s.x0 === i - 0.5 && s.x1 === i + 0.5)""",
        arg=target,
    )
    rects = page.evaluate("() => document.getElementById('heatmap').layout.shapes.filter((s) => s.type === 'rect').map((s) => [s.x0, s.x1, s.y0, s.y1])")
    n = n_tokens
    assert [-0.5, n - 0.5, target - 0.5, target + 0.5] in rects  # its row
    assert [target - 0.5, target + 0.5, -0.5, n - 0.5] in rects  # its column
    assert target in page.evaluate("() => document.getElementById('heatmap').layout.xaxis.tickvals")
    expect(page.locator("#focus-clear")).to_be_visible()

    # A tick label focuses its token too.
    label = page.locator("#heatmap .ytick text").nth(3)
    index = page.evaluate("(el) => Math.round(el.__data__.x)", label.element_handle())
    label.click()
    expect(page).to_have_url(re.compile(rf"focus={index}(&|$)"))

    page.locator("#focus-clear").click()
    expect(page).not_to_have_url(re.compile(r"focus="))
    expect(page.locator("#tokens button.chip[aria-pressed=true]")).to_have_count(0)


def test_zooming_into_512_tokens_labels_every_token_in_view(page: Page, api):
    text = text_of(512)
    tokens = [token["text"] for token in post(api, "/api/v1/attention", {"text": text, "layers": [0], "heads": [0]})["tokens"]]
    page.set_viewport_size({"width": 1920, "height": 1080})  # before the page draws: no redraw for a resize
    page.goto(link(text, layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")
    overview = page.evaluate("() => { const x = document.getElementById('heatmap').layout.xaxis; return [x.tickvals, x.ticktext]; }")
    assert len(overview[0]) < 512  # thinned out when the whole input is in view
    # a thinned axis names each label's position with its token, so that it reads as places in the text
    wait_until(page, "(n) => document.querySelectorAll('#heatmap .xtick text').length === n", arg=len(overview[0]))
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#heatmap .xtick text'), (t) => t.textContent)")
    assert shown == [f"{i} {tokens[i]}" for i in overview[0]]
    page.evaluate("() => window.Plotly.relayout(document.getElementById('heatmap'), {'xaxis.range': [199.5, 239.5], 'yaxis.range': [239.5, 199.5]})")
    wait_until(page, "() => document.getElementById('heatmap').layout.xaxis.tickvals.length === 40")
    ticks = page.evaluate("() => [document.getElementById('heatmap').layout.xaxis.tickvals, document.getElementById('heatmap').layout.yaxis.tickvals]")
    assert ticks == [list(range(200, 240)), list(range(200, 240))]
    wait_until(page, "() => document.querySelector('#heatmap .xtick text').textContent.startsWith('200 ')")
    shown = page.evaluate("() => Array.from(document.querySelectorAll('#heatmap .xtick text'), (t) => t.textContent)")
    assert sorted(shown) == sorted(f"{i} {tokens[i]}" for i in range(200, 240))  # every token in view, named
    # zooming back out thins the labels again
    page.evaluate("() => window.Plotly.relayout(document.getElementById('heatmap'), {'xaxis.autorange': true, 'yaxis.autorange': 'reversed'})")
    wait_until(page, "(n) => document.getElementById('heatmap').layout.xaxis.tickvals.length === n", arg=len(overview[0]))


def test_a_sentence_pair_draws_the_segment_boundary(page: Page, api):
    text, pair = "Where is the station?", "It is next to the old bridge."
    tokens = post(api, "/api/v1/attention", {"text": text, "text_pair": pair, "layers": [0], "heads": [0]})["tokens"]
    first_b = next(i for i, token in enumerate(tokens) if token["segment"] == 1)
    page.goto(f"/?text={quote(text)}&pair={quote(pair)}&layer=1&head=1")
    wait_title(page, "Layer 1 · Head 1")
    lines = page.evaluate("() => document.getElementById('heatmap').layout.shapes.filter((s) => s.type === 'line').map((s) => [s.x0, s.x1, s.y0, s.y1])")
    n, at = len(tokens), first_b - 0.5
    assert [at, at, -0.5, n - 0.5] in lines and [-0.5, n - 0.5, at, at] in lines
    # and on every kind
    page.locator("#kind-select").select_option("rollout")
    wait_title(page, "Rollout up to layer 1")
    lines = page.evaluate("() => document.getElementById('heatmap').layout.shapes.filter((s) => s.type === 'line').map((s) => [s.x0, s.x1])")
    assert [at, at] in lines
    # a single sentence has none
    page.goto(link(text, layer=1, head=1))
    wait_title(page, "Layer 1 · Head 1")
    assert page.evaluate("() => document.getElementById('heatmap').layout.shapes.filter((s) => s.type === 'line').length") == 0


STATIC_IMPORT = re.compile(r"^\s*import\s+(?:[^'\"]*?\s+from\s+)?['\"]([^'\"]+)['\"]", re.MULTILINE)
EXPORT_FROM = re.compile(r"^\s*export\s+[^'\"]*?\s+from\s+['\"]([^'\"]+)['\"]", re.MULTILINE)


def static_closure(entry: Path) -> set[str]:
    """Every module the entry imports statically (import declarations, not import()), as /static/... URLs."""
    seen: set[Path] = set()
    todo = [entry]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        source = module.read_text(encoding="utf-8")
        for spec in STATIC_IMPORT.findall(source) + EXPORT_FROM.findall(source):
            todo.append((module.parent / spec).resolve())
    return {"/" + str(path.relative_to(ROOT)) for path in seen if path != entry}


def test_the_cold_page_preloads_exactly_the_explorers_static_imports(page: Page):
    html = (ROOT / "templates" / "index.html").read_text(encoding="utf-8")
    preloaded = set(re.findall(r'<link rel="modulepreload" href="([^"]+)">', html))
    assert preloaded == static_closure(ROOT / "static" / "js" / "explorer-page.js")
    assert "/static/vendor/plotly.min.js" not in preloaded
    # the page itself: the grid is on the page before plotly.js is even asked for
    page.add_init_script(script=GRID_CLOCK)
    page.goto(link(text_of(32), layer=0, head=0))
    expect(page.locator("#overview button.thumb")).to_have_count(72)
    wait_title(page, "Layer 0 · Head 0")
    times = page.evaluate(
        """() => ({grid: window.__gridAt,
                   plotly: performance.getEntriesByType('resource').find((e) => e.name.endsWith('/static/vendor/plotly.min.js')).startTime})"""
    )
    assert times["grid"] is not None and times["grid"] <= times["plotly"], times


# Records when the overview grid first holds its thumbnails (performance.now(), the clock of resource timings).
GRID_CLOCK = """
window.__gridAt = null;
new MutationObserver((records, observer) => {
  const grid = document.getElementById('overview');
  if (grid && grid.querySelector('button.thumb')) { window.__gridAt = performance.now(); observer.disconnect(); }
}).observe(document, {childList: true, subtree: true});
"""


@pytest.mark.parametrize("params, title, claim", [
    ({"layer": 1, "head": 2}, "Layer 1 · Head 2", "each row sums to 1"),
    ({"layer": 1, "head": 2, "kind": "rollout"}, "Rollout up to layer 1", "each row sums to 1"),
    ({"layer": 1, "head": 2, "kind": "contribution"}, "Layer 1 · Head 2 · contribution ‖αf(x)‖", "rows do not sum to 1"),
    ({"layer": 1, "head": 2, "edit": 0, "edit_t": 3, "diff": 1}, "Layer 1 · Head 2: edited − unedited",
     "so each row sums to 0"),
])
def test_the_rows_caption_is_true_for_the_map_drawn(page: Page, params, title, claim):
    """What the caption under the map says its rows add up to, recomputed from the numbers drawn."""
    page.goto(link(text_of(16), **params))
    wait_title(page, title)
    expect(page.locator("#rows-legend")).to_contain_text(claim)
    sums = drawn(page).sum(axis=1)
    if claim.endswith("sums to 1"):
        assert np.abs(sums - 1).max() <= 16 * COMPACT
    elif claim.endswith("sums to 0"):
        assert np.abs(sums).max() <= 32 * COMPACT
    else:
        assert np.abs(sums - 1).max() > 0.05  # a contribution map: sizes, not shares
