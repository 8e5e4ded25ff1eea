"""The explorer's logit lens panel in real Chromium, on a real server with local checkpoints (conftest.py
local_models_server): a GPT-2-style "tiny-gpt2" (its LM head tied to the word embeddings) and a BERT-style
"tiny-bert" without one.

What the page draws (each cell's vocabulary id, text and probability) is compared with the API's answer fetched
by the test and with transformers' GPT2LMHeadModel on the same directory (lm_head(ln_f(h)) per layer; its
hidden_states[-1] already has ln_f). The position follows a clicked token, the panel's select and `lens=` in
the URL; the panel is absent for models without an LM head and works at the model's full 64 tokens."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from playwright.sync_api import Page, expect

from ..helpers import english_left, wait_until

TEXT = "Hello world, attention is all you need."
GPT2 = "tiny-gpt2"
TOLERANCE = 1e-5
LAYERS = ["embeddings", 0, 1]




@pytest.fixture(scope="module")
def reference(local_models_server):
    import transformers

    directory = str(local_models_server.gpt2)
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    lm = transformers.GPT2LMHeadModel.from_pretrained(directory, attn_implementation="eager").eval()
    return tok, lm


def reference_top(reference, text: str, position: int, k: int = 5) -> list[tuple[list[int], list[float]]]:
    import torch

    tok, lm = reference
    ids = tok(text)["input_ids"]
    with torch.no_grad():
        states = lm(torch.tensor([ids]), output_hidden_states=True).hidden_states
        logits = [lm.lm_head(lm.transformer.ln_f(h[0, position])) for h in states[:-1]] + [lm.lm_head(states[-1][0, position])]
    tops = [torch.softmax(row, -1).topk(k) for row in logits]
    return [(top.indices.tolist(), top.values.tolist()) for top in tops]


def link(**params: object) -> str:
    return f"/?{urlencode({k: str(v) for k, v in params.items()})}"


def wait_lens(page: Page, position: int) -> None:
    panel = page.locator("#lens-panel")
    expect(panel).to_be_visible()
    expect(panel).to_have_attribute("data-position", str(position))
    expect(panel).to_have_attribute("aria-busy", "false")


def drawn_table(page: Page) -> list[dict]:
    """Each row the page drew: its layer and its cells' id, text (textContent) and shown probability."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#lens-body tr')].map((tr) => ({
             layer: tr.dataset.layer,
             name: tr.querySelector('th').textContent,
             cells: [...tr.querySelectorAll('td')].map((td) => ({
               id: Number(td.dataset.id),
               text: td.querySelector('.lens-token').textContent,
               probability: td.querySelector('.lens-probability').textContent,
               final: td.classList.contains('is-final'),
               actual: td.classList.contains('is-actual'),
               title: td.querySelector('.lens-token').title,
             })),
           }))"""
    )


def shown_probability(p: float) -> str:
    return f"{p * 100:.1f}%" if p >= 0.001 else None


def assert_table_is_the_answer(page: Page, answer: dict, reference, text: str) -> None:
    rows = drawn_table(page)
    assert [row["layer"] for row in rows] == [str(layer) for layer in LAYERS]
    expected = reference_top(reference, text, answer["position"], 5)
    final = answer["layers"][-1]["predictions"][0]["id"]
    for row, layer, (ref_ids, ref_probabilities) in zip(rows, answer["layers"], expected, strict=True):
        predictions = layer["predictions"]
        assert [c["id"] for c in row["cells"]] == [p["id"] for p in predictions] == ref_ids
        assert max(abs(p["probability"] - r) for p, r in zip(predictions, ref_probabilities, strict=True)) <= TOLERANCE
        for cell, p in zip(row["cells"], predictions, strict=True):
            if p["display"].strip() and p["display"].isprintable():
                assert cell["text"] == p["display"]  # as the API decoded it, never parsed as markup
            else:  # whitespace or control characters alone: shown as visible signs, never as nothing
                assert cell["text"].strip() and cell["text"].isprintable()
            if p["probability"] >= 0.001:
                assert cell["probability"] == shown_probability(p["probability"])
            assert cell["final"] == (p["id"] == final)
            assert p["token"] in cell["title"]


def test_the_table_is_the_apis_answer_and_transformers(page: Page, local_api, reference):
    page.goto(link(text=TEXT, model=GPT2))
    n = len(reference[0](TEXT)["input_ids"])
    wait_lens(page, n - 1)  # no focus, no lens=: the last token
    answer = local_api.post("/api/v1/lens", json={"text": TEXT, "model": GPT2, "position": n - 1}).json()
    assert_table_is_the_answer(page, answer, reference, TEXT)
    names = [row["name"] for row in drawn_table(page)]
    assert names == ["embeddings", "after layer 0", "after layer 1"]
    expect(page.locator("#lens-head th")).to_have_text(["Layer", "#1", "#2", "#3", "#4", "#5"])
    expect(page.locator("#lens-select")).to_have_value(str(n - 1))
    expect(page.locator("#lens-note")).to_contain_text("the last token")


def test_a_clicked_token_the_select_and_the_url_choose_the_position(page: Page, local_api, reference):
    page.goto(link(text=TEXT, model=GPT2))
    n = len(reference[0](TEXT)["input_ids"])
    wait_lens(page, n - 1)
    page.locator("#tokens button.chip").nth(1).click()  # " world": the lens reads the focused token
    wait_lens(page, 1)
    assert parse_qs(urlsplit(page.url).query)["focus"] == ["1"]
    answer = local_api.post("/api/v1/lens", json={"text": TEXT, "model": GPT2, "position": 1}).json()
    assert_table_is_the_answer(page, answer, reference, TEXT)
    # the input's own next token (",") is named in the note and marked where a layer predicts it
    expect(page.locator("#lens-note .lens-token.is-actual")).to_have_text(",")
    following = answer["tokens"][2]["text"]
    marked = [c["actual"] for row in drawn_table(page) for c in row["cells"]]
    predicted = [p["token"] == following for layer in answer["layers"] for p in layer["predictions"]]
    assert marked == predicted

    page.select_option("#lens-select", "4")
    wait_lens(page, 4)
    assert parse_qs(urlsplit(page.url).query)["lens"] == ["4"]
    answer = local_api.post("/api/v1/lens", json={"text": TEXT, "model": GPT2, "position": 4}).json()
    assert_table_is_the_answer(page, answer, reference, TEXT)

    page.goto(link(text=TEXT, model=GPT2, lens=3))  # a shared link opens at its position
    wait_lens(page, 3)
    expect(page.locator("#lens-select")).to_have_value("3")
    page.go_back()
    wait_lens(page, 4)
    page.locator("#tokens button.chip").nth(6).click()  # a click on a token moves the lens there again
    wait_lens(page, 6)
    assert "lens" not in parse_qs(urlsplit(page.url).query)


def test_the_full_token_limit_and_a_position_beyond_the_input(page: Page, local_api, reference):
    text = "Hello" + " attention" * 63
    assert len(reference[0](text)["input_ids"]) == 64
    page.goto(link(text=text, model=GPT2, lens=63))
    wait_lens(page, 63)
    answer = local_api.post("/api/v1/lens", json={"text": text, "model": GPT2, "position": 63}).json()
    assert_table_is_the_answer(page, answer, reference, text)
    assert page.locator("#lens-select option").count() == 64
    page.goto(link(text=TEXT, model=GPT2, lens=40))  # beyond this input: the last token, and the URL says so
    wait_lens(page, len(reference[0](TEXT)["input_ids"]) - 1)
    expect(page).not_to_have_url(re.compile(r"lens="))


@pytest.mark.parametrize("model", ["tiny-bert", "minilm"])
def test_no_panel_for_a_model_without_an_lm_head(page: Page, browser_log, model):
    page.goto(link(text="The cat sat on the mat.", model=model))
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    expect(page.locator("#results")).to_be_visible()
    expect(page.locator("#lens-panel")).to_be_hidden()
    assert browser_log.api_posts("/api/v1/lens") == 0


def test_switching_models_shows_and_hides_the_panel(page: Page, local_api):
    page.goto(link(text=TEXT, model="tiny-bert"))
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")
    expect(page.locator("#lens-panel")).to_be_hidden()
    page.goto(link(text=TEXT, model=GPT2))
    wait_lens(page, 8)
    page.goto(link(text=TEXT, model="tiny-bert"))
    wait_until(page, "() => document.getElementById('lens-panel').hidden")


def test_token_text_is_text_never_markup(page: Page):
    text = '<b>bold</b> <img src=x onerror="window.__owned=1"> cat'
    page.goto(link(text=text, model=GPT2, lens=1))
    wait_lens(page, 1)
    found = page.evaluate(
        """() => ({
             markup: document.querySelectorAll('#lens-panel b, #lens-panel img, #lens-panel i').length,
             owned: Boolean(window.__owned),
             options: [...document.querySelectorAll('#lens-select option')].map((o) => o.textContent),
             chips: [...document.querySelectorAll('#tokens button.chip')].map((c) => c.textContent),
             note: document.querySelector('#lens-note .lens-token').textContent,
           })"""
    )
    assert found["markup"] == 0 and not found["owned"]
    assert [option.split(" · ", 1)[1] for option in found["options"]] == found["chips"]
    assert found["note"] == found["chips"][1]


def test_the_panel_in_chinese(page: Page, local_api):
    page.goto(link(text=TEXT, model=GPT2, lang="zh"))
    wait_lens(page, 8)
    names = [row["name"] for row in drawn_table(page)]
    assert names == ["嵌入层", "第 0 层之后", "第 1 层之后"]
    expect(page.locator("#lens-heading")).to_contain_text("逐层透镜")
    skip = "header, footer, main > :not(#results), #results > :not(#lens-panel)"
    assert english_left(page, skip) == []
