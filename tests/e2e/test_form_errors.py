"""A refused request is said beside the form that sent it, in the page's language, as well as in the status
line: on /, /steps, /compare, /positions and /cost (static/js/page.js createStatus and #form-error in each
page's form). The refusals are the server's own (a blank sentence: 422, too many tokens: 413), or, where the
page's form cannot send a refused request, an answer the test makes the server give (page.route)."""

from __future__ import annotations

import json
import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

BLANK = {"en": "The sentence is blank: type at least one word.", "zh": "句子是空的：请至少输入一个词。"}
REFUSED = {"detail": "Refused.", "errors": [{"loc": ["query", "length"], "msg": "a rule of a later server", "type": "later_rule"}]}


def said_beside(page: Page, form: str, text: str | re.Pattern) -> None:
    """The message is in the slot inside `form` (under its fields and button) and in the status line."""
    beside = page.locator(f"{form} #form-error")
    expect(beside).to_be_visible()
    expect(beside).to_have_text(text)
    expect(page.locator("#status")).to_have_text(text)
    expect(page.locator("#status")).to_have_class(re.compile(r"\bis-error\b"))


@pytest.mark.expect_http_errors(422)
@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("path", ["/", "/steps"])
def test_a_blank_sentence_is_said_beside_the_sentence_form(page: Page, path: str, language: str):
    page.goto(f"{path}?text=%20%20&layer=0&head=0&lang={language}")
    said_beside(page, "#run-form", BLANK[language])


@pytest.mark.expect_http_errors(413)
def test_too_many_tokens_is_said_beside_the_form_and_goes_with_the_next_answer(page: Page):
    page.goto("/?text=The+cat+sat.&layer=0&head=0")
    expect(page.locator("#status")).to_contain_text("tokens")
    page.locator("#text-input").fill(" ".join(["word"] * 600))
    page.locator("#run-button").click()
    said_beside(page, "#run-form", re.compile(r"602 tokens.*at most 512"))
    page.locator("#text-input").fill("The dog sat.")
    page.locator("#run-button").click()
    expect(page.locator("#form-error")).to_be_hidden()
    expect(page.locator("#status")).not_to_have_class(re.compile(r"\bis-error\b"))


@pytest.mark.expect_http_errors(422)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_compare_says_a_blank_sentence_beside_its_form(page: Page, language: str):
    page.goto(f"/compare?a={quote('The cat sat.')}&b=%20&layer=0&head=0&lang={language}")
    said_beside(page, "#compare-form", BLANK[language])


@pytest.mark.expect_http_errors(422)
@pytest.mark.parametrize("language", ["en", "zh"])
def test_positions_says_a_refusal_beside_its_form(page: Page, language: str):
    page.route("**/api/v1/positions?*", lambda route: route.fulfill(
        status=422, content_type="application/json", body=json.dumps(REFUSED)))
    page.goto(f"/positions?lang={language}")
    words = {"en": "The server answered 422: Refused.", "zh": "服务器返回 422：Refused."}[language]
    said_beside(page, "#positions-form", words)


@pytest.mark.expect_http_errors(422)
def test_cost_says_a_refusal_it_does_not_word_itself_beside_its_form(page: Page):
    page.route("**/api/v1/cost?*", lambda route: route.fulfill(
        status=422, content_type="application/json", body=json.dumps(REFUSED)))
    page.goto("/cost")
    beside = page.locator("#form-error")
    expect(beside).to_be_visible()
    expect(beside).to_have_text("The server answered 422: Refused.")
    # under the form's fields, above the presets
    form, slot = page.locator("#cost-form").bounding_box(), beside.bounding_box()
    assert slot["y"] >= form["y"] + form["height"] - 1
