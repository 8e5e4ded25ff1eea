"""Markup, template syntax and script URLs typed by a user stay text, in real Chromium, on every page.

Each payload goes everywhere a user can put text: the sentence and the second segment (URL and
inputs), the model, layer, head, query and step parameters, the toy example's matrix cells, heads
field and every parameter of its setup, an ignored parameter of /toy, the parameters of /positions,
and the query string and fragment of /docs. After each scenario the page must hold exactly the scripts and the markup elements it ships (no new img, a, svg,
b, br, iframe, ...), no on* attribute, no javascript: URL and no URL off this server; Plotly's
SVG must hold no link and no bold/italic/line-break markup; and what the user typed must show
literally (chips, inputs, options, tick labels, hover text, messages, title and URL). The
autouse `browser_log` fixture (conftest.py) adds: no dialog, no console or page error, no CSP
violation, and every request went to 127.0.0.1.

Exports: the explorer's heatmap has Plotly's modebar with "Download plot as a PNG", its only
export; the explorer's link scenario downloads it and check the PNG and the SVG it is drawn from. The plots
of /steps and /toy are drawn without a modebar (views/figure-grid.js: modeBar false), so those
pages have no export, and /docs has none either.
"""

from __future__ import annotations

import re
import urllib.parse
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from playwright.sync_api import Page, expect

from .helpers import show_step, stage

PAYLOADS = {
    "img-onerror": "<img src=x onerror=alert(1)>",
    "script-breakout": "</script><script>alert(1)</script>",
    "template": "{{7*7}}",
    "js-url": "javascript:alert(1)",
    "link": '<a href="http://example.com/x">link</a>',
    "svg-onload": '"><svg onload=alert(1)>',
    "bold-br": "<b>bold</b><br>",
    "escaped": "&lt;b&gt;",  # must show as the 10 characters &lt;b&gt;, never as <b>
}

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLOTLY_JS = "/static/vendor/plotly.min.js"

# Element kinds a payload could create; outside Plotly's plots the page must hold as many as it ships.
MARKUP = [
    "a", "area", "img", "image", "svg", "iframe", "frame", "object", "embed", "base", "meta", "link",
    "form", "b", "i", "br", "math", "video", "audio", "source", "template", "title",
]

# Everything the invariants look at, read from the page in one go.
INSPECT = """(markup) => {
  // Plotly's plots, and the hidden SVG it measures text in, are Plotly's own.
  const outsidePlotly = (e) => !e.closest('.js-plotly-plot, #js-plotly-tester');
  const urlAttributes = ['href', 'xlink:href', 'src', 'srcset', 'action', 'formaction', 'data', 'poster', 'background'];
  const all = [...document.querySelectorAll('*')];
  const offsite = [], scriptUrls = [];
  for (const element of all) {
    for (const attribute of element.attributes) {
      if (!urlAttributes.includes(attribute.name)) continue;
      const value = attribute.value.trim();
      if (/^\\s*javascript:/i.test(value) || /^\\s*vbscript:/i.test(value)) scriptUrls.push(`${element.tagName}[${attribute.name}=${value}]`);
      let url;
      try { url = new URL(value, document.baseURI); } catch { continue; }
      if (!['data:', 'blob:'].includes(url.protocol) && url.origin !== location.origin) offsite.push(`${element.tagName}[${attribute.name}=${value}]`);
    }
  }
  return {
    title: document.title,
    scripts: [...document.querySelectorAll('script')].map((s) => s.getAttribute('src') || `(inline) ${s.textContent.slice(0, 80)}`),
    markup: Object.fromEntries(markup.map((tag) => [tag, [...document.querySelectorAll(tag)].filter(outsidePlotly).length])),
    onAttributes: all.filter((e) => [...e.attributes].some((a) => a.name.toLowerCase().startsWith('on')))
                     .map((e) => e.outerHTML.slice(0, 120)),
    scriptUrls,
    offsite,
    plotlyLinks: document.querySelectorAll('.main-svg a, #js-plotly-tester a').length,
    // Plotly turns <b>, <i>, <br>, <sup>, <sub> of a label into styled or extra tspans.
    plotlyMarkup: [...document.querySelectorAll('.main-svg tspan, #js-plotly-tester tspan')]
      .filter((t) => /font-weight|font-style|baseline-shift/.test(t.getAttribute('style') || '') || t.classList.contains('line'))
      .map((t) => t.outerHTML.slice(0, 120)),
  };
}"""


# ---- pages as they ship: the baseline every scenario is compared with ------------------------

_shipped: dict[str, dict] = {}


def wait_ready(page: Page, path: str) -> None:
    """Wait until the page's own script has run (and drawn what it draws without input)."""
    if path == "/toy":
        expect(stage(page)).to_have_attribute("data-step", "input")
    elif path == "/docs":
        expect(page.locator(".swagger-ui .opblock").first).to_be_visible()
    elif path.startswith("/positions"):
        expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile(r"^/positions"))
    else:
        expect(page.locator("#model-select option")).not_to_have_count(0)


def shipped(page: Page, path: str) -> dict:
    """What the page holds when opened without parameters (measured once per session)."""
    if path not in _shipped:
        page.goto(path)
        wait_ready(page, path)
        _shipped[path] = page.evaluate(INSPECT, MARKUP)
        assert _shipped[path]["onAttributes"] == [] and _shipped[path]["scriptUrls"] == []
    return _shipped[path]


def assert_inert(page: Page, baseline: dict, where: str) -> None:
    """The invariants every scenario ends with: nothing the user typed became markup, script or a link."""
    now = page.evaluate(INSPECT, MARKUP)
    # the explorer adds plotly.js itself when it first draws a figure (views/plotly-loader.js), early or late
    own = lambda scripts: [src for src in scripts if src != PLOTLY_JS]  # noqa: E731
    assert own(now["scripts"]) == own(baseline["scripts"]), f"{where}: the page runs other scripts than it ships"
    assert now["scripts"].count(PLOTLY_JS) <= 1, f"{where}: plotly.js added twice"
    assert now["markup"] == baseline["markup"], f"{where}: elements were added from user text"
    assert now["onAttributes"] == [], f"{where}: elements with event-handler attributes"
    assert now["scriptUrls"] == [], f"{where}: javascript: URLs"
    assert now["offsite"] == baseline["offsite"], f"{where}: URLs to another host"
    assert not any("example.com" in url for url in now["offsite"]), where
    assert now["plotlyLinks"] == 0, f"{where}: links inside Plotly's SVG"
    assert now["plotlyMarkup"] == [], f"{where}: Plotly parsed markup in a label"
    assert page.locator('img[src="x"], svg[onload], [onerror], [onload]').count() == 0, where


# ---- what the server says (the tests' reference) ---------------------------------------


def attention_tokens(api, text: str, pair: str | None = None) -> list[dict]:
    response = api.post("/api/v1/attention", json={"text": text, "text_pair": pair})
    assert response.status_code == 200, response.text
    return response.json()["tokens"]


def trace_tokens(api, text: str, pair: str | None, layer: int, head: int) -> list[dict]:
    response = api.post("/api/v1/trace", json={"text": text, "text_pair": pair, "layer": layer, "head": head})
    assert response.status_code == 200, response.text
    return response.json()["tokens"]


def assert_tokens_spell(tokens: list[dict], *texts: str) -> None:
    """The word pieces, joined, spell the typed text (lower-cased, without spaces): nothing was evaluated."""
    pieces = "".join(t["text"].removeprefix("##") for t in tokens if not t["special"])
    assert pieces == "".join(re.sub(r"\s+", "", text.lower()) for text in texts)


def toy_refusal(api, **change) -> list[tuple[list[str], str]]:
    """The server's 422 errors (loc, type) for the worked example with one change, as the page would send it."""
    example = api.post("/api/v1/toy", json={}).json()
    d = example["d_model"]
    identity = [[1 if i == j else 0 for j in range(d)] for i in range(d)]
    body = {
        "queries": example["steps"]["input"]["q"],
        "keys": example["steps"]["input"]["k"],
        "values": example["steps"]["input"]["v"],
        "n_heads": example["n_heads"],
        "causal": False,
        "weights": {name: identity for name in "qkvo"},
    }
    for key, value in change.items():
        if key == "cell":
            (row, col), value = value
            body["queries"][row][col] = value
        else:
            body[key] = value
    response = api.post("/api/v1/toy", json=body)
    assert response.status_code == 422, response.text
    return [(error["loc"], error["type"]) for error in response.json()["errors"]]


# ---- reading the page ----------------------------------------------------------------------


def params(page: Page) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query, keep_blank_values=True)


def url(path: str, **query) -> str:
    return f"{path}?{urlencode(query, quote_via=quote)}"


def assert_ticks(page: Page, selector: str, axis: str, labels: list[str]) -> None:
    """The tick labels Plotly drew are the literal labels at the figure's tickvals; where the explorer's map
    leaves some token unlabelled (a long input), each label names the token's position too ("37 animal")."""
    drawn = page.evaluate(
        """([selector, axis]) => { const gd = document.querySelector(selector);
             return {vals: gd.layout[axis + 'axis'].tickvals,
                     texts: [...gd.querySelectorAll(`.${axis}tick text`)].map((t) => t.textContent)}; }""",
        [selector, axis],
    )
    assert drawn["vals"], f"{selector} has no {axis} ticks"
    plain = Counter(labels[v] for v in drawn["vals"])
    positioned = Counter(f"{v} {labels[v]}" for v in drawn["vals"])
    assert Counter(drawn["texts"]) in (plain, positioned)


def hover_cell(page: Page, selector: str, query: int, key: int) -> None:
    """Move the mouse over the heatmap cell (query, key)."""
    point = page.evaluate(
        """([selector, q, k]) => { const gd = document.querySelector(selector), layout = gd._fullLayout;
             const box = gd.getBoundingClientRect();
             return {x: box.left + layout.xaxis._offset + layout.xaxis.l2p(k),
                     y: box.top + layout.yaxis._offset + layout.yaxis.l2p(q)}; }""",
        [selector, query, key],
    )
    page.mouse.move(point["x"], point["y"])


def assert_title_ends_with(page: Page, text: str) -> None:
    expect(page).to_have_title(re.compile(re.escape(text.strip()[:60]) + "$"))


# ---- the explorer (/) -------------------------------------------------------------------------


def assert_explorer_shows(
    page: Page, api, text: str, pair: str | None, layer: int, head: int, bad_indices: list[str] | None = None
) -> list[str]:
    tokens = attention_tokens(api, text, pair)
    labels = [t["text"] for t in tokens]
    assert_tokens_spell(tokens, text, *([pair] if pair else []))
    expect(page.locator("#heatmap .gtitle")).to_have_text(f"Layer {layer} · Head {head}")
    expect(page.locator("#tokens .chip")).to_have_text(labels)
    expect(page.locator("#text-input")).to_have_value(text)
    expect(page.locator("#pair-input")).to_have_value(pair or "")
    assert params(page)["text"] == [text]
    assert params(page).get("pair") == ([pair] if pair else None)
    # A bad index shows the fallback; the URL either says so or keeps what was given (never another number).
    assert params(page)["layer"] in ([str(layer)], bad_indices) and params(page)["head"] in ([str(head)], bad_indices)
    assert_title_ends_with(page, text)
    assert_ticks(page, "#heatmap", "x", labels)
    assert_ticks(page, "#heatmap", "y", labels)
    hover_cell(page, "#heatmap", 1, 2)
    expect(page.locator("#heatmap .hoverlayer .hovertext")).to_contain_text(f"{labels[1]} → {labels[2]}: ")
    # The "Step through this head" link carries the text as a URL parameter, for /steps.
    assert parse_qs(urlsplit(page.locator("#steps-link").get_attribute("href") or "").query)["text"] == [text]
    return labels


def assert_png_export(page: Page, labels: list[str]) -> None:
    """The modebar's only export: a PNG, named after the view, drawn from an SVG without markup."""
    page.locator("#heatmap").hover()
    downloads = page.locator("#heatmap .modebar-btn[data-title^='Download']")
    expect(downloads).to_have_count(1)
    expect(downloads).to_have_attribute("data-title", "Download plot as a PNG")
    with page.expect_download() as info:
        downloads.click()
    download = info.value
    assert download.failure() is None
    # Named after the view, from letters and digits only: no markup or path character of the text gets in.
    assert re.fullmatch(r"attnscope-layer-\d+-head-\d+(-[^\W_]+)*\.png", download.suggested_filename), download.suggested_filename
    assert Path(download.path()).read_bytes()[:8] == PNG_MAGIC

    # The PNG is Plotly's SVG export rasterised: the same SVG holds the labels as text only.
    svg_url = page.evaluate("() => window.Plotly.toImage(document.getElementById('heatmap'), {format: 'svg'})")
    assert svg_url.startswith("data:image/svg+xml,")
    root = ET.fromstring(urllib.parse.unquote(svg_url.split(",", 1)[1]))
    tags = {element.tag.rsplit("}", 1)[-1] for element in root.iter()}
    assert not tags & {"a", "script", "foreignObject", "iframe", "b", "br", "img"}
    assert not [name for element in root.iter() for name in element.attrib if name.rsplit("}", 1)[-1].lower().startswith("on")]
    for element in root.iter():
        for name, value in element.attrib.items():
            if name.rsplit("}", 1)[-1] == "href":
                assert value.startswith("data:image/"), value
    texts = ["".join(element.itertext()) for element in root.iter() if element.tag.rsplit("}", 1)[-1] == "text"]
    positioned = {f"{i} {label}" for i, label in enumerate(labels)}  # a thinned axis names positions too
    assert set(labels[1:4]) <= set(texts) or len(positioned & set(texts)) >= 3  # the tokens' labels, literally


def explorer_link(page: Page, api, payload: str) -> None:
    page.goto(url("/", text=payload, pair=payload, layer=2, head=5))
    labels = assert_explorer_shows(page, api, payload, payload, 2, 5)
    assert_png_export(page, labels)


def explorer_model(page: Page, api, payload: str) -> None:
    detail = api.post("/api/v1/attention", json={"text": payload, "model": payload}).json()["detail"]
    page.goto(url("/", text=payload, model=payload, layer=1, head=1))
    status = page.locator("#status")
    expect(status).to_contain_text(detail)  # the server names the unknown model: literally, after the page's words
    expect(status).to_have_class(re.compile("is-error"))
    assert page.locator("#status *").count() == 0
    expect(page.locator("#text-input")).to_have_value(payload)
    models = [model["id"] for model in api.get("/api/v1/models").json()["models"]]
    expect(page.locator("#model-select option")).to_have_count(len(models))
    assert page.locator("#model-select option").evaluate_all("(os) => os.map((o) => o.value)") == models
    expect(page.locator("#loading")).to_be_hidden()


def explorer_indices(page: Page, api, payload: str) -> None:
    page.goto(url("/", text=payload, layer=payload, head=payload))
    assert_explorer_shows(page, api, payload, None, 0, 0, [payload])  # bad indices fall back to layer 0, head 0
    expect(page.locator("#layer-select")).to_have_value("0")
    expect(page.locator("#head-select")).to_have_value("0")


def explorer_typed(page: Page, api, payload: str) -> None:
    page.goto("/")
    wait_ready(page, "/")
    page.locator("#text-input").fill(payload)
    page.locator("#pair-input").fill(payload)
    page.locator("#text-input").press("Enter")
    assert_explorer_shows(page, api, payload, payload, 0, 0)


# ---- the walkthrough (/steps) -----------------------------------------------------------


def assert_steps_shows(page: Page, api, text: str, pair: str | None, layer: int, head: int, query: int, step: str) -> list[str]:
    tokens = trace_tokens(api, text, pair, layer, head)
    labels = [t["text"] for t in tokens]
    assert_tokens_spell(tokens, text, *([pair] if pair else []))
    expect(stage(page)).to_have_attribute("data-step", step)
    expect(stage(page)).to_have_attribute("data-query", str(query))
    expect(page.locator("#tokens .chip")).to_have_text(labels)
    expect(page.locator("#query-select option")).to_have_text([f"{i} · {label}" for i, label in enumerate(labels)])
    expect(page.locator("#text-input")).to_have_value(text)
    expect(page.locator("#pair-input")).to_have_value(pair or "")
    expect(page.locator("#layer-select")).to_have_value(str(layer))
    expect(page.locator("#head-select")).to_have_value(str(head))
    query_string = params(page)
    assert query_string["text"] == [text] and query_string.get("pair") == ([pair] if pair else None)
    assert query_string["step"] == [step] and query_string["query"] == [str(query)]
    assert_title_ends_with(page, text)
    # The link to the explorer holds the text URL-encoded, to this server.
    link = urlsplit(page.locator("#explorer-link").get_attribute("href"))
    assert (link.scheme, link.netloc, link.path) == ("", "", "/")
    assert parse_qs(link.query)["text"] == [text]
    return labels


def steps_link(page: Page, api, payload: str) -> None:
    page.goto(url("/steps", text=payload, pair=payload, layer=1, head=2, query=3, step=payload))
    labels = assert_steps_shows(page, api, payload, payload, 1, 2, 3, "input")  # an unknown step falls back
    assert_ticks(page, "#plot-input", "y", labels)
    expect(page.locator("#stage-title")).not_to_be_empty()


def steps_query(page: Page, api, payload: str) -> None:
    page.goto(url("/steps", text=payload, layer=0, head=0, query=payload, step="scores"))
    labels = assert_steps_shows(page, api, payload, None, 0, 0, 0, "scores")  # a bad query falls back to 0
    assert_ticks(page, "#plot-scores", "x", labels)
    assert_ticks(page, "#plot-scores", "y", labels)
    hover_cell(page, "#plot-scores", 1, 2)
    expect(page.locator("#plot-scores .hoverlayer .hovertext")).to_contain_text(f"query 1 “{labels[1]}” · key 2 “{labels[2]}”: ")
    # Clicking a token chip makes it the query; the softmax step's explanation quotes it, as text.
    page.locator('#tokens .chip[data-index="1"]').click()
    expect(stage(page)).to_have_attribute("data-query", "1")
    show_step(page, "softmax")
    expect(page.locator("#stage-body")).to_contain_text(f"(“{labels[1]}”)")
    # The token sits in its own span marked as data (translate="no"), holding text only.
    expect(page.locator('#stage-body span[translate="no"]')).to_have_text(labels[1])
    assert page.locator('.stage-head *:not(h2, p, span[translate="no"])').count() == 0
    assert page.locator('.stage-head span[translate="no"] *').count() == 0
    assert params(page)["query"] == ["1"] and params(page)["text"] == [payload]


def steps_window(page: Page, api, payload: str) -> None:
    """A text long enough to be drawn through windows: captions quote the query token as data, as text."""
    text = " ".join([payload] * 12)
    while text[:60].endswith(" "):  # the title holds the first 60 characters, and a title ends without a space
        text = "x" + text
    tokens = trace_tokens(api, text, None, 0, 0)
    assert len(tokens) > 40
    q = 30
    page.goto(url("/steps", text=text, layer=0, head=0, query=q, step="softmax"))
    labels = assert_steps_shows(page, api, text, None, 0, 0, q, "softmax")
    expect(page.locator("#stage-window")).to_be_visible()
    assert_ticks(page, "#plot-softmax", "x", labels)
    assert_ticks(page, "#plot-softmax", "y", labels)
    caption = page.locator('figure:has(#plot-softmax-bars) figcaption span[translate="no"]')
    expect(caption).to_have_text(labels[q])
    assert page.locator("figcaption *:not(span[translate=\"no\"]), figcaption span *").count() == 0
    page.locator("#window-keys-next").click()
    expect(stage(page)).to_have_attribute("data-keys", str(q))
    assert_ticks(page, "#plot-softmax", "x", labels)
    assert params(page)["keys"] == [str(q)] and params(page)["text"] == [text]


# ---- the worked example (/toy) ---------------------------------------------------------


def open_toy(page: Page) -> None:
    page.goto("/toy")
    wait_ready(page, "/toy")
    expect(page.locator('#editor-queries input[data-row="3"][data-col="3"]')).to_have_value("0")


def assert_toy_error(page: Page, message: str) -> None:
    """The page names the field in its own words (from the error's loc and type), as text."""
    error = page.locator("#toy-error")
    expect(error).to_have_text(message)
    expect(error).to_be_visible()
    assert page.locator("#toy-error > :not(li), #toy-error li *").count() == 0
    expect(page.locator("#loading")).to_be_hidden()
    expect(stage(page)).to_have_attribute("data-step", "input")  # the last good result stays
    expect(page.locator("#results")).to_have_class(re.compile("is-stale"))


def toy_cell(page: Page, api, payload: str) -> None:
    assert toy_refusal(api, cell=((1, 2), payload)) == [(["body", "queries", "1", "2"], "float_type")]
    open_toy(page)
    cell = page.locator('#editor-queries input[data-row="1"][data-col="2"]')
    cell.fill(payload)
    assert_toy_error(page, "Queries, row q1, column 2: not a number; type one such as 0.5 or −2")
    expect(cell).to_have_value(payload)
    expect(cell).to_have_attribute("aria-invalid", "true")
    assert payload not in page.url  # text that is not a number stays out of the address


def toy_heads(page: Page, api, payload: str) -> None:
    assert toy_refusal(api, n_heads=payload) == [(["body", "n_heads"], "int_type")]
    open_toy(page)
    page.locator("#toy-heads").fill(payload)
    assert_toy_error(page, "Heads: not a whole number; type one such as 2")
    expect(page.locator("#toy-heads")).to_have_value(payload)
    expect(page.locator("#toy-heads")).to_have_attribute("aria-invalid", "true")


def toy_parameter(page: Page, api, payload: str) -> None:
    page.goto(url("/toy", anything=payload) + "#" + quote(payload))
    wait_ready(page, "/toy")
    expect(page).to_have_title(shipped(page, "/toy")["title"])
    assert payload not in page.content()  # the parameter is not reflected anywhere


def toy_link(page: Page, api, payload: str) -> None:
    """Every parameter of the toy's setup holding the payload: each falls back to the example, said as text."""
    names = ("q", "k", "v", "wq", "wk", "wv", "wo", "heads", "causal", "head", "query", "step")
    page.goto(url("/toy", **dict.fromkeys(names, payload)))
    wait_ready(page, "/toy")
    note = page.locator("#toy-url-note")
    expect(note).to_contain_text("Queries, Keys, Values, W_q, W_k, W_v, W_o, Heads, and Causal mask")
    assert page.locator("#toy-url-note *").count() == 0
    expect(page.locator('#editor-queries input[data-row="3"][data-col="3"]')).to_have_value("0")
    expect(page.locator("#toy-error")).to_be_hidden()
    expect(page).to_have_url(re.compile(r"/toy$"))
    assert payload not in page.content()


# ---- the API docs (/docs) -----------------------------------------------------------------


def docs(page: Page, api, payload: str) -> None:
    page.goto(f"/docs?{quote(payload, safe='')}#{quote(payload, safe='')}")
    wait_ready(page, "/docs")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("attnscope")
    assert payload not in page.content()


# ---- positional encodings (/positions) ----------------------------------------------------


def positions_link(page: Page, api, payload: str) -> None:
    """Every parameter of the page is a number: text in any of them falls back to the default."""
    page.goto(url("/positions", length=payload, d_model=payload, heads=payload, pair=payload) + "#" + quote(payload))
    wait_ready(page, "/positions")
    for name, value in (("length", "64"), ("d-model", "64"), ("heads", "8"), ("pair", "6")):
        expect(page.locator(f"#positions-{name}")).to_have_value(value)
    expect(page).to_have_title(shipped(page, "/positions")["title"])
    assert payload not in page.content()


# ---- the cases: every page × every payload ------------------------------------------------


@dataclass(frozen=True)
class Site:
    path: str  # the page as shipped, which every scenario of it is compared with
    scenarios: tuple[Callable[[Page, object, str], None], ...]
    http_errors: tuple[int, ...] = field(default=())  # statuses the page's own requests get on purpose


# One test per page: every payload's scenarios run one after another in the same browser page.
PAGES = {
    "explorer": Site("/", (explorer_link, explorer_model, explorer_indices, explorer_typed), (404,)),
    "steps": Site("/steps", (steps_link, steps_query, steps_window)),
    "toy": Site("/toy", (toy_parameter, toy_link, toy_cell, toy_heads), (422,)),
    "positions": Site("/positions", (positions_link,)),
    "docs": Site("/docs", (docs,)),
}


def _pages():
    for name, site in PAGES.items():
        marks = [pytest.mark.expect_http_errors(*site.http_errors)] if site.http_errors else []
        yield pytest.param(site, marks=marks, id=name)


@pytest.mark.parametrize("site", list(_pages()))
def test_user_text_stays_text(page: Page, api, site: Site):
    """Every payload through every scenario of one page, in one browser page."""
    baseline = shipped(page, site.path)
    for name, payload in PAYLOADS.items():
        for scenario in site.scenarios:
            where = f"payload {name}, {scenario.__name__}"
            try:
                scenario(page, api, payload)
                assert_inert(page, baseline, where)
            except AssertionError as exc:
                raise AssertionError(f"{where}: {exc}") from exc
