"""The learning path (/learn) in real Chromium: all nine chapters walked with 'next' in English and in 中文
at phone width (nothing English left in 中文, nothing scrolling sideways), the learner's sentence kept across
chapters, progress kept over a reload, each caption's numbers recomputed here from the API, each chapter's
'open the full page' link opening that page at the same state, and every page's 'learn about this' link."""

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
CHAPTERS = range(1, 10)


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
def test_all_nine_chapters_with_next_on_a_phone(page: Page, language: str):
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
        if n == 1:  # the model reads the learner's sentence (chapter 7's caption is recomputed from it below)
            expect(page.locator(".learn-chips")).to_contain_text("sister")
        page.locator("#chapter-next").click()
    expect(page).to_have_url(re.compile(r"/learn\?text="))
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "9")
    expect(page.locator("#learn-toc li.is-seen")).to_have_count(9)


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
    assert page.evaluate("() => JSON.parse(localStorage.getItem('attnscope.learn.seen'))") == [2, 5]
    page.locator("#learn-reset").click()
    expect(page.locator("#learn-progress")).to_have_attribute("data-seen", "0")
    page.reload()
    expect(page.locator("#learn-toc li.is-seen")).to_have_count(0)


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def test_chapter_1_caption_is_the_drawn_row(page: Page, api):
    page.goto(f"/learn/1?text={quote(SENTENCE)}&layer=2&head=5&query=3")
    wait_chapter(page, 1)
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
    wait_chapter(page, 1)
    assert caption(page).startswith(f"Layer 2, head 5: “{tokens[1]}”")


def test_chapter_2_by_hand_and_the_saturation_numbers(page: Page, api):
    page.goto("/learn/2?head=1&d=1024")
    wait_chapter(page, 2)
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


def test_chapter_3_hard_rows_are_one_hot(page: Page, api):
    page.goto("/learn/3?variant=hard")
    wait_chapter(page, 3)
    weights = np.array(api.post("/api/v1/toy", json={"variant": "hard"}).json()["steps"]["softmax"][0])
    one_hot = int(sum(1 for r in weights if sorted(r.tolist()) == [0, 0, 0, 1]))
    assert caption(page) == f"With hard weights, {one_hot} of the 4 rows put all their weight on one key."
    page.locator('#learn-variants button[data-value="dot"]').click()
    wait_chapter(page, 3)
    dot = np.array(api.post("/api/v1/toy", json={"variant": "dot"}).json()["steps"]["softmax"][0])
    assert caption(page) == (f"With dot weights, every key gets some weight; the largest single weight is "
                             f"{round(dot.max(), 3):g}, and each row adds up to 1.")


def test_chapter_4_5_6_8_and_9_captions(page: Page, api):
    page.goto("/learn/4?layer=2&head=7")
    wait_chapter(page, 4)
    model = api.get("/api/v1/models").json()["models"][0]
    assert caption(page).startswith(f"Layer 2: {model['n_heads']} heads of width {model['d_head']} each, "
                                    f"12 × 32 = {12 * 32} = d_model ({model['d_model']}).")
    expect(page.locator(".learn-head-plot")).to_have_count(12)

    page.goto("/learn/5?causal=0")
    wait_chapter(page, 5)
    weights = np.array(api.post("/api/v1/toy", json={}).json()["steps"]["softmax"][0])
    above = sum(weights[i, j] for i in range(4) for j in range(4) if j > i) / 4
    assert caption(page) == (f"Without the mask the 6 cells above the diagonal are not 0: on average a row gives "
                             f"{round(above, 3):g} of its weight to later tokens.")
    page.locator('#learn-mask button[data-value="true"]').click()
    wait_chapter(page, 5)
    masked = np.array(api.post("/api/v1/toy", json={"causal": True}).json()["steps"]["softmax"][0])
    assert np.all(np.triu(masked, 1) == 0) and np.allclose(masked.sum(1), 1)
    assert caption(page).startswith("With the mask all 6 weights above the diagonal are 0")

    page.goto("/learn/6?length=16&d_model=16")
    wait_chapter(page, 6)
    table = np.array(api.get("/api/v1/positions", params={"kind": "sinusoidal", "length": 16, "d_model": 16}).json()["matrix"])
    assert caption(page).startswith(f"16 positions × 16 dimensions, every value a sine or a cosine, between "
                                    f"{round(table.min(), 3):g} and {round(table.max(), 3):g}.")

    page.goto("/learn/8")
    wait_chapter(page, 8)
    check = api.post("/api/v1/toy/backward", json={}).json()["check"]
    assert check["max_abs_diff"] <= check["bound"]
    assert str(len(check["compared"])) in caption(page)

    page.goto("/learn/9")
    wait_chapter(page, 9)
    matrix = 100_000**2 * 64 * 2  # B·H·S²·b, the notes' example
    flash = (64 * 100_000 * 64 + 2 * 64 * 100_000) * 2  # (B·H·S·D + 2·B·H·S)·b
    assert matrix == 1_280_000_000_000 and f"{matrix / 2**30:.2f}" == "1192.09"
    assert caption(page) == (f"At S = 100,000 and H = 64 the attention matrix takes 1.28 TB (1192.09 GiB); "
                             f"FlashAttention works in {flash / 1e6:.0f} MB, {round(matrix / flash):,} times less.")
    params = 4 * 4096**2 + 4 * 4096
    expect(page.locator('#learn-cost tr[data-quantity="parameters"]')).to_have_attribute("data-value", str(params))
    expect(page.locator('#learn-cost tr[data-quantity="parameters"] td').last).to_have_text(f"{params:,}")
    # the chapter's text states the same numbers
    text = page.locator("#chapter-text").inner_text()
    assert "100,000² × 64 × 2 = 1.28 × 10¹² bytes, about 1.2 TB" in text and "1,192 GiB" in text
    page.locator('#learn-S button[data-value="10000"]').click()
    wait_chapter(page, 9)
    expect(page.locator('#learn-cost tr[data-quantity="attention_matrix_bytes"]')).to_have_attribute(
        "data-value", str(10_000**2 * 64 * 2))


def test_chapter_7_counts_the_heads_and_measures_it_to_animal(page: Page, api):
    page.goto(f"/learn/7?text={quote(SENTENCE)}&layer=1&head=4")
    wait_chapter(page, 7)
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
    1: (f"/learn/1?text={quote(SENTENCE)}&layer=2&head=5&query=4",
        ("/", {"text": SENTENCE, "layer": "2", "head": "5", "query": "4"}), ("#heatmap .gtitle", "Layer 2 · Head 5")),
    2: ("/learn/2?head=1", ("/toy", {"head": "1", "step": "scale"}), ("#stage", "scale")),
    3: ("/learn/3?variant=gumbel&temperature=0.1&straight=1&seed=2",
        ("/toy", {"variant": "gumbel", "temperature": "0.1", "seed": "2", "straight_through": "1", "step": "softmax"}),
        ("#stage", "softmax")),
    4: (f"/learn/4?text={quote(SENTENCE)}&layer=5&head=3",
        ("/", {"text": SENTENCE, "layer": "5", "head": "3"}), ("#heatmap .gtitle", "Layer 5 · Head 3")),
    5: ("/learn/5", ("/toy", {"causal": "1", "step": "mask"}), ("#stage", "mask")),
    6: ("/learn/6?length=128&d_model=16", ("/positions", {"length": "128", "d_model": "16"}), ("#results", "/positions?length=128&d_model=16")),
    7: (f"/learn/7?text={quote(SENTENCE)}&layer=4&head=2&query=3",
        ("/steps", {"text": SENTENCE, "layer": "4", "head": "2", "query": "3"}), ("#stage", None)),
    8: ("/learn/8", ("/toy", {"backward": "1", "step": "softmax"}), ("#backward-panel", "false")),
    9: ("/learn/9?d_model=512&n_heads=8&seq_len=10000",
        ("/cost", {"d_model": "512", "n_heads": "8", "seq_len": "10000", "bytes": "2"}), ("#results", "/cost?seq_len=10000&bytes=2")),
}


@pytest.mark.parametrize("n", list(OPEN))
def test_open_the_full_page_at_the_same_state(page: Page, n: int):
    start, (path, params), (selector, shown) = OPEN[n]
    page.goto(start)
    wait_chapter(page, n)
    page.locator('#chapter-links a[data-open="0"]').click()
    expect(page).to_have_url(re.compile(rf"^[^?]*{re.escape(path)}\?"))
    assert urlparse(page.url).path == path
    assert query_of(page.url) == params
    if selector == "#heatmap .gtitle":
        expect(page.locator(selector)).to_have_text(shown)
    elif selector == "#stage":
        expect(page.locator(selector)).to_have_attribute("data-step", shown or re.compile(r"\w+"))
    elif selector == "#backward-panel":
        expect(page.locator(selector)).to_have_attribute("aria-busy", shown)
    else:
        expect(page.locator(selector)).to_have_attribute("data-drawn", re.compile("^" + re.escape(shown)))
    if n == 3:
        expect(page.locator("#toy-variant")).to_have_value("gumbel")
    if n == 5:
        expect(page.locator("#toy-causal")).to_be_checked()
    if n == 7:
        expect(page.locator("#layer-select")).to_have_value("4")
        expect(page.locator("#head-select")).to_have_value("2")
        expect(page.locator("#query-select")).to_have_value("3")


ABOUT = {"/": 7, f"/steps?text={quote(SENTENCE)}": 7, "/compare": 7, "/toy": 2, "/positions": 6, "/iris": 8, "/cost": 9}


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
    page.goto(f"/learn/1?text={quote(long)}&query=300")
    wait_chapter(page, 1)
    assert page.evaluate("() => document.getElementById('learn-plot').data[0].y.length") == 512
    assert "its 512 weights add up to 1." in caption(page)
    wait_until(page, "() => document.querySelectorAll('.learn-chips button').length === 512")
