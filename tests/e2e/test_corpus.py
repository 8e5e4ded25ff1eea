"""/corpus in Chromium, on a real server started with `--corpus` over the API tests' index (MiniLM, 60 texts):
the cards hold the tokens, pairs, values and explorer links the API answers, with each caption recomputed here;
a click on a text opens the explorer at that head; the scatter holds every head's means and a click on a point
chooses it; the pattern query in 中文; and the page at 390 px."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import expect

from bench.common import Server
from tests.api.test_corpus_routes import MARKUP, write_index
from tests.e2e.helpers import english_left, switch_to_chinese, wait_until


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory):
    index = write_index(tmp_path_factory.mktemp("corpus-e2e"))
    server = Server(ATTNSCOPE_CORPUS=str(index))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server.base
    finally:
        server.stop()


@pytest.fixture
def live_server(corpus_server) -> str:
    """conftest's browser_log checks that every request went to this server: here, the corpus one."""
    return corpus_server


@pytest.fixture(scope="module")
def corpus_context(open_context, corpus_server):
    context = open_context(corpus_server)
    yield context
    context.close()


@pytest.fixture
def context(corpus_context):
    return corpus_context


@pytest.fixture(scope="module")
def corpus_api(corpus_server):
    with httpx.Client(base_url=corpus_server, trust_env=False, timeout=60) as client:
        yield client


def fixed(value: float) -> str:
    """Two decimals as the page's toFixed(2) writes them (the exact value, halves away from zero)."""
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def shown(tokens: list[str]) -> list[str]:
    """The tokens as the snippet writes them: a word piece ("##ed") without its "##"."""
    return [t[2:] if i and t.startswith("##") and len(t) > 2 else t for i, t in enumerate(tokens)]


CARDS = """() => [...document.querySelectorAll('#corpus-texts > li')].map((li) => {
  const snippet = li.querySelector('a.corpus-snippet');
  const box = snippet.getBoundingClientRect();
  const spans = [...li.querySelectorAll('.corpus-token')];
  const top = (i) => { const r = spans[i].getBoundingClientRect(); return [r.left - box.left + r.width / 2, r.top - box.top]; };
  return {
    id: Number(li.dataset.textId),
    tokens: spans.map((s) => s.textContent),
    queries: spans.filter((s) => s.classList.contains('is-query')).map((s) => Number(s.dataset.index)),
    keys: spans.filter((s) => s.classList.contains('is-key')).map((s) => Number(s.dataset.index)),
    arcs: [...li.querySelectorAll('path.corpus-arc')].map((p) => {
      const q = Number(p.dataset.query), k = Number(p.dataset.key);
      const d = p.getAttribute('d').match(/-?[\\d.]+/g).map(Number);
      return { pair: [q, k], start: d.slice(0, 2), end: d.slice(-2), query: top(q), key: top(k) };
    }),
    value: li.querySelector('.corpus-value').textContent,
    pairs: [...li.querySelectorAll('.corpus-pair')].map((p) => p.textContent),
    href: snippet.getAttribute('href'),
  };
})"""


def test_the_cards_draw_what_the_api_answers(page, corpus_api):
    page.goto("/corpus?layer=3&head=7&by=to_previous&k=100")
    answer = corpus_api.get("/api/v1/corpus/top", params={"layer": 3, "head": 7, "by": "to_previous", "k": 100})
    results = answer.json()["results"]
    expect(page.locator("#corpus-texts > li")).to_have_count(60)
    expect(page.locator("#corpus-caption")).to_have_text(
        f"L3 H7's 60 texts with the highest to_previous: {fixed(results[0]['value'])} to {fixed(results[-1]['value'])}.")
    cards = page.evaluate(CARDS)
    for card, result in zip(cards, results, strict=True):
        assert card["id"] == result["text_id"]
        assert card["tokens"] == shown(result["tokens"])
        assert [a["pair"] for a in card["arcs"]] == [[p["query"], p["key"]] for p in result["pairs"]]
        assert sorted(card["queries"]) == sorted({p["query"] for p in result["pairs"]})
        assert sorted(card["keys"]) == sorted({p["key"] for p in result["pairs"]})
        for arc in card["arcs"]:  # each arc leaves its query token and ends on its key token (a loop: beside it)
            if arc["pair"][0] != arc["pair"][1]:
                assert arc["start"] == pytest.approx(arc["query"], abs=0.2)
                assert arc["end"] == pytest.approx(arc["key"], abs=0.2)
        assert card["value"] == f"to_previous {fixed(result['value'])}"
        assert card["pairs"] == [f"{p['query_token']} → {p['key_token']} {fixed(p['weight'])}" for p in result["pairs"]]
        assert parse_qs(urlsplit(card["href"]).query) == {
            "text": [result["text"]], "model": ["minilm"], "layer": ["3"], "head": ["7"]}
    markup = next(c for c in cards if c["tokens"][:4] == ["[CLS]", "<", "im", "g"])
    assert parse_qs(urlsplit(markup["href"]).query)["text"] == [MARKUP]
    assert page.locator("#corpus-texts img").count() == 0  # the markup line is text (browser_log: no dialog)


def test_a_click_on_a_text_opens_the_explorer_at_that_head(page, corpus_api):
    page.goto("/corpus?layer=3&head=7&by=entropy&lowest=1&k=5")
    first = corpus_api.get("/api/v1/corpus/top", params={
        "layer": 3, "head": 7, "by": "entropy", "k": 5, "lowest": "true"}).json()["results"][0]
    expect(page.locator("#corpus-caption")).to_contain_text("lowest entropy")
    page.locator("#corpus-texts > li").first.locator("a.corpus-snippet").click()
    expect(page).to_have_url(re.compile(r"/\?text=.*&layer=3&head=7$"))
    expect(page.locator("#text-input")).to_have_value(first["text"])
    expect(page.locator("#layer-select")).to_have_value("3")
    expect(page.locator("#head-select")).to_have_value("7")
    expect(page.locator(".labs-nav a[aria-current='page']")).to_have_attribute("href", "/")


def test_the_scatter_holds_every_head_and_a_click_chooses_one(page, corpus_api):
    page.goto("/corpus?layer=1&head=4&x=entropy&y=to_previous")
    heads = corpus_api.get("/api/v1/corpus/heads", params={"x": "entropy", "y": "to_previous"}).json()["points"]
    info = corpus_api.get("/api/v1/corpus").json()
    wait_until(page, "() => document.getElementById('corpus-scatter').data.length === 7")
    traces = page.evaluate("() => document.getElementById('corpus-scatter').data.map((t) => "
                           "({x: t.x, y: t.y, heads: t.customdata, legend: t.showlegend}))")
    drawn = {tuple(h): (x, y) for t in traces if t["legend"] is not False
             for h, x, y in zip(t["heads"], t["x"], t["y"], strict=True)}
    assert drawn == {(p["layer"], p["head"]): (p["x"], p["y"]) for p in heads}
    assert len(drawn) == 72 and traces[-1]["heads"] == [[1, 4]]  # the ring on the chosen head
    chosen = next(p for p in heads if (p["layer"], p["head"]) == (1, 4))
    expect(page.locator("#corpus-scatter-caption")).to_have_text(
        f"72 heads of minilm, each at its mean entropy (x) and mean to_previous (y) over {info['texts']} texts; "
        f"L1 H4, ringed, is at {fixed(chosen['x'])} and {fixed(chosen['y'])}.")
    top = max(heads, key=lambda p: p["y"])  # the highest point: alone at the top of the plot
    page.locator("#corpus-scatter").scroll_into_view_if_needed()
    x, y = page.evaluate("""([x, y]) => {
      const gd = document.getElementById('corpus-scatter'), size = gd._fullLayout._size, box = gd.getBoundingClientRect();
      return [box.left + size.l + gd._fullLayout.xaxis.l2p(x), box.top + size.t + gd._fullLayout.yaxis.l2p(y)];
    }""", [top["x"], top["y"]])
    page.mouse.move(x, y)
    page.mouse.click(x, y)
    expect(page).to_have_url(re.compile(rf"layer={top['layer']}&head={top['head']}&"))
    expect(page.locator("#corpus-layer")).to_have_value(str(top["layer"]))
    expect(page.locator("#corpus-head")).to_have_value(str(top["head"]))
    expect(page.locator("#corpus-caption")).to_contain_text(f"L{top['layer']} H{top['head']}'s 20 texts")


def test_the_pattern_query_in_chinese(page, corpus_api):
    page.goto("/corpus?layer=5&head=3")
    expect(page.locator("#corpus-texts > li")).to_have_count(20)
    switch_to_chinese(page)
    expect(page.locator("#corpus-caption")).to_contain_text("最高的 20 条文本")  # drawn again, in Chinese
    page.locator("#corpus-query").fill("^(she|he|it|her)$")
    page.locator("#corpus-key").fill("^[a-z]+$")
    page.locator("#pattern-form button[type=submit]").click()
    results = corpus_api.get("/api/v1/corpus/pattern", params={
        "layer": 5, "head": 3, "query": "^(she|he|it|her)$", "key": "^[a-z]+$", "k": 20}).json()["results"]
    assert len(results) >= 2
    expect(page.locator("#corpus-caption")).to_have_text(
        f"L5 H3 的某个最强词元对从匹配“^(she|he|it|her)$”的词元指向匹配“^[a-z]+$”的词元的 {len(results)} 条文本，"
        f"按该词元对的权重排序：从 {fixed(results[0]['value'])} 到 {fixed(results[-1]['value'])}。")
    cards = page.evaluate(CARDS)
    assert [c["id"] for c in cards] == [r["text_id"] for r in results]
    assert [c["value"] for c in cards] == [f"权重 {fixed(r['value'])}" for r in results]
    assert [[a["pair"] for a in c["arcs"]] for c in cards] == [
        [[p["query"], p["key"]] for p in r["pairs"]] for r in results]
    wait_until(page, "() => document.getElementById('corpus-scatter').data.length === 7")
    assert english_left(page, skip=".g-xtitle, .g-ytitle") == []  # the axis titles are metric names: data


def test_the_page_at_390_px(page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/corpus?layer=0&head=0&by=entropy&k=100")
    expect(page.locator("#corpus-texts > li")).to_have_count(60)
    wait_until(page, "() => document.getElementById('corpus-scatter').data.length === 7")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    widths = page.evaluate("""() => [...document.querySelectorAll('#corpus-texts > li, #corpus-scatter, form')]
      .map((e) => e.getBoundingClientRect().right)""")
    assert max(widths) <= 390
    lines = page.evaluate("""() => Math.max(...[...document.querySelectorAll('.corpus-line')].map((line) => {
      const tops = new Set([...line.querySelectorAll('.corpus-token')].map((s) => Math.round(s.getBoundingClientRect().top)));
      return tops.size;
    }))""")
    assert lines >= 3  # the long sentence wraps onto several lines
