"""English and 中文 in real Chromium: the dictionaries, the language switch, and what each page shows."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until

SENTENCE = "The cat sat on the mat."
CHINESE = "注意力机制让模型学会聚焦于最相关的部分。"
PAGES = {
    "explorer (intro)": "/",
    "explorer": f"/?text={quote(SENTENCE)}&layer=2&head=5",
    "explorer (Chinese text)": f"/?text={quote(CHINESE)}",
    "explorer (analysis)": f"/?text={quote(SENTENCE)}&pair=It+ran.&layer=2&head=5&kind=contribution&words=1"
                           "&specials=hide&colour=to_sep&focus=2",
    "explorer (edit)": f"/?text={quote(SENTENCE)}&layer=3&head=0&edit=2&edit_heads=5&edit_t=3&diff=1&scale=shared"
                       "&gamma=0.5",
    "compare (intro)": "/compare",
    "compare": f"/compare?a={quote(SENTENCE)}&b={quote('The dog sat on the mat.')}&layer=2&head=5",
    "steps": f"/steps?text={quote(SENTENCE)}&layer=1&head=2&query=3",
    "toy": "/toy",
    "toy (backward)": "/toy?backward=1&variant=hard&positions=rope",
    "flash": "/flash?bc=3&causal=1&backward=1&tile=5",
    "positions": "/positions",
    "iris": "/iris",
    "induction": "/induction",
    "seq2seq": "/seq2seq",
    "cost": "/cost",
    "corpus (none served)": "/corpus",
    "docs": "/docs",
}


def wait_ready(page: Page, path: str) -> None:
    """Wait until the page has drawn what it fetches (so that its text is all there)."""
    if path.startswith("/?text"):
        wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    elif path.startswith(("/steps?", "/toy")):
        expect(page.locator("#stage")).to_have_attribute("data-step", re.compile(r"\w+"))
        if "backward=1" in path:
            expect(page.locator("#backward-panel")).to_have_attribute("aria-busy", "false")
    elif path in ("/positions", "/iris", "/induction", "/seq2seq", "/cost") or path.startswith("/compare?"):
        expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile("^" + path.split("?")[0]))
    elif path.startswith("/flash"):
        expect(page.locator("#flash-walk")).to_have_attribute("data-step", re.compile(r"^[fb]\d+$"))
        expect(page.locator("#flash-walk")).to_have_attribute("aria-busy", "false")
    elif path == "/docs":
        expect(page.locator("#swagger-ui .opblock").first).to_be_visible()
    elif path == "/corpus":  # how to build and serve an index (tests/e2e/test_corpus.py: a served one)
        expect(page.locator("#corpus-none h1")).not_to_be_empty()
    else:
        expect(page.locator("#intro")).to_be_visible()


@pytest.mark.parametrize("name", list(PAGES))
def test_every_page_in_chinese_has_no_english_ui_text_left(page: Page, name: str):
    path = PAGES[name]
    page.goto(path)
    wait_ready(page, path)
    assert english_left(page, skip="#swagger-ui") != [], "the check must see the English page"

    switch_to_chinese(page)
    wait_ready(page, path)
    assert english_left(page, skip="#swagger-ui") == []
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    assert re.search(r"[\u4e00-\u9fff]", page.title()), "the title is Chinese"


def test_the_choice_is_kept_on_reload_and_across_pages_and_a_lang_parameter_wins(page: Page):
    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=3")
    wait_ready(page, "/?text")
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 1 · Head 3")

    switch_to_chinese(page)
    expect(page.locator("#heatmap .gtitle")).to_have_text("第 1 层 · 第 3 头")  # the figure too, same view
    assert "layer=1" in page.url and "head=3" in page.url
    page.reload()
    expect(page.locator("#heatmap .gtitle")).to_have_text("第 1 层 · 第 3 头")

    page.get_by_role("link", name="小例子").click()  # a link from the header
    expect(page).to_have_url(re.compile(r"/toy"))
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")

    page.goto(f"/?text={quote(SENTENCE)}&layer=1&head=3&lang=en")  # the parameter wins over the stored choice
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.locator("#heatmap .gtitle")).to_have_text("Layer 1 · Head 3")
    expect(page.get_by_role("button", name="English")).to_have_attribute("aria-pressed", "true")
    # ... and stays on the URLs the page makes, so a shared link keeps its language.
    page.get_by_role("button", name="layer 4 head 7", exact=True).click()
    expect(page).to_have_url(re.compile(r"lang=en"))
    page.get_by_role("button", name="中文").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page).to_have_url(re.compile(r"lang=zh"))
    expect(page.locator("#heatmap .gtitle")).to_have_text("第 4 层 · 第 7 头")


@pytest.mark.parametrize("name", ["explorer (intro)", "explorer", "compare (intro)", "compare", "steps", "toy", "flash",
                                  "positions", "iris", "induction", "seq2seq", "cost",
                                  "corpus (none served)", "docs"])
def test_no_page_scrolls_sideways_on_a_phone(page: Page, name: str):
    page.set_viewport_size({"width": 390, "height": 800})
    path = PAGES[name]
    page.goto(path)
    wait_ready(page, path)
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{widths[0]} px of content in a {widths[1]} px window"
