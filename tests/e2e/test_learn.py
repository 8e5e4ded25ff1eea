"""The learning path (/learn) in real Chromium: all seventeen chapters walked with 'next' in English and in 中文
at phone width (nothing English left in 中文, nothing scrolling sideways, no number of the cost table cut in
two), the learner's sentence kept across chapters, progress kept over a reload, each caption's numbers
recomputed here from the API (numpy for the new chapters' arithmetic), each chapter's 'open the full page'
link opening that page at the same state, every page's 'learn about this' link, a chapter that does not
exist answered with the contents (404) in both languages, and the note on tokens MiniLM cannot read."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qs, quote, urlparse

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until

SENTENCE = "My sister gave her old bike to the boy next door because he needed it."
EXAMPLE = "The animal didn't cross the street because it was too tired."  # the default sentence (example.animal)
CHAPTERS = range(1, 18)
CHINESE = "注意力机制让模型学会聚焦重要的信息。"  # most of it is [UNK] to MiniLM


def wait_chapter(page: Page, n: int) -> None:
    """Until chapter n's live view has drawn (its data-drawn names the chapter's URL)."""
    expect(page.locator("#chapter-view")).to_have_attribute("data-drawn", re.compile(rf"^/learn/{n}\?"))


def caption(page: Page) -> str:
    return page.locator("#chapter-caption").inner_text()


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def no_sideways_scroll(page: Page) -> None:
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{widths[0]} px of content in a {widths[1]} px window"


@pytest.mark.parametrize("language", ["en", "zh"])
def test_all_seventeen_chapters_with_next_on_a_phone(page: Page, language: str):
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto("/learn")
    expect(page.locator("#learn-intro")).to_be_visible()
    if language == "zh":
        switch_to_chinese(page)
        assert english_left(page) == []
    no_sideways_scroll(page)
    page.fill("#learn-text", SENTENCE)
    page.locator("#learn-form button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/learn\?text=My\+sister"))
    page.locator("#learn-start").click()
    for n in CHAPTERS:
        expect(page).to_have_url(re.compile(rf"/learn/{n}\?"))
        wait_chapter(page, n)
        expect(page.locator("#chapter")).to_have_attribute("data-chapter", str(n))
        expect(page.locator("#learn-text")).to_have_value(SENTENCE)  # the sentence travels with the learner
        assert query_of(page.url)["text"] == SENTENCE
        assert caption(page).strip(), f"chapter {n} has no caption"
        assert page.locator("#chapter-try li").count() >= 2
        expect(page.locator(f'#learn-toc li[data-chapter="{n}"]')).to_have_class(re.compile("is-seen"))
        no_sideways_scroll(page)
        if language == "zh":
            assert english_left(page) == [], f"chapter {n}"
            assert re.search(r"[\u4e00-\u9fff]", page.title())
            expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
        else:
            assert english_left(page) != [], "the check must see the English page"
        if n == 2:  # the model reads the learner's sentence (chapter 8's caption is recomputed from it below)
            expect(page.locator(".learn-chips")).to_contain_text("sister")
        if n == 11:
            numbers_in_one_line(page)
        page.locator("#chapter-next").click()
    expect(page).to_have_url(re.compile(r"/learn\?text="))
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "17")
    expect(page.locator("#learn-toc li.is-seen")).to_have_count(17)


# The line boxes of each value cell of the cost table: one line each, however narrow the window (the table
# scrolls sideways instead, and says so above itself when it does).
LINE_TOPS = """() => [...document.querySelectorAll('#learn-cost td.learn-number')].map((cell) => {
  const range = document.createRange();
  range.selectNodeContents(cell);
  return new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top))).size;
})"""


def numbers_in_one_line(page: Page) -> None:
    assert page.evaluate(LINE_TOPS) == [1, 1, 1, 1]
    wide = page.evaluate("() => { const w = document.querySelector('.learn-table-wrap'); return w.scrollWidth > w.clientWidth + 1; }")
    if wide:
        expect(page.locator("#learn-cost-scroll")).to_be_visible()
    else:
        expect(page.locator("#learn-cost-scroll")).to_be_hidden()


def test_progress_and_the_sentence_survive_a_reload_and_can_be_forgotten(page: Page):
    page.goto(f"/learn/2?text={quote(SENTENCE)}")
    wait_chapter(page, 2)
    page.goto("/learn/5")  # no text in the URL: the stored sentence comes back
    wait_chapter(page, 5)
    expect(page.locator("#learn-text")).to_have_value(SENTENCE)
    page.goto("/learn")
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "2")
    page.reload()
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "2")
    assert page.locator("#learn-toc li.is-seen").evaluate_all("(items) => items.map((li) => li.dataset.chapter)") == ["2", "5"]
    expect(page.locator("#learn-start")).to_have_attribute("href", re.compile(r"^/learn/1\?"))
    assert page.evaluate("() => JSON.parse(localStorage.getItem('attnscope.learn.seen.12'))") == [2, 5]
    page.locator("#learn-reset").click()
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "0")
    page.reload()
    expect(page.locator("#learn-toc li.is-seen")).to_have_count(0)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def both_units(n: int) -> str:
    """Bytes as one amount in decimal and binary units, three significant digits: "1.28 TB (1.16 TiB)"."""
    def unit(base: int, names: list[str]) -> str:
        i = 0
        while i < len(names) - 1 and n >= base ** (i + 1):
            i += 1
        return f"{n / base**i:.3g} {names[i]}"
    return f"{unit(1000, ['B', 'kB', 'MB', 'GB', 'TB', 'PB'])} ({unit(1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'])})"


def test_chapter_2_caption_is_the_drawn_row(page: Page, api):
    page.goto(f"/learn/2?text={quote(SENTENCE)}&layer=2&head=5&query=3")
    wait_chapter(page, 2)
    answer = api.post("/api/v1/attention", json={"text": SENTENCE, "layers": [2], "heads": [5]}).json()
    row = np.array(answer["attention"][0][0][3])
    tokens = [t["text"] for t in answer["tokens"]]
    top = int(row.argmax())
    assert caption(page) == (f"Layer 2, head 5: “{tokens[3]}” gives {round(row[top], 3):g} of its attention to "
                             f"“{tokens[top]}”, more than to any other token; its {len(tokens)} weights add up to 1.")
    drawn = page.evaluate("() => document.getElementById('learn-plot').data[0].y")
    assert np.abs(np.array(drawn) - row).max() < 1e-4  # the u16 answer: 2 bytes a weight
    page.locator('.learn-chips button[data-index="1"]').click()  # another query token
    expect(page).to_have_url(re.compile(r"query=1"))
    wait_chapter(page, 2)
    assert caption(page).startswith(f"Layer 2, head 5: “{tokens[1]}”")


def test_chapter_3_by_hand_and_the_saturation_numbers(page: Page, api):
    page.goto("/learn/3?head=1&d=1024")
    wait_chapter(page, 3)
    toy = api.post("/api/v1/toy", json={}).json()
    q = np.array(toy["steps"]["input"]["q"], dtype=float)[:, 2:4]  # head 1: columns 2 and 3 (identity weights)
    scores = q @ q.T
    drawn = lambda key: np.array(page.evaluate(f"() => document.getElementById('{key}').data[0].z"))  # noqa: E731
    assert np.allclose(drawn("learn-scores"), scores)
    assert np.allclose(drawn("learn-scaled"), scores / math.sqrt(2))
    assert np.allclose(drawn("learn-weights"), np.array([softmax(r) for r in scores / math.sqrt(2)]))
    assert "√2 ≈ 1.4142" in page.locator("#learn-hand-caption").inner_text()
    # the caption's numbers are the curve's at the chosen width, and √1024 = 32
    figure = page.evaluate("() => { const d = document.getElementById('learn-saturation').data; "
                           "return {x: d[0].x, raw: d[0].y, scaled: d[1].y}; }")
    at = figure["x"].index(1024)
    text = caption(page)
    assert f"unscaled, the largest weight is {round(figure['raw'][at], 3):g};" in text
    assert f"divided by √d it is {round(figure['scaled'][at], 3):g}." in text
    assert text.endswith("close to √d = 32.")
    assert figure["raw"][at] > 0.95 > 0.6 > figure["scaled"][at]  # saturated, and not


def test_chapter_4_hard_rows_are_one_hot(page: Page, api):
    page.goto("/learn/4?variant=hard")
    wait_chapter(page, 4)
    weights = np.array(api.post("/api/v1/toy", json={"variant": "hard"}).json()["steps"]["softmax"][0])
    assert all(sorted(r.tolist()) == [0, 0, 0, 1] for r in weights)  # every row exactly one-hot
    assert caption(page) == (f"With hard weights, all {len(weights)} rows put all their weight on one key: "
                             "exactly 1 there and 0 on every other key.")
    page.locator('#learn-variants button[data-value="dot"]').click()
    wait_chapter(page, 4)
    dot = np.array(api.post("/api/v1/toy", json={"variant": "dot"}).json()["steps"]["softmax"][0])
    assert (np.round(dot, 2) > 0).all()  # no weight reads 0.00: the caption says so, with the largest as drawn
    assert caption(page) == ("With dot weights, no weight reads 0.00: every key gets at least 0.01 of every row. "
                             f"The largest weight reads {dot.max():.2f}, and each row adds up to 1.")


def test_chapter_5_6_7_9_and_11_captions(page: Page, api):
    page.goto("/learn/5?layer=2&head=7")
    wait_chapter(page, 5)
    model = api.get("/api/v1/models").json()["models"][0]
    assert caption(page).startswith(f"Layer 2: {model['n_heads']} heads of width {model['d_head']} each, "
                                    f"12 × 32 = {12 * 32} = d_model ({model['d_model']}).")
    expect(page.locator(".learn-head-plot")).to_have_count(12)

    page.goto("/learn/6?causal=0")
    wait_chapter(page, 6)
    weights = np.array(api.post("/api/v1/toy", json={}).json()["steps"]["softmax"][0])
    above = sum(weights[i, j] for i in range(4) for j in range(4) if j > i) / 4
    assert caption(page) == (f"Without the mask the 6 cells above the diagonal are not 0: on average a row gives "
                             f"{round(above, 3):g} of its weight to later tokens.")
    page.locator('#learn-mask button[data-value="true"]').click()
    wait_chapter(page, 6)
    masked = np.array(api.post("/api/v1/toy", json={"causal": True}).json()["steps"]["softmax"][0])
    assert np.all(np.triu(masked, 1) == 0) and np.allclose(masked.sum(1), 1)
    assert caption(page).startswith("With the mask all 6 weights above the diagonal are 0")

    page.goto("/learn/7?length=16&d_model=16")
    wait_chapter(page, 7)
    table = np.array(api.get("/api/v1/positions", params={"kind": "sinusoidal", "length": 16, "d_model": 16}).json()["matrix"])
    assert caption(page).startswith(f"16 positions × 16 dimensions, every value a sine or a cosine, between "
                                    f"{round(table.min(), 3):g} and {round(table.max(), 3):g}.")

    page.goto("/learn/9")
    wait_chapter(page, 9)
    check = api.post("/api/v1/toy/backward", json={}).json()["check"]
    assert check["max_abs_diff"] <= check["bound"]
    assert str(len(check["compared"])) in caption(page)

    page.goto("/learn/11")
    wait_chapter(page, 11)
    matrix = 100_000**2 * 64 * 2  # B·H·S²·b, the notes' example
    flash = (64 * 100_000 * 64 + 2 * 64 * 100_000) * 2  # (B·H·S·D + 2·B·H·S)·b
    kv = 2 * 100_000 * 64 * 64 * 2  # 2·B·S·G·D·b, G = H, D = 4096 / 64
    assert matrix == 1_280_000_000_000 and both_units(matrix) == "1.28 TB (1.16 TiB)"
    assert caption(page) == (f"At S = 100,000 and H = 64 the attention matrix takes {both_units(matrix)}; "
                             f"FlashAttention works in {both_units(flash)}, {round(matrix / flash):,} times less; "
                             f"the KV cache of these S tokens takes {both_units(kv)}.")
    params = 4 * 4096**2 + 4 * 4096
    expect(page.locator('#learn-cost tr[data-quantity="parameters"]')).to_have_attribute("data-value", str(params))
    expect(page.locator('#learn-cost tr[data-quantity="parameters"] td').last).to_have_text(f"{params:,}")
    for quantity, value in (("attention_matrix_bytes", matrix), ("flash_attention_bytes", flash), ("kv_cache_bytes", kv)):
        expect(page.locator(f'#learn-cost tr[data-quantity="{quantity}"] td').last).to_have_text(
            f"{value:,} bytes = {both_units(value)}")
    # the chapter's text and the contents state the notes' example as the table does: one amount, both units
    text = page.locator("#chapter-text").inner_text()
    assert f"100,000² × 64 × 2 = {matrix:,} bytes = 1.28 TB (1.16 TiB)" in text and f"{matrix / 2**30:.0f} GiB" in text
    assert "about 1.2 TB" not in text
    assert "KV cache" in text and "2·G·D numbers" in text and "H/G times smaller" in text
    expect(page.locator('#learn-toc li[data-chapter="11"]')).to_contain_text("Cost")
    # every symbol of the table's formulas and of the plot's legend is defined under the plot, with its value
    formulas = " ".join(page.locator("#learn-cost .learn-formula").all_inner_texts())
    legend = " ".join(page.evaluate("() => document.getElementById('learn-memory').data.map((d) => d.name)"))
    used = set(re.findall(r"(?<![A-Za-z])[EHGDSBb](?![A-Za-z])", f"{formulas} {legend}")) | {"O, m, ℓ", "A, K, V"}
    assert re.search(r"matrix A\b", legend) and "K and V" in legend and "O, m, ℓ" in legend  # the legend's other symbols
    defined = dict(zip(page.locator("#learn-symbols dt").all_inner_texts(),
                       page.locator("#learn-symbols dd").all_inner_texts(), strict=True))
    assert used <= set(defined), used - set(defined)
    assert "64" in defined["G"] and "64" in defined["D"] and "100,000" in defined["S"]
    page.locator('#learn-S button[data-value="10000"]').click()
    wait_chapter(page, 11)
    expect(page.locator('#learn-cost tr[data-quantity="attention_matrix_bytes"]')).to_have_attribute(
        "data-value", str(10_000**2 * 64 * 2))


def test_chapter_8_counts_the_heads_and_measures_it_to_animal(page: Page, api):
    page.goto(f"/learn/8?text={quote(SENTENCE)}&layer=1&head=4")
    wait_chapter(page, 8)
    metrics = api.post("/api/v1/metrics", json={"text": SENTENCE}).json()["metrics"]
    heavy = int(((np.array(metrics["to_cls"]) + np.array(metrics["to_sep"])) > 0.5).sum())
    answer = api.post("/api/v1/attention", json={"text": SENTENCE, "layers": [1], "heads": [4]}).json()
    special = np.array([t["special"] for t in answer["tokens"]])
    weights = np.array(answer["attention"][0][0])
    contributions = np.array(api.post("/api/v1/contributions", json={"text": SENTENCE, "layers": [1], "heads": [4]})
                             .json()["contributions"][0][0])
    weight = (weights[:, special].sum(1) / weights.sum(1)).mean()
    contribution = (contributions[:, special].sum(1) / contributions.sum(1)).mean()
    assert caption(page) == (f"On your sentence {heavy} of the 72 heads give more than half of their attention to "
                             f"[CLS] and [SEP]. Layer 1, head 4: they get {100 * weight:.1f}% of its weight and "
                             f"{100 * contribution:.1f}% of its contributions.")
    # the 'it → animal' head on the notes' example
    example = api.post("/api/v1/attention", json={"text": EXAMPLE, "layers": [3], "heads": [1]}).json()
    tokens = [t["text"] for t in example["tokens"]]
    assert tokens[10] == "it"
    row = np.array(example["attention"][0][0][10])
    assert tokens[int(row.argmax())] == "animal"
    expect(page.locator("#learn-it-caption")).to_have_text(
        f"Layer 3, head 1: “it” gives {round(row.max(), 3):g} of its attention to “animal”.")


OPEN = {  # chapter URL -> (the full page's path and query it opens, a condition that it has drawn that state)
    2: (f"/learn/2?text={quote(SENTENCE)}&layer=2&head=5&query=4",
        ("/", {"text": SENTENCE, "layer": "2", "head": "5", "query": "4"}), ("#heatmap .gtitle", "Layer 2 · Head 5")),
    3: ("/learn/3?head=1", ("/toy", {"head": "1", "step": "scale"}), ("#stage", "scale")),
    4: ("/learn/4?variant=gumbel&temperature=0.1&straight=1&seed=2",
        ("/toy", {"variant": "gumbel", "temperature": "0.1", "seed": "2", "straight_through": "1", "step": "softmax"}),
        ("#stage", "softmax")),
    5: (f"/learn/5?text={quote(SENTENCE)}&layer=5&head=3",
        ("/", {"text": SENTENCE, "layer": "5", "head": "3"}), ("#heatmap .gtitle", "Layer 5 · Head 3")),
    6: ("/learn/6", ("/toy", {"causal": "1", "step": "mask"}), ("#stage", "mask")),
    7: ("/learn/7?length=128&d_model=16", ("/positions", {"length": "128", "d_model": "16"}), ("#results", "/positions?length=128&d_model=16")),
    8: (f"/learn/8?text={quote(SENTENCE)}&layer=4&head=2&query=3",
        ("/steps", {"text": SENTENCE, "layer": "4", "head": "2", "query": "3"}), ("#stage", None)),
    9: ("/learn/9", ("/toy", {"backward": "1", "step": "softmax"}), ("#backward-panel", "false")),
    11: ("/learn/11?d_model=512&n_heads=8&seq_len=10000",
         ("/cost", {"d_model": "512", "n_heads": "8", "seq_len": "10000", "bytes": "2"}), ("#results", "/cost?seq_len=10000&bytes=2")),
    13: (f"/learn/13?text={quote(SENTENCE)}&layer=2&query=3",
         ("/steps", {"text": SENTENCE, "layer": "2", "head": "0", "query": "3", "step": "add_1"}), ("#stage", "add_1")),
}


def test_the_sequence_chapter_opens_the_page_at_its_distance(page: Page):
    """Chapter 14 (RNN, convolution, attention): its link opens /sequence with the chapter's two positions."""
    page.goto("/learn/14?distance=63")
    wait_chapter(page, 14)
    page.locator('#chapter-links a[data-open="0"]').click()
    expect(page).to_have_url(re.compile(r"^[^?]*/sequence\?"))
    assert {name: query_of(page.url).get(name) for name in ("n", "i", "j")} == {"n": "64", "i": "63", "j": "0"}
    expect(page.locator("#seq-j")).to_have_value("0")


@pytest.mark.parametrize("n", list(OPEN))
def test_open_the_full_page_at_the_same_state(page: Page, n: int):
    start, (path, params), (selector, shown) = OPEN[n]
    page.goto(start)
    wait_chapter(page, n)
    page.locator('#chapter-links a[data-open="0"]').click()
    expect(page).to_have_url(re.compile(rf"^[^?]*{re.escape(path)}\?"))
    assert urlparse(page.url).path == path
    found = query_of(page.url)
    assert {name: found.get(name) for name in params} == params
    # /steps writes the step it shows into its URL once drawn (history.replaceState): the only name a page may add
    assert set(found) - set(params) <= {"step"}, found
    if selector == "#heatmap .gtitle":
        expect(page.locator(selector)).to_have_text(shown)
    elif selector == "#stage":
        expect(page.locator(selector)).to_have_attribute("data-step", shown or re.compile(r"\w+"))
    elif selector == "#backward-panel":
        expect(page.locator(selector)).to_have_attribute("aria-busy", shown)
    else:
        expect(page.locator(selector)).to_have_attribute("data-drawn", re.compile("^" + re.escape(shown)))
    if n == 4:
        expect(page.locator("#toy-variant")).to_have_value("gumbel")
    if n == 6:
        expect(page.locator("#toy-causal")).to_be_checked()
    if n == 8:
        expect(page.locator("#layer-select")).to_have_value("4")
        expect(page.locator("#head-select")).to_have_value("2")
        expect(page.locator("#query-select")).to_have_value("3")


ABOUT = {"/": 8, f"/steps?text={quote(SENTENCE)}": 8, "/compare": 8, "/toy": 3, "/positions": 7, "/iris": 9, "/cost": 11}


@pytest.mark.parametrize("path", list(ABOUT))
def test_every_page_links_to_its_chapter(page: Page, path: str):
    page.goto(path)
    link = page.locator("#learn-about")
    expect(link).to_have_text("Learn about this")
    link.click()
    expect(page).to_have_url(re.compile(rf"/learn/{ABOUT[path]}$"))
    wait_chapter(page, ABOUT[path])


def test_the_api_docs_link_to_the_path_and_the_nav_has_it_in_both_languages(page: Page):
    page.goto("/docs")
    expect(page.locator("#learn-about")).to_have_attribute("href", "/learn")
    expect(page.locator(".site-nav a[href='/learn']")).to_have_text("Learn")
    page.locator(".site-nav a[href='/learn']").click()
    expect(page.locator(".site-nav a[href='/learn']")).to_have_attribute("aria-current", "page")
    switch_to_chinese(page)
    expect(page.locator(".site-nav a[href='/learn']")).to_have_text("学习")
    expect(page.locator("#learn-intro h1")).to_have_text("注意力，一次讲一个概念")


def test_a_chapter_at_the_token_limit(page: Page, api):
    long = " ".join(["word"] * 510)  # 510 words + [CLS] + [SEP] = 512 tokens, MiniLM's limit
    assert len(api.post("/api/v1/attention", json={"text": long, "layers": [0], "heads": [0]}).json()["tokens"]) == 512
    page.goto(f"/learn/2?text={quote(long)}&query=300")
    wait_chapter(page, 2)
    assert page.evaluate("() => document.getElementById('learn-plot').data[0].y.length") == 512
    assert "its 512 weights add up to 1." in caption(page)
    wait_until(page, "() => document.querySelectorAll('.learn-chips button').length === 512")


NUMBER = r"−?-?\d+(?:\.\d+)?(?:e-?\d+)?"


def numbers(text: str) -> list[float]:
    return [float(x.replace("−", "-")) for x in re.findall(NUMBER, text)]


def test_the_new_chapters_numbers(page: Page, api):
    """Chapters 1, 10 and 12: every number their captions state, recomputed here with numpy from the API."""
    # 1. Bahdanau's additive attention on the worked example: e = vᵀ tanh(W s + U h), α = softmax(e), c = Σ α h
    page.goto("/learn/1?head=1&step=3")
    wait_chapter(page, 1)
    rows = api.post("/api/v1/toy", json={}).json()["steps"]["input"]["q"]
    answer = api.post("/api/v1/toy", json={"variant": "additive", "queries": rows}).json()
    W, U, v = (np.array(answer["additive"][name][1]) for name in ("w_q", "w_k", "v"))
    h = np.array(rows, dtype=float)[:, 2:4]  # head 1 of the identity projections: columns 2 and 3
    e = np.array([[v @ np.tanh(s @ W + hj @ U) for hj in h] for s in h])
    alpha = np.array([softmax(r) for r in e])
    c = alpha @ h
    assert np.allclose(drawn_z(page, "learn-additive-e"), e) and np.allclose(drawn_z(page, "learn-additive-c"), c)
    spread = (c.max(0) - c.min(0)).max()
    g = lambda xs: ", ".join(f"{round(x, 3):g}" for x in xs)  # noqa: E731
    assert caption(page) == (
        f"Head 1, step s3: the scores e = ({g(e[3])}) become the weights α = ({g(alpha[3])}), the largest on "
        f"h{int(alpha[3].argmax())}, and the step reads c3 = ({g(c[3])}). Each of the 4 steps reads a context of its "
        f"own (two of them differ by as much as {round(spread, 3):g} in one coordinate); without attention, every "
        "step would read one and the same vector.")
    assert spread > 0  # the steps' contexts do differ
    expect(page.locator('#chapter-links a[data-open="0"]')).to_have_attribute("href", "/seq2seq")
    toy = query_of(page.locator('#chapter-links a[data-open="1"]').get_attribute("href"))  # the same setup on /toy
    assert toy == {"variant": "additive", "v": ";".join(",".join(f"{x:g}" for x in r) for r in rows), "head": "1",
                   "query": "3", "step": "scores"}

    # 10. The sentence written twice: every head's previous-token, duplicate-token and induction score
    page.goto(f"/learn/10?text={quote(SENTENCE)}")
    wait_chapter(page, 10)
    twice = api.post("/api/v1/attention", json={"text": f"{SENTENCE} {SENTENCE}"}).json()
    A = np.array(twice["attention"])  # (layer, head, query, key)
    n = A.shape[-1]
    half = (n - 2) // 2
    texts = [t["text"] for t in twice["tokens"]]
    assert texts[1:1 + half] == texts[1 + half:1 + 2 * half]
    after, second = np.arange(2, 1 + 2 * half), np.arange(1 + half, 1 + 2 * half)
    scores = {"previous": A[:, :, after, after - 1].mean(-1), "duplicate": A[:, :, second, second - half].mean(-1),
              "induction": A[:, :, second, second - half + 1].mean(-1)}
    for kind, grid in scores.items():
        assert np.abs(np.array(page.evaluate(f"() => document.getElementById('learn-induction-{kind}').data[0].z"))
                      - grid).max() < 1e-4  # the page reads two bytes a weight
    best = {kind: np.unravel_index(grid.argmax(), grid.shape) for kind, grid in scores.items()}
    text = caption(page)
    assert text.startswith(f"Written twice, the text is {n} tokens, the copy starting at position {1 + half}. "
                           f"Previous token: layer {best['previous'][0]}, head {best['previous'][1]} puts ")
    said = numbers(text)
    top = scores["induction"].max()
    expected = [n, 1 + half, *best["previous"], scores["previous"].max(), *best["duplicate"], scores["duplicate"].max()]
    if top >= 0.6:
        expected += [*best["induction"], top, 1 / n, 0.6]
    else:
        expected += [top, *best["induction"], 1 / n, 0.6]
    assert np.allclose(said[:len(expected)], expected, atol=6e-4), (said, expected)
    assert ("no head reaches the 0.6" in text) == (top < 0.6)
    # the map drawn is the strongest induction head's, the copy's start marked
    layer, head = best["induction"]
    assert np.abs(np.array(page.evaluate("() => document.getElementById('learn-induction-map').data[0].z"))
                  - A[layer, head]).max() < 1e-4

    # 12. Linear attention's state and FlashAttention's tiles, head 0 of the worked example
    page.goto("/learn/12?block=1")
    wait_chapter(page, 12)
    linear = api.post("/api/v1/toy", json={"variant": "linear"}).json()
    soft = api.post("/api/v1/toy", json={}).json()
    flash = api.post("/api/v1/flash", json={"block_rows": 1, "block_cols": 1}).json()
    q, k, vv = (np.array(linear["steps"]["split"][m][0]) for m in "qkv")
    phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # noqa: E731
    state, normaliser = phi(k).T @ vv, phi(k).sum(0)
    cheap = (phi(q) @ state) / (phi(q) @ normaliser)[:, None]
    assert np.allclose(drawn_z(page, "learn-fast-state"), state)
    lin_out, soft_out = np.array(linear["steps"]["weighted_sum"][0]), np.array(soft["steps"]["weighted_sum"][0])
    weights_diff = np.abs(np.array(linear["steps"]["softmax"][0]) - np.array(soft["steps"]["softmax"][0])).max()
    said = numbers(caption(page))
    # d_keys × d_values and Σφ(K)'s d_keys; the N × N route's difference; the weights' and the outputs' differences
    # from softmax's; br × bc, the tiles, the scores held and the whole matrix's; FlashAttention's difference
    assert said[:3] == [2, 2, 2] and len(said) == 12
    assert said[3] < 1e-12 and np.abs(cheap - lin_out).max() < 1e-12  # the fixed-size state gives the same outputs
    assert np.allclose(said[4:6], [weights_diff, np.abs(lin_out - soft_out).max()], atol=6e-4)
    assert said[6:11] == [1, 1, len(flash["tiles"]), 1, 16] and len(flash["tiles"]) == 16
    diff = flash["max_abs_diff"]
    assert caption(page).endswith(f"within {'0' if diff == 0 else f'{diff:.1e}'}.")
    assert np.array_equal(drawn_z(page, "learn-fast-tiles"), np.arange(1, 17).reshape(4, 4))


def drawn_z(page: Page, element: str) -> np.ndarray:
    return np.array(page.evaluate(f"() => document.getElementById('{element}').data[0].z"), dtype=float)


def test_the_rope_link_opens_the_step_where_q_and_k_are_turned(page: Page):
    page.goto("/learn/7")
    wait_chapter(page, 7)
    page.locator('#chapter-links a[data-open="2"]').click()
    expect(page).to_have_url(re.compile(r"/toy\?"))
    assert query_of(page.url) == {"positions": "rope", "step": "split"}
    expect(page.locator("#stage")).to_have_attribute("data-step", "split")
    expect(page.locator("#stage-title")).to_contain_text("rotate (RoPE)")
    expect(page.locator("#stage-body")).to_contain_text("RoPE then turns each pair")


@pytest.mark.expect_http_errors(404)
@pytest.mark.parametrize(("path", "language"), [("/learn/18", "en"), ("/learn/abc?lang=zh", "zh")])
def test_a_chapter_that_does_not_exist_is_the_contents_answered_404(page: Page, path: str, language: str):
    response = page.goto(path)
    assert response is not None and response.status == 404
    note = page.locator("#learn-missing")
    expect(note).to_be_visible()
    expect(note).to_have_text("This address names no chapter: the path has chapters 1 to 17, listed below."
                              if language == "en" else "这个地址没有对应的章节：学习路径共有第 1 到第 17 章，都列在下面。")
    expect(page.locator("#learn-overview li")).to_have_count(17)
    expect(page.locator("#learn-toc li")).to_have_count(17)
    expect(page.locator("#chapter")).to_be_hidden()
    body = page.locator("body").inner_text()
    assert '"detail"' not in body and "Input should be" not in body
    if language == "zh":
        assert english_left(page) == []
        assert re.search(r"[\u4e00-\u9fff]", page.title())
    page.locator('#learn-overview li[data-chapter="10"] a').click()
    wait_chapter(page, 10)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_unknown_tokens_are_noted_and_a_tip_names_only_a_token_the_sentence_has(page: Page, api, language: str):
    page.goto(f"/learn/2?text={quote(CHINESE)}&lang={language}")
    wait_chapter(page, 2)
    tokens = api.post("/api/v1/attention", json={"text": CHINESE, "layers": [0], "heads": [0]}).json()["tokens"]
    unknown = [t for t in tokens if t["unknown"]]
    characters = sum(len([c for c in t["display"] if not c.isspace()]) for t in unknown)
    assert len(unknown) > 0
    note = page.locator("#chapter-note")
    expect(note).to_be_visible()
    if language == "en":
        expect(note).to_contain_text(f"{len(unknown)} of the {len(tokens)} tokens are [UNK]: the model has no entry "
                                     f"for {characters} characters")
    else:
        expect(note).to_contain_text(f"{len(tokens)} 个词元中有 {len(unknown)} 个是 [UNK]：模型的词表里没有这段文字中的 "
                                     f"{characters} 个字符")
    expect(page.locator("#chapter-try li").first).to_be_visible()
    expect(page.locator('#chapter-try li[data-tip="learn.c1.try1"]')).to_have_count(0)  # no "it" to pick
    # the default sentence has "it": the tip is there, and no note
    page.goto(f"/learn/2?text={quote(EXAMPLE)}&lang={language}")
    wait_chapter(page, 2)
    expect(page.locator('#chapter-try li[data-tip="learn.c1.try1"]')).to_contain_text("it")
    expect(note).to_be_hidden()


def test_the_hard_attention_chapter_says_what_its_bars_show(page: Page):
    """Chapter 16's caption recomputed with numpy from the bars drawn: soft attention's weights, the relaxed sample
    at the chosen τ and the one-hot pick, which is the largest entry of log p + g."""
    page.goto("/learn/16?tau=0.5")
    wait_chapter(page, 16)
    bars = page.evaluate("document.getElementById('learn-glimpse-weights').data.map((trace) => trace.y)")
    p, relaxed, hard = (np.array(y) for y in bars)
    assert np.isclose(p.sum(), 1) and np.isclose(relaxed.sum(), 1) and hard.sum() == 1
    pick, likeliest = int(np.argmax(hard)), int(np.argmax(p))
    # the relaxed sample at τ is softmax((log p + g)/τ): its logarithm times τ is log p + g up to a constant
    noisy = 0.5 * np.log(relaxed)
    assert int(np.argmax(noisy)) == pick and pick != likeliest
    expect(page.locator("#chapter-caption")).to_have_text(
        f"For this draw of the noise the largest entry of log p + g is cell {pick + 1}, so the hard glimpse (and "
        f"straight-through's forward pass) takes cell {pick + 1} alone, although soft attention's largest weight, "
        f"{float(f'{p[likeliest]:.2f}'):g}, is on cell {likeliest + 1} and cell {pick + 1} gets "
        f"{float(f'{p[pick]:.2f}'):g}. At τ = 0.5 the relaxed sample gives cell {pick + 1} "
        f"{float(f'{relaxed[pick]:.2f}'):g}: the smaller τ, the closer it comes to the one-hot pick; the larger, "
        "the closer to equal weights.")
    expect(page.locator('#chapter-links a[data-open="0"]')).to_have_attribute("href", "/glimpse")
