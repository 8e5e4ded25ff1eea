"""The explorer's word view, hidden special tokens, export buttons and head view in real Chromium, compared
with the API (and with numpy references written here) at 32 and at 512 tokens."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_explorer_analysis import COMPACT, drawn, link, post, text_of, url_query, wait_title

from .helpers import wait_until

PIECES = "The unbelievably tall giraffes were eating leaves."


def word_groups(tokens: list[dict]) -> list[list[int]]:
    """The words of a WordPiece tokenization: a "##" piece continues the word before it (specials alone)."""
    groups: list[list[int]] = []
    for i, token in enumerate(tokens):
        if token["text"].startswith("##") and groups and not tokens[groups[-1][0]]["special"]:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def test_word_view_merges_pieces_and_hidden_specials_renormalise_rows(page: Page, api):
    answer = post(api, "/api/v1/attention", {"text": PIECES, "layers": [2], "heads": [3]})
    tokens, weights = answer["tokens"], np.array(answer["attention"][0][0])
    groups = word_groups(tokens)
    assert any(len(group) > 1 for group in groups)  # "unbelievably" is several pieces
    page.goto(link(PIECES, layer=2, head=3))
    wait_title(page, "Layer 2 · Head 3")

    page.locator("#words-toggle").check()
    assert url_query(page)["words"] == ["1"]
    wait_until(page, "(n) => document.getElementById('heatmap').data[0].z.length === n", arg=len(groups))
    # sum over a word's key pieces, mean over its query pieces
    expected = np.array([[weights[np.ix_(q, k)].sum(axis=1).mean() for k in groups] for q in groups])
    assert np.abs(drawn(page) - expected).max() <= 4 * COMPACT
    assert np.abs(drawn(page).sum(axis=1) - 1).max() <= 1e-4  # rows still sum to 1
    labels = page.evaluate("() => document.getElementById('heatmap').layout.xaxis.ticktext")
    assert "unbelievably" in labels and "##bly" not in labels
    expect(page.locator("#heatmap .annotation-text")).to_contain_text("Word view")

    page.locator("#words-toggle").uncheck()
    page.locator("#specials-toggle").check()
    assert url_query(page)["specials"] == ["hide"]
    kept = [i for i, token in enumerate(tokens) if not token["special"]]
    wait_until(page, "(n) => document.getElementById('heatmap').data[0].z.length === n", arg=len(kept))
    block = weights[np.ix_(kept, kept)]
    assert np.abs(drawn(page) - block / block.sum(axis=1, keepdims=True)).max() <= 1e-4
    expect(page.locator("#heatmap .annotation-text")).to_contain_text("renormalised")
    assert "[CLS]" not in page.evaluate("() => document.getElementById('heatmap').layout.xaxis.ticktext")

    # Contributions are not shares: special tokens are dropped, rows are not renormalised.
    page.locator("#kind-select").select_option("contribution")
    wait_title(page, "Layer 2 · Head 3 · contribution ‖αf(x)‖")
    norms = np.array(post(api, "/api/v1/contributions", {"text": PIECES, "layers": [2], "heads": [3]})["contributions"][0][0])
    assert np.abs(drawn(page) - norms[np.ix_(kept, kept)]).max() <= 1e-5 * max(1.0, float(norms.max()))
    expect(page.locator("#heatmap .annotation-text")).to_contain_text("not renormalised")


def test_hidden_specials_at_512_tokens(page: Page, api):
    text = text_of(512)
    page.goto(link(text, layer=5, head=11, specials="hide"))
    wait_title(page, "Layer 5 · Head 11")
    wait_until(page, "() => document.getElementById('heatmap').data[0].z.length === 510")
    weights = np.array(post(api, "/api/v1/attention", {"text": text, "layers": [5], "heads": [11]})["attention"][0][0])
    block = weights[1:-1, 1:-1]
    assert np.abs(drawn(page) - block / block.sum(axis=1, keepdims=True)).max() <= 1e-3
    expect(page.locator("#specials-toggle")).to_be_checked()


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_exports_hold_the_numbers_on_screen_and_what_they_are(page: Page, api, n_tokens: int, tmp_path: Path):
    text = text_of(n_tokens)
    page.goto(link(text, layer=1, head=4))
    wait_title(page, "Layer 1 · Head 4")
    answer = post(api, "/api/v1/attention", {"text": text, "layers": [1], "heads": [4]})
    weights = np.array(answer["attention"][0][0])
    version = api.get("/healthz").json()["version"]

    with page.expect_download() as info:
        page.locator("#export-json").click()
    exported = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))
    meta = exported["meta"]
    assert meta["model"] == answer["model"] and meta["text"] == text and meta["pair"] is None
    assert (meta["layer"], meta["head"], meta["kind"], meta["edit"]) == (1, 4, "weight", None)
    assert meta["version"] == version
    assert meta["tokens"] == [token["text"] for token in answer["tokens"]]
    assert np.abs(np.array(exported["matrix"]) - weights).max() <= COMPACT
    assert info.value.suggested_filename.endswith(".json")

    with page.expect_download() as info:
        page.locator("#export-csv").click()
    lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    header = {line[2:].split(": ", 1)[0]: json.loads(line[2:].split(": ", 1)[1]) for line in lines if line.startswith("# ")}
    assert header["layer"] == 1 and header["head"] == 4 and header["kind"] == "weight" and header["version"] == version
    table = [line.split(",") for line in lines if not line.startswith("# ")]
    numbers = np.array([[float(v) for v in row[1:]] for row in table[1:]])
    assert numbers.shape == (n_tokens, n_tokens)
    assert np.abs(numbers - weights).max() <= COMPACT

    with page.expect_download() as info:
        page.locator("#export-svg").click()
    svg = Path(info.value.path()).read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "Layer 1 · Head 4" in svg
    with page.expect_download() as info:
        page.locator("#export-png").click()
    assert Path(info.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_export_of_an_edited_difference_says_so(page: Page, api):
    text = text_of(32)
    page.goto(link(text, layer=3, head=0, edit=2, edit_heads=5, edit_t=3, diff=1))
    wait_title(page, "Layer 3 · Head 0: edited − unedited")
    with page.expect_download() as info:
        page.locator("#export-json").click()
    meta = json.loads(Path(info.value.path()).read_text(encoding="utf-8"))["meta"]
    assert meta["kind"] == "difference"
    assert meta["edit"] == {"layer": 2, "heads": [5], "temperature": 3, "hidden_keys": [], "ablate": False}


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_the_head_view_shows_the_selected_layer(page: Page, api, n_tokens: int):
    text = text_of(n_tokens)
    page.goto(link(text, layer=2, head=0))
    wait_title(page, "Layer 2 · Head 0")
    view = page.locator("#head-view")
    expect(view).to_have_attribute("data-layer", "2")
    expect(view.locator(".head-view-toggle")).to_have_count(12)
    expect(view.locator("canvas").first).to_be_visible()
    expect(page.locator("#head-view-layer")).to_have_text("layer 2")
    posts = page.evaluate("() => performance.getEntriesByType('resource').filter((e) => e.name.includes('/api/v1/attention?')).length")
    assert posts == 1  # the large map and the head view share one download of the layer
    page.get_by_role("button", name="layer 4 head 0", exact=True).click()
    expect(view).to_have_attribute("data-layer", "4")
    expect(page.locator("#head-view-layer")).to_have_text("layer 4")

    # A token clicked in the head view is the page's focus: in the URL, on the chips and on the large map.
    view.locator(".head-view-queries .head-view-token[data-index='3']").click()
    expect(page).to_have_url(re.compile(r"focus=3(&|$)"))
    expect(page.locator("#tokens button.chip[data-index='3']")).to_have_attribute("aria-pressed", "true")
    wait_until(page,
        "() => document.getElementById('heatmap').layout.shapes.some((s) => s.type === 'rect' && s.x0 === 2.5 && s.x1 === 3.5)"
    )
    # and a chip's focus reaches the head view
    page.locator("#tokens button.chip[data-index='6']").click()
    expect(view.locator(".head-view-queries .head-view-token[data-index='6']")).to_have_class(re.compile("is-active"))
