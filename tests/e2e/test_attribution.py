"""The explorer's attribution panel ("How much do these explanations agree?") in real Chromium with MiniLM: the
numbers drawn equal a fetch of POST /api/v1/attribution, the captions' numbers are recomputed here from that
answer, a refusal is shown, the panel works at 390 px in 中文, and an answer whose completeness fails shows its
warning in place of the ranking."""

from __future__ import annotations

import re
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from .helpers import switch_to_chinese

TEXT = "The cat sat on the mat because it was warm."
TARGET = "A dog lay on a rug."
COLUMNS = ("score", "attention", "rollout", "contributions")
NUMBER = r"([\u2212-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?)"


def number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def run_panel(page: Page, method: str = "integrated_gradients", steps: int = 32, target: str = TARGET) -> None:
    page.goto(f"/?text={quote(TEXT)}")
    panel = page.locator("#attribution-panel")
    expect(panel).to_be_visible()
    page.locator("#attribution-target").fill(target)
    page.locator("#attribution-method").select_option(method)
    page.locator("#attribution-steps").fill(str(steps))
    page.locator("#attribution-run").click()


def drawn_columns(page: Page) -> dict[str, list[float]]:
    return page.evaluate("""(columns) => Object.fromEntries(columns.map((c) => [c,
        Array.from(document.querySelectorAll(`#attribution-body td[data-column="${c}"]`), (td) => Number(td.dataset.value))]))""",
                         list(COLUMNS))


def caption(page: Page, kind: str) -> str:
    return page.locator(f'#attribution-captions [data-kind="{kind}"]').inner_text()


def test_drawn_numbers_equal_the_api_and_the_captions_are_true(page: Page, api):
    run_panel(page)
    expect(page.locator("#attribution-result")).to_be_visible()
    body = {"text": TEXT, "model": None, "target": TARGET, "method": "integrated_gradients", "steps": 32}
    answer = api.post("/api/v1/attribution", json=body).json()
    drawn = drawn_columns(page)
    assert drawn["score"] == answer["scores"]
    for name in COLUMNS[1:]:
        assert drawn[name] == answer["compared"][name]
    labels = page.locator("#attribution-body th").all_inner_texts()
    assert labels == [t["display"] for t in answer["tokens"]]
    # the completeness caption: sum, difference and the distance between them, recomputed from the answer
    sum_, difference, apart = (number(v) for v in re.search(
        rf"sum {NUMBER} = f\(x\) − f\(baseline\) {NUMBER}, {NUMBER} % apart", caption(page, "completeness")).groups())
    c = answer["completeness"]
    assert sum_ == pytest.approx(c["sum"], rel=5e-3) and difference == pytest.approx(c["difference"], rel=5e-3)
    assert apart == pytest.approx(abs(c["sum"] - c["difference"]) / abs(c["difference"]) * 100, abs=0.006)
    assert apart <= 1  # within 1 % even at 32 steps for this input
    # each ρ as stated, and the output and baseline as used
    rhos = re.search(rf"attention {NUMBER}, rollout {NUMBER}, contributions {NUMBER}", caption(page, "agreement"))
    for name, value in zip(COLUMNS[1:], rhos.groups(), strict=True):
        assert number(value) == pytest.approx(answer["agreement"][name], abs=0.005)
    assert f"f(x) = {answer['output']:.3g}" in caption(page, "output")
    assert "the mean of the word embedding table" in caption(page, "baseline") and answer["baseline"]["kind"] == "mean"
    assert "mean over every token" in caption(page, "rows") and answer["rows"] == "mean"
    top = max(range(len(answer["scores"])), key=lambda i: abs(answer["scores"][i]))
    assert answer["tokens"][top]["display"] in caption(page, "strongest")


@pytest.mark.expect_http_errors(422)
def test_a_refusal_is_shown(page: Page):
    run_panel(page, steps=20)  # below the server's 32: the form sends it, the server refuses it
    status = page.locator("#attribution-status")
    expect(status).to_be_visible()
    expect(status).to_contain_text("steps")
    expect(status).to_have_class(re.compile(r"\bis-error\b"))
    expect(page.locator("#attribution-result")).to_be_hidden()
    page.locator("#attribution-target").fill("")
    page.locator("#attribution-run").click()
    expect(status).to_have_text("Type a second text to compare the sentence with.")


def test_at_390_px_in_chinese(page: Page, api):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"/?text={quote(TEXT)}")
    switch_to_chinese(page)
    run_panel(page, method="gradient_x_input")
    expect(page.locator("#attribution-result")).to_be_visible()
    expect(page.locator("#attribution-heading")).to_have_text("这些解释彼此一致吗？")
    answer = api.post("/api/v1/attribution", json={"text": TEXT, "target": TARGET, "method": "gradient_x_input"}).json()
    assert drawn_columns(page)["score"] == answer["scores"]
    expect(page.locator('#attribution-captions [data-kind="completeness"]')).to_have_text(
        "梯度 × 输入没有完备性检验：它的分数之和不必等于任何差值。")
    assert "斯皮尔曼" in caption(page, "agreement")
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide at 390"


def run_with_the_sentence_as_baseline(page: Page) -> None:
    page.locator("#attribution-target").fill(TARGET)
    page.locator("#attribution-baseline").select_option("text")
    page.locator("#attribution-baseline-text").fill(TEXT)
    page.locator("#attribution-steps").fill("32")
    page.locator("#attribution-run").click()


def test_an_unreliable_answer_shows_the_warning_instead_of_a_ranking(page: Page, api):
    # the sentence itself as the baseline text: f(x) − f(baseline) is 0, too small for completeness to be checked
    page.goto(f"/?text={quote(TEXT)}")
    run_with_the_sentence_as_baseline(page)
    warning = page.locator("#attribution-warning")
    expect(warning).to_be_visible()
    answer = api.post("/api/v1/attribution", json={"text": TEXT, "target": TARGET, "steps": 32,
                                                    "baseline": {"text": TEXT}}).json()
    assert answer["completeness"]["ok"] is False and answer["warning"]
    assert answer["agreement"] == {"attention": None, "rollout": None, "contributions": None}
    expect(warning).to_contain_text("too small beside f for completeness to be checked")
    expect(warning).to_contain_text("choose another baseline")
    expect(page.locator("#attribution-ranking")).to_be_hidden()
    assert f"“{TEXT}”, token by token" in caption(page, "baseline")
    assert page.locator('#attribution-captions [data-kind="agreement"]').count() == 0
    switch_to_chinese(page)
    run_with_the_sentence_as_baseline(page)
    expect(warning).to_contain_text("排名不可靠")
    expect(page.locator("#attribution-ranking")).to_be_hidden()
