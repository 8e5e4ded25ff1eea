"""The toy's compare and shuffle panels in real Chromium: the drawn numbers against POST /api/v1/toy
fetched by the test, and the permutation check against numpy on two API answers."""

from __future__ import annotations

import re

import numpy as np
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese

VARIANTS = ["scaled_dot", "dot", "additive", "hard", "sample", "gumbel", "linear", "probsparse", "general", "cosine"]
EXAMPLE = {
    "queries": [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]],
    "values": [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]],
}


def toy(api, **body) -> dict:
    request = {"queries": EXAMPLE["queries"], "keys": EXAMPLE["queries"], "values": EXAMPLE["values"], **body}
    response = api.post("/api/v1/toy", json=request)
    assert response.status_code == 200, response.text
    return response.json()


def drawn(page: Page, key: str) -> list[list[float]]:
    return page.evaluate("(key) => document.querySelector(`[data-matrix=\"${key}\"]`).data[0].z", key)


def test_compare_draws_every_variant_of_the_chosen_head(page: Page, api):
    page.goto("/toy?compare=1&head=1&temperature=0.5")
    cells = page.locator("#compare-grid .compare-cell")
    expect(cells).to_have_count(len(VARIANTS))
    assert cells.evaluate_all("(cs) => cs.map((c) => c.dataset.variant)") == VARIANTS
    for variant in VARIANTS:
        expect(page.locator(f'[data-matrix="compare-{variant}"]')).to_have_class(re.compile("js-plotly-plot"))
        expected = toy(api, variant=variant, temperature=0.5)["steps"]["softmax"][1]
        assert np.max(np.abs(np.array(drawn(page, f"compare-{variant}")) - expected)) == 0, variant
    # hard rows are one-hot; scaled and plain dot products differ (1/sqrt(d_keys) is not 1)
    hard = np.array(drawn(page, "compare-hard"))
    assert set(hard.flatten()) <= {0.0, 1.0} and (hard.sum(axis=1) == 1).all()
    assert np.max(np.abs(np.array(drawn(page, "compare-dot")) - np.array(drawn(page, "compare-scaled_dot")))) > 0.01

    page.locator("#compare-toggle").click()
    expect(page.locator("#compare-grid")).to_be_hidden()
    expect(page).not_to_have_url(re.compile(r"compare=1"))


def shuffle_check(api, order: list[int], **body) -> float:
    """max |out(shuffled input)[i] - out(input)[order[i]]|, computed here with numpy."""
    original = np.array(toy(api, **body)["steps"]["output"])
    shuffled_body = {
        "queries": [EXAMPLE["queries"][i] for i in order],
        "keys": [EXAMPLE["queries"][i] for i in order],
        "values": [EXAMPLE["values"][i] for i in order],
    }
    response = api.post("/api/v1/toy", json={**shuffled_body, **body})
    assert response.status_code == 200, response.text
    return float(np.max(np.abs(np.array(response.json()["steps"]["output"]) - original[order])))


def shown_order(page: Page) -> list[int]:
    text = page.locator("#shuffle-order").text_content() or ""
    return [int(i) for i in re.search(r"\[([\d, ]+)\]", text).group(1).split(", ")]


def test_shuffling_the_tokens_permutes_the_outputs_only_without_positions(page: Page, api):
    page.goto("/toy")
    expect(page.locator("#stage")).to_have_attribute("data-step", "input")
    page.locator("#shuffle-toggle").click()
    result = page.locator("#shuffle-result")
    expect(result).to_contain_text("✓")
    expect(page).to_have_url(re.compile(r"shuffle=1"))
    order = shown_order(page)
    assert sorted(order) == [0, 1, 2, 3] and order != [0, 1, 2, 3]
    reference = shuffle_check(api, order)
    assert reference < 1e-12
    assert abs(float(result.get_attribute("data-diff") or "nan") - reference) < 1e-12
    # the two drawn matrices are the API's: the output rows shuffled, and the output of the shuffled input
    original = np.array(toy(api)["steps"]["output"])
    assert np.allclose(drawn(page, "shuffle-expected"), original[order], atol=0)

    for positions in ("sinusoidal", "rope", "alibi"):
        page.goto(f"/toy?shuffle=1&positions={positions}")
        expect(result).to_contain_text("✗")
        reference = shuffle_check(api, order, positions=positions)
        assert reference > 1e-3, positions
        assert abs(float(result.get_attribute("data-diff") or "nan") - reference) < 1e-9, positions


def test_the_panels_speak_chinese(page: Page):
    page.goto("/toy?compare=1&shuffle=1")
    expect(page.locator("#shuffle-result")).to_contain_text("✓")
    switch_to_chinese(page)
    expect(page.locator("#shuffle-result")).to_contain_text("✓")
    expect(page.locator("#compare-grid .compare-cell")).to_have_count(len(VARIANTS))
    assert english_left(page) == []
