"""/lm in real Chromium: a tiny GPT trained on a short Chinese text on the page (the loss curve with the entropies,
the samples, the heads' table), then its link followed to the explorer and /steps, where every character of the
learner's sentence is its own token, shown as itself; the model still served after the server restarts; the page
at 390 px in both languages."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from bench.common import Server
from tests.api.test_lm import SENTENCE, chinese_text
from tests.e2e.helpers import english_left

TINY = {"steps": "20", "seed": "3", "context": "32", "layers": "1", "heads": "2", "d_model": "16"}


@pytest.fixture(scope="module")
def lm_dir(tmp_path_factory: pytest.TempPathFactory):
    return tmp_path_factory.mktemp("lm-e2e")


@pytest.fixture(scope="module")
def lm_server(lm_dir):
    server = Server(ATTNSCOPE_LM_DIR=str(lm_dir))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def live_server(lm_server) -> str:
    """This module's pages and the browser log's checks go to its own server."""
    return lm_server.base


@pytest.fixture(scope="module")
def lm_context(open_context, live_server):
    context = open_context(live_server)
    yield context
    context.close()


@pytest.fixture
def context(lm_context):
    return lm_context


def chips(page: Page) -> list[str]:
    return page.locator("#tokens .chip").all_text_contents()


def train_on_the_page(page: Page) -> str:
    page.goto("/lm")
    page.locator("#lm-text").fill(chinese_text())
    for name, value in TINY.items():
        page.locator(f"#lm-{name}").fill(value)
    page.locator("#lm-sentence").fill(SENTENCE)
    page.locator("#lm-train").click()
    expect(page.locator("#results")).to_have_attribute("data-phase", "done", timeout=90_000)
    return page.locator("#lm-model").get_attribute("data-model") or ""


def test_a_model_grown_on_the_page_opens_in_the_explorer_and_steps(page: Page, lm_server, lm_dir):
    model = train_on_the_page(page)
    assert model.startswith("lm-")
    # the curve: one point per evaluation (every step at 20 steps), the two entropies as level lines
    expect(page.locator("#lm-loss")).to_have_attribute("data-points", "21")
    traces = page.evaluate("() => document.getElementById('lm-loss').data.map((d) => d.y.length)")
    assert traces == [21, 21, 2, 2]
    expect(page.locator("#lm-samples li")).to_have_count(21)
    sample = page.locator("#lm-samples .lm-sample-text").first.text_content() or ""
    assert sample and set(sample) <= set(chinese_text()), sample
    expect(page.locator("#lm-head-table tbody tr")).to_have_count(2)
    expect(page.locator(f'#lm-models li[data-model="{model}"]')).to_be_visible()
    # the explorer, from the table's first link: every character its own token, as itself (no [UNK], no mojibake)
    page.locator("#lm-head-table .lm-explorer-link").first.click()
    expect(page.locator("#tokens .chip")).to_have_text(list(SENTENCE))
    expect(page.locator("#tokens .chip-unknown")).to_have_count(0)
    expect(page.locator("#unknown-note")).to_be_hidden()
    assert f"model={model}" in page.url
    # /steps, from the page's steps link
    page.go_back()
    expect(page.locator("#results")).to_be_visible()
    page.goto(page.locator("#lm-models .lm-steps-link").first.get_attribute("href") or "/steps")
    expect(page.locator("#stage")).to_have_attribute("data-step", "input")
    expect(page.locator("#tokens .chip")).to_have_text(list(SENTENCE))
    # a restart: the model is loaded again from the directory and still reads every character
    lm_server.stop()
    lm_server.start()
    page.goto(f"/?model={model}&text={SENTENCE}")
    expect(page.locator("#tokens .chip")).to_have_text(list(SENTENCE))


@pytest.mark.parametrize("language", ["en", "zh"])
def test_the_page_at_390_px(page: Page, language: str):
    page.set_viewport_size({"width": 390, "height": 900})
    page.goto(f"/lm?lang={language}")
    expect(page.locator("#lm-train")).to_be_visible()
    expect(page.locator("#lm-models-hint")).not_to_be_empty()
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    if language == "zh":
        assert english_left(page) == []
