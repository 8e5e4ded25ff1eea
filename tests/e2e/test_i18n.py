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
    "steps (the block's MLP)": f"/steps?text={quote(SENTENCE)}&layer=1&head=2&query=3&step=mlp_act",
    "toy": "/toy",
    "toy (backward)": "/toy?backward=1&variant=hard&positions=rope",
    "flash": "/flash?bc=3&causal=1&backward=1&tile=5",
    "positions": "/positions",
    "iris": "/iris",
    "induction": "/induction",
    "seq2seq": "/seq2seq",
    "informer": "/informer",
    "glimpse": "/glimpse",
    "cost": "/cost",
    "sequence": "/sequence",
    "corpus (none served)": "/corpus",
    "docs": "/docs",
}


# Every visible button whose label wraps onto a second line or is cut off ([] when none is). A label is the button's
# text, whose range must lie on exactly one line (its client rects merged per line), and the button must not be
# narrower than it (scrollWidth <= clientWidth). A button laid out as a card of several parts (display grid or flex:
# the cost page's presets, the induction lab's head thumbnails) has its name, the first part, on one line; the other
# parts are descriptions. Sortable column headings (explorer.css .sort-button) wrap as table headings do; Swagger UI
# (/docs) is a vendor's.
BUTTONS_WRAPPED = """() => {
  const lines = (node) => {
    const range = document.createRange();
    range.selectNodeContents(node);
    const found = [];
    for (const rect of range.getClientRects()) {
      if (!rect.width || !rect.height) continue;
      const line = found.find((l) => rect.top < l.bottom - 1 && rect.bottom > l.top + 1);
      if (line) { line.top = Math.min(line.top, rect.top); line.bottom = Math.max(line.bottom, rect.bottom); }
      else found.push({ top: rect.top, bottom: rect.bottom });
    }
    return found.length;
  };
  const wrapped = [];
  for (const button of document.querySelectorAll('button')) {
    if (!button.getClientRects().length || !button.textContent.trim() || button.closest('#swagger-ui, th')) continue;
    const style = getComputedStyle(button);
    if (style.visibility === 'hidden') continue;
    const card = /grid|flex/.test(style.display) && button.children.length > 1;
    const label = card ? [...button.children].find((part) => part.textContent.trim()) : button;
    const name = `${button.id || button.className}: ${button.textContent.trim().slice(0, 40)}`;
    if (lines(label) !== 1) wrapped.push(`${name} (${lines(label)} lines, ${Math.round(button.clientWidth)} px)`);
    if (button.scrollWidth > button.clientWidth) wrapped.push(`${name} (cut: ${button.scrollWidth} > ${button.clientWidth} px)`);
  }
  return wrapped;
}"""

# The header at 1400 px: its links on one line, in the same row as the name and the languages.
HEADER_ROWS = """() => {
  const box = (s) => document.querySelector(s).getBoundingClientRect();
  const links = new Set([...document.querySelectorAll('.site-nav a')].map((a) => Math.round(a.getBoundingClientRect().top)));
  const name = box('.brand-name'), nav = box('.site-nav'), lang = box('.lang-switch');
  return {linkRows: links.size, sameRow: nav.top < name.bottom && lang.top < name.bottom && name.top < nav.bottom};
}"""


def check_buttons_and_header(page: Page, language: str) -> None:
    """No button wraps or is cut at 1400 and at 390 px, and at 1400 px the header is one row (the page's language)."""
    page.set_viewport_size({"width": 1400, "height": 900})
    assert page.evaluate(HEADER_ROWS) == {"linkRows": 1, "sameRow": True}, f"the header at 1400 px in {language}"
    assert page.evaluate(BUTTONS_WRAPPED) == [], f"1400 px, {language}"
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.evaluate(BUTTONS_WRAPPED) == [], f"390 px, {language}"
    page.set_viewport_size({"width": 1400, "height": 900})


def wait_ready(page: Page, path: str) -> None:
    """Wait until the page has drawn what it fetches (so that its text is all there)."""
    if path.startswith("/?text"):
        wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    elif path.startswith(("/steps?", "/toy")):
        expect(page.locator("#stage")).to_have_attribute("data-step", re.compile(r"\w+"))
        if "backward=1" in path:
            expect(page.locator("#backward-panel")).to_have_attribute("aria-busy", "false")
    elif path in ("/positions", "/iris", "/induction", "/seq2seq", "/informer", "/glimpse", "/cost") \
            or path.startswith("/compare?"):
        expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile("^" + path.split("?")[0]))
    elif path == "/sequence":
        for section in ("#seq-sweep", "#seq-reach"):
            expect(page.locator(section)).to_have_attribute("data-drawn", "true")
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
    """... and, in both languages, no button's label wraps or is cut at 1400 or 390 px, and the header is one row
    at 1400 px."""
    path = PAGES[name]
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(path)
    wait_ready(page, path)
    assert english_left(page, skip="#swagger-ui") != [], "the check must see the English page"
    check_buttons_and_header(page, "en")

    switch_to_chinese(page)
    wait_ready(page, path)
    assert english_left(page, skip="#swagger-ui") == []
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    assert re.search(r"[\u4e00-\u9fff]", page.title()), "the title is Chinese"
    check_buttons_and_header(page, "zh")


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
