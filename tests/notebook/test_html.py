"""widget.save_html: one page that opens in Chromium with every network request refused, and draws."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Page, Route, expect

import attnscope

from .test_lab import PIXELS


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    w = attnscope.show("Les chats dorment. 猫が寝る <script>alert(1)</script>", model="minilm", lang="zh")
    w.layer, w.head = 1, 4
    return w.save_html(tmp_path_factory.mktemp("html") / "attention.html")


def test_the_saved_page_draws_offline(saved: Path, page: Page):
    page.set_viewport_size({"width": 390, "height": 900})  # a phone's width
    requested: list[str] = []
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("dialog", lambda dialog: errors.append(f"dialog {dialog.message}"))

    def only_the_file(route: Route) -> None:
        requested.append(route.request.url)
        if route.request.url == saved.as_uri():
            route.continue_()
        else:
            route.abort()

    page.route("**/*", only_the_file)
    page.goto(saved.as_uri())
    widget = page.locator(".attnscope-widget[data-ready='true']")
    expect(widget).to_be_visible()
    assert requested == [saved.as_uri()]
    assert widget.get_attribute("data-layer") == "1" and widget.get_attribute("data-head") == "4"
    drawn = widget.locator("button.thumb canvas").first.evaluate(PIXELS)
    assert drawn["opaque"] == drawn["size"] > 0 and drawn["colours"] > 5, drawn
    # the page's words are Chinese (lang="zh"), the token text is text: the <script> token is not run
    expect(widget.locator(".attnscope-widget-grid h3")).to_have_text("所有注意力头")
    expect(widget.locator(".head-view-token", has_text="<")).not_to_have_count(0)
    assert page.locator("script").count() == 2
    # a click selects in the page itself
    widget.locator("button.thumb[data-layer='5'][data-head='11']").click()
    expect(widget).to_have_attribute("data-head", "11")
    expect(widget.locator("button.thumb[data-layer='5'][data-head='11']")).to_have_attribute("aria-pressed", "true")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    assert errors == []
