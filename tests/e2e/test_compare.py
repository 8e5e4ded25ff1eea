"""The compare page (/compare) in real Chromium: what it draws against the test's own fetches of
/api/v1/attention and its own numpy references of A − B, the word view and hidden special tokens."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import parse_qs, quote, urlsplit

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, wait_until

CAT = "The cat sat on the mat."
DOG = "The dog sat on the mat."
LONGER = "A dog barked at the postman yesterday."
PIECES_A = "Unbelievably, tokenizers split words."
PIECES_B = "Remarkably, transformers split sentences."
CHINESE_A = "注意力机制让模型学会聚焦于最相关的部分。"
CHINESE_B = "注意力机制让模型学会关注于最重要的部分。"

# The page downloads maps in the compact u16 encoding: each weight is exact to 7.7e-6 (docs/encoding.md).
COMPACT = 7.7e-6


def head_map(api, text: str, pair: str | None, layer: int, head: int) -> tuple[list[dict], np.ndarray]:
    """One head's map and the tokens, fetched by the test itself (JSON, float32 weights)."""
    response = api.post("/api/v1/attention", json={"text": text, "text_pair": pair, "layers": [layer], "heads": [head]})
    assert response.status_code == 200, response.text
    body = response.json()
    return body["tokens"], np.array(body["attention"][0][0], dtype=np.float64)


def compare_url(a: str, b: str, layer: int, head: int, **extra: str) -> str:
    query = f"/compare?a={quote(a)}&b={quote(b)}&layer={layer}&head={head}"
    return query + "".join(f"&{name}={quote(value)}" for name, value in extra.items())


# True once the results say they show the state of the URL (the page sets data-drawn last, and clears it
# as soon as it starts on another state). False while a navigation's new document has no #results yet.
DRAWN = """() => {
  const drawn = document.getElementById('results')?.dataset.drawn;
  if (!drawn) return false;
  const sorted = (search) => JSON.stringify([...new URLSearchParams(search)].sort());
  return sorted(new URL(drawn, location.href).search) === sorted(location.search);
}"""


def wait_drawn(page: Page) -> None:
    """Until the figures on screen are those of the URL's state."""
    wait_until(page, DRAWN, timeout=30_000)


def drawn(page: Page, figure: str) -> dict:
    return page.evaluate(
        """(id) => { const gd = document.getElementById(id); const trace = gd.data[0];
                     return {z: trace.z, zmin: trace.zmin, zmax: trace.zmax, colorscale: trace.colorscale,
                             title: gd.layout.title.text, ticks: gd.layout.xaxis.ticktext, tickvals: gd.layout.xaxis.tickvals}; }""",
        f"plot-{figure}",
    )


def worst(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, f"shapes differ: {a.shape} vs {b.shape}"
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def query_of(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query)


# ---- an independent word merge and the two transformations, in numpy ----

def _inside_word(char: str) -> bool:
    """A letter, digit or mark of a script that separates words with spaces."""
    if unicodedata.category(char)[0] not in "LNM":
        return False
    name = unicodedata.name(char, "")
    return not any(script in name for script in ("CJK", "HIRAGANA", "KATAKANA", "THAI", "LAO", "KHMER", "MYANMAR"))


def reference_words(tokens: list[dict], text: str, pair: str | None) -> list[dict]:
    """Consecutive tokens of one segment whose offsets touch, with word characters on both sides of the seam."""
    sources = [text, pair or ""]
    words: list[dict] = []
    for index, token in enumerate(tokens):
        source = sources[token["segment"]]
        offsets = not token["special"] and token["start"] is not None and token["end"] > token["start"]
        last = words[-1] if words else None
        if (last and last["open"] and offsets and last["segment"] == token["segment"] and last["end"] == token["start"]
                and _inside_word(source[token["start"] - 1]) and _inside_word(source[token["start"]])):
            last["pieces"].append(index)
            last["end"] = token["end"]
            last["label"] = source[last["start"] : last["end"]]
            continue
        label = source[token["start"] : token["end"]] if offsets else token["text"]
        words.append({"label": label, "start": token["start"], "end": token["end"], "segment": token["segment"],
                      "special": token["special"], "pieces": [index], "open": offsets})
    return words


def reference_word_matrix(matrix: np.ndarray, words: list[dict]) -> np.ndarray:
    """(a, b): the mean over word a's query pieces of the sum over word b's key pieces."""
    out = np.zeros((len(words), len(words)))
    for a, word_a in enumerate(words):
        for b, word_b in enumerate(words):
            out[a, b] = matrix[np.ix_(word_a["pieces"], word_b["pieces"])].sum(axis=1).mean()
    return out


def reference_hide(matrix: np.ndarray, special: list[bool]) -> tuple[np.ndarray, np.ndarray]:
    """Special rows and columns dropped, rows renormalised; returns the matrix and each row's kept mass."""
    kept = [i for i, s in enumerate(special) if not s]
    sub = matrix[np.ix_(kept, kept)]
    mass = sub.sum(axis=1)
    return sub / mass[:, None], mass


# ---- tests ----

def test_aligned_pair_draws_a_minus_b_on_a_symmetric_diverging_scale(page: Page, api):
    tokens_a, ref_a = head_map(api, CAT, None, 2, 5)
    tokens_b, ref_b = head_map(api, DOG, None, 2, 5)
    assert len(tokens_a) == len(tokens_b)

    page.goto(compare_url(CAT, DOG, 2, 5))
    wait_drawn(page)
    expect(page.locator("#panel-diff")).to_be_visible()
    expect(page.locator("#compare-note")).to_have_class(re.compile(r"\bis-aligned\b"))
    expect(page.locator("#compare-note")).to_contain_text("line up")

    a, b, diff = drawn(page, "a"), drawn(page, "b"), drawn(page, "diff")
    assert worst(a["z"], ref_a) <= COMPACT
    assert worst(b["z"], ref_b) <= COMPACT
    assert worst(diff["z"], ref_a - ref_b) <= 2 * COMPACT  # each side within COMPACT of the API
    # Symmetric around 0, to the largest |A − B|; A and B on one shared scale from 0.
    assert diff["zmin"] == -diff["zmax"]
    assert abs(diff["zmax"] - np.max(np.abs(ref_a - ref_b))) <= 2 * COMPACT
    assert a["zmin"] == b["zmin"] == 0 and a["zmax"] == b["zmax"]
    assert abs(a["zmax"] - max(ref_a.max(), ref_b.max())) <= COMPACT
    # Diverging: blue at the low end, near-white at 0, red at the high end.
    scale = {round(p, 6): colour for p, colour in diff["colorscale"]}
    rgb = lambda colour: tuple(int(v) for v in re.findall(r"\d+", colour)[:3])  # noqa: E731
    low, middle, high = rgb(scale[0]), rgb(scale[0.5]), rgb(scale[1])
    assert low[2] > low[0] and high[0] > high[2] and min(middle) >= 240
    expect(page.locator("#diff-legend")).to_contain_text("symmetric around 0")
    expect(page.locator("#diff-legend")).to_contain_text(f"+{np.max(np.abs(ref_a - ref_b)):.3f}")
    expect(page.locator("#plot-diff .gtitle")).to_have_text("A − B · Layer 2 · Head 5")
    # The position where the tokens differ is labelled with both.
    texts = [token["text"] for token in tokens_a]
    assert diff["ticks"] == [t if t == u["text"] else f"{t} / {u['text']}" for t, u in zip(texts, tokens_b, strict=True)]
    assert "cat / dog" in diff["ticks"]

    # A link to the explorer for each sentence, at the same layer and head.
    for side, text in (("a", CAT), ("b", DOG)):
        href = page.locator(f"#explorer-{side}").get_attribute("href")
        assert urlsplit(href).path == "/"
        assert {k: v for k, v in query_of(href).items() if k in ("text", "layer", "head")} == {
            "text": [text], "layer": ["2"], "head": ["5"],
        }
    page.locator("#explorer-b").click()
    expect(page).to_have_url(re.compile(r"/\?text=The\+dog"))
    expect(page.locator("#text-input")).to_have_value(DOG)


def test_not_aligned_shows_side_by_side_with_pickers_in_sync(page: Page, api, browser_log):
    page.goto(compare_url(CAT, LONGER, 1, 3))
    wait_drawn(page)
    expect(page.locator("#panel-diff")).to_be_hidden()
    tokens_a, _ = head_map(api, CAT, None, 1, 3)
    tokens_b, _ = head_map(api, LONGER, None, 1, 3)
    expect(page.locator("#compare-note")).to_have_text(
        f"No difference map: A has {len(tokens_a)} tokens and B has {len(tokens_b)}, so their positions do not line up. "
        "A and B are shown side by side, at the same layer and head."
    )
    boxes = [page.locator(f"#plot-{side}").bounding_box() for side in ("a", "b")]
    assert boxes[0]["x"] + boxes[0]["width"] <= boxes[1]["x"] and abs(boxes[0]["y"] - boxes[1]["y"]) < 1  # side by side

    for layer, head in ((4, 3), (4, 7)):
        if layer != int(page.locator("#layer-select").input_value()):
            page.locator("#layer-select").select_option(str(layer))
        else:
            page.locator("#head-select").select_option(str(head))
        expect(page).to_have_url(re.compile(rf"layer={layer}&head={head}"))
        wait_drawn(page)
        expect(page.locator("#plot-a .gtitle")).to_have_text(f"A · Layer {layer} · Head {head}")
        expect(page.locator("#plot-b .gtitle")).to_have_text(f"B · Layer {layer} · Head {head}")
        for side, text in (("a", CAT), ("b", LONGER)):
            assert worst(drawn(page, side)["z"], head_map(api, text, None, layer, head)[1]) <= COMPACT
        expect(page.locator("#panel-diff")).to_be_hidden()

    page.go_back()
    expect(page.locator("#plot-b .gtitle")).to_have_text("B · Layer 4 · Head 3")
    expect(page.locator("#head-select")).to_have_value("3")
    # One request per sentence and head: nothing fetched twice (Back is served from the page's cache).
    assert browser_log.api_posts() == 6


def test_word_view_merges_pieces_like_a_reference_from_offsets(page: Page, api):
    tokens_a, ref_a = head_map(api, PIECES_A, None, 3, 2)
    tokens_b, ref_b = head_map(api, PIECES_B, None, 3, 2)
    words_a = reference_words(tokens_a, PIECES_A, None)
    words_b = reference_words(tokens_b, PIECES_B, None)
    assert ["un", "##bel"] == [t["text"] for t in tokens_a[1:3]]  # the test sentence has word pieces
    assert [w["label"] for w in words_a] == ["[CLS]", "Unbelievably", ",", "tokenizers", "split", "words", ".", "[SEP]"]

    page.goto(compare_url(PIECES_A, PIECES_B, 3, 2))
    wait_drawn(page)
    assert drawn(page, "a")["ticks"][1:3] == ["un", "##bel"]
    page.get_by_label("Word view").check()
    expect(page).to_have_url(re.compile(r"words=1"))
    wait_drawn(page)
    a, b = drawn(page, "a"), drawn(page, "b")
    assert a["ticks"] == [w["label"] for w in words_a]
    assert b["ticks"] == [w["label"] for w in words_b]
    longest = max(len(w["pieces"]) for w in words_a + words_b)
    assert worst(a["z"], reference_word_matrix(ref_a, words_a)) <= longest * COMPACT
    assert worst(b["z"], reference_word_matrix(ref_b, words_b)) <= longest * COMPACT
    assert np.allclose(np.sum(a["z"], axis=1), 1, atol=1e-4)  # rows still sum to 1
    expect(page.locator("#view-note")).to_contain_text("Word view")
    # Both sentences have 8 words with the specials in the same places: the difference is drawn in words.
    expect(page.locator("#panel-diff")).to_be_visible()
    assert worst(drawn(page, "diff")["z"], reference_word_matrix(ref_a, words_a) - reference_word_matrix(ref_b, words_b)) <= 2 * longest * COMPACT
    # The tokens themselves do not line up (16 against 12 pieces).
    assert len(tokens_a) != len(tokens_b)


def test_hide_special_renormalises_rows_to_one(page: Page, api):
    tokens, ref = head_map(api, PIECES_A, None, 0, 0)
    _, ref_b = head_map(api, CAT, None, 0, 0)
    page.goto(compare_url(PIECES_A, CAT, 0, 0, specials="hide"))
    wait_drawn(page)
    expect(page.get_by_label("Hide special tokens")).to_be_checked()
    a = drawn(page, "a")
    expected, mass = reference_hide(ref, [t["special"] for t in tokens])
    assert "[CLS]" not in a["ticks"] and "[SEP]" not in a["ticks"]
    assert a["ticks"] == [t["text"] for t in tokens if not t["special"]]
    assert np.allclose(np.sum(a["z"], axis=1), 1, atol=1e-9)
    # Renormalising divides each row's quantisation error by the row's kept mass.
    tolerance = len(mass) * COMPACT / mass.min()
    assert worst(a["z"], expected) <= tolerance
    expect(page.locator("#view-note")).to_contain_text("renormalised")

    # Word view and hidden specials together: words first, then the special words dropped, rows renormalised.
    page.get_by_label("Word view").check()
    expect(page).to_have_url(re.compile(r"words=1.*specials=hide"))
    wait_drawn(page)
    words = reference_words(tokens, PIECES_A, None)
    merged = reference_word_matrix(ref, words)
    expected, mass = reference_hide(merged, [w["special"] for w in words])
    a = drawn(page, "a")
    assert a["ticks"] == [w["label"] for w in words if not w["special"]]
    assert np.allclose(np.sum(a["z"], axis=1), 1, atol=1e-9)
    assert worst(a["z"], expected) <= len(tokens) * COMPACT / mass.min()
    b = drawn(page, "b")
    assert len(b["z"]) == len(ref_b) - 2 == 7  # B's 9 tokens are 7 words and [CLS], [SEP]
    assert np.allclose(np.sum(b["z"], axis=1), 1, atol=1e-9)


def test_512_tokens_align_and_the_difference_is_drawn(page: Page, api):
    a_text, b_text = " ".join(["the"] * 510), " ".join(["a"] * 510)  # 510 word tokens + [CLS] + [SEP]
    tokens_a, ref_a = head_map(api, a_text, None, 5, 11)
    _, ref_b = head_map(api, b_text, None, 5, 11)
    assert len(tokens_a) == 512 and ref_b.shape == (512, 512)

    page.goto(compare_url(a_text, b_text, 5, 11))
    wait_drawn(page)
    expect(page.locator("#panel-diff")).to_be_visible()
    diff = drawn(page, "diff")
    assert worst(diff["z"], ref_a - ref_b) <= 2 * COMPACT
    assert diff["zmin"] == -diff["zmax"]
    assert len(diff["tickvals"]) < 512  # tick labels thinned so that they do not overlap
    expect(page.locator("#status")).to_have_text("minilm: A has 512 tokens, B has 512; layer 5, head 11.")
    page.get_by_label("Hide special tokens").check()
    wait_drawn(page)
    assert np.allclose(np.sum(drawn(page, "a")["z"], axis=1), 1, atol=1e-9)
    assert len(drawn(page, "a")["z"]) == 510


@pytest.mark.parametrize("language", ["en", "zh"])
def test_both_languages(page: Page, api, language: str):
    _, ref_a = head_map(api, CHINESE_A, None, 2, 5)
    tokens_b, ref_b = head_map(api, CHINESE_B, None, 2, 5)
    page.goto(compare_url(CHINESE_A, CHINESE_B, 2, 5, lang=language))
    wait_drawn(page)
    expect(page.locator("#panel-diff")).to_be_visible()
    assert worst(drawn(page, "diff")["z"], ref_a - ref_b) <= 2 * COMPACT
    title = "A − B · 第 2 层 · 第 5 头" if language == "zh" else "A − B · Layer 2 · Head 5"
    expect(page.locator("#plot-diff .gtitle")).to_have_text(title)
    # Word view keeps each Han character a word of its own (the text has no spaces to split it by).
    page.locator("#words-toggle").check()
    wait_drawn(page)
    assert len(drawn(page, "b")["z"]) == len(tokens_b)
    if language == "zh":
        expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
        expect(page.locator("#compare-note")).to_contain_text("一一对应")
        assert english_left(page) == []
        assert re.search(r"[\u4e00-\u9fff]", page.title())
    else:
        assert english_left(page) != []  # the check sees English UI text on the English page


def test_intro_and_a_blank_sentence(page: Page):
    page.goto("/compare")
    expect(page.locator("#intro")).to_be_visible()
    expect(page.locator("#results")).to_be_hidden()
    expect(page.get_by_role("link", name="Compare", exact=True)).to_have_attribute("aria-current", "page")
    page.locator("#intro a").first.click()
    wait_drawn(page)
    expect(page.locator("#panel-diff")).to_be_visible()
    expect(page.locator("#compare-a")).to_have_value(CAT)


@pytest.mark.expect_http_errors(422)
def test_a_blank_sentence_is_said_in_the_pages_words(page: Page):
    page.goto(compare_url(CAT, "   ", 0, 0))
    expect(page.locator("#status")).to_have_class(re.compile(r"\bis-error\b"))
    expect(page.locator("#status")).to_have_text("The sentence is blank: type at least one word.")


HEADER = """() => { const box = (s) => document.querySelector(s).getBoundingClientRect();
  const brand = box('.brand-name'), tagline = box('.brand-tagline'), nav = box('.site-nav'), lang = box('.lang-switch');
  const links = Array.from(document.querySelectorAll('.site-nav a'), (a) => a.getBoundingClientRect().top);
  return {height: box('.site-header').height, brand: brand.top, taglineLines: Math.round(tagline.height / 17),
          navTop: nav.top, langTop: lang.top, linkRows: new Set(links.map(Math.round)).size,
          scroll: document.documentElement.scrollWidth, width: innerWidth}; }"""


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_header_fits_at_1400_and_800_and_the_form_is_usable_at_390(page: Page, language: str):
    url = compare_url(CAT, DOG, 2, 5, lang=language)
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(url)
    wait_drawn(page)
    # 1400 px: one row, as on the explorer (brand, tagline, links and languages side by side, nothing wrapped)
    wide = page.evaluate(HEADER)
    page.goto(f"/?lang={language}")
    expect(page.locator("#intro")).to_be_visible()
    assert wide["height"] == page.evaluate(HEADER)["height"]
    assert wide["taglineLines"] == 1 and wide["linkRows"] == 1
    assert abs(wide["navTop"] - wide["langTop"]) < 8 and wide["navTop"] < wide["brand"] + 20
    assert wide["height"] < 70

    # 800 px: the name and the tagline on one line, the links and languages on the next one
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(url)
    wait_drawn(page)
    narrow = page.evaluate(HEADER)
    assert narrow["taglineLines"] == 1 and narrow["linkRows"] == 1
    assert abs(narrow["navTop"] - narrow["langTop"]) < 8
    assert narrow["height"] < 110 and narrow["scroll"] <= narrow["width"]

    # 390 px: the form takes one field a row, each as wide as the form, and nothing scrolls sideways
    page.set_viewport_size({"width": 390, "height": 844})
    fields = page.evaluate("""() => Array.from(document.querySelectorAll('#compare-form input[type=text], #model-select'),
                              (el) => el.getBoundingClientRect()).map((r) => [r.left, r.width])""")
    form = page.locator("#compare-form").bounding_box()
    assert len(fields) == 5
    for left, width in fields:
        assert abs(left - form["x"]) < 1 and width > form["width"] - 2
    # the maps drawn at 800 px are redrawn for the narrower window; then nothing scrolls sideways
    page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")
    page.locator("#compare-b").fill("A dog sat on the mat.")
    page.locator("#run-button").click()
    expect(page).to_have_url(re.compile(r"b=A(\+|%20)dog"))
    wait_drawn(page)
