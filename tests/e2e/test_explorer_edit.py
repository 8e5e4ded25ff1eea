"""What-if edits on the explorer in real Chromium: the edit in the URL and the form, the banner, the edited
maps equal to the API's edited answer (later layers change, earlier ones do not), the difference map on a
diverging scale, and the one click back to the unedited answer; at 32 and at 512 tokens."""

from __future__ import annotations

import re

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_explorer_analysis import COMPACT, drawn, link, post, text_of, url_query, wait_title

EDIT = {"layer": 2, "heads": [5], "temperature": 3.0, "hidden_keys": [], "ablate": False}


def head(api, text: str, layer: int, index: int, edit: dict | None = None) -> np.ndarray:
    body = {"text": text, "layers": [layer], "heads": [index]}
    if edit is not None:
        body["edit"] = edit
    answer = post(api, "/api/v1/attention", body)
    assert answer.get("edited", False) is (edit is not None)
    return np.array(answer["attention"][0][0])


@pytest.mark.parametrize("n_tokens", [32, 512])
def test_an_edit_in_the_link_is_marked_compared_and_undone(page: Page, api, n_tokens: int):
    text = text_of(n_tokens)
    page.goto(link(text, layer=3, head=0, edit=2, edit_heads=5, edit_t=3))
    banner = page.locator("#edit-banner")
    expect(banner).to_be_visible()
    expect(banner).to_contain_text("layer 2, heads 5 · temperature 3")
    wait_title(page, "Layer 3 · Head 0 (edited)")
    edited, unedited = head(api, text, 3, 0, EDIT), head(api, text, 3, 0)
    assert np.abs(drawn(page) - edited).max() <= COMPACT
    assert np.abs(edited - unedited).max() > 1e-4  # the control: a later layer changes
    expect(page.locator("#kind-select")).to_be_disabled()

    # A layer before the edited one is unchanged.
    page.locator("#layer-select").select_option("1")
    wait_title(page, "Layer 1 · Head 0 (edited)")
    assert np.abs(drawn(page) - head(api, text, 1, 0)).max() <= COMPACT

    # The difference map: edited − unedited on a symmetric diverging scale.
    page.locator("#layer-select").select_option("3")
    wait_title(page, "Layer 3 · Head 0 (edited)")
    page.locator("#edit-diff").click()
    wait_title(page, "Layer 3 · Head 0: edited − unedited")
    assert url_query(page)["diff"] == ["1"]
    expect(page.locator("#edit-diff")).to_have_attribute("aria-pressed", "true")
    assert np.abs(drawn(page) - (edited - unedited)).max() <= 2 * COMPACT
    trace = page.evaluate("() => { const d = document.getElementById('heatmap').data[0]; return {zmin: d.zmin, zmax: d.zmax, colours: d.colorscale.map((s) => s[1])}; }")
    assert trace["zmin"] == -trace["zmax"] and trace["zmax"] >= np.abs(edited - unedited).max() - 2 * COMPACT
    assert trace["colours"][len(trace["colours"]) // 2] == "rgb(247,247,247)"  # white at 0
    expect(page.locator("#scale-legend")).to_contain_text("diverging")

    # One click returns to the unedited answer.
    page.locator("#edit-undo").click()
    wait_title(page, "Layer 3 · Head 0")
    expect(banner).to_be_hidden()
    assert not any(key.startswith("edit") or key == "diff" for key in url_query(page))
    assert np.abs(drawn(page) - unedited).max() <= COMPACT
    page.go_back()
    wait_title(page, "Layer 3 · Head 0: edited − unedited")


def test_the_edit_form_writes_the_url_and_shows_the_apis_edited_maps(page: Page, api):
    text = text_of(32)
    page.goto(link(text, layer=4, head=3))
    wait_title(page, "Layer 4 · Head 3")
    expect(page.locator("#edit-banner")).to_be_hidden()
    page.locator("#edit-layer").select_option("1")
    page.locator("#edit-heads").fill("0, 3")
    page.locator("#edit-hide").fill("2")
    page.locator("#edit-temperature").fill("0.5")
    page.locator("#edit-ablate").check()
    page.locator("#edit-apply").click()

    wait_title(page, "Layer 4 · Head 3 (edited)")
    params = url_query(page)
    assert params["edit"] == ["1"] and params["edit_heads"] == ["0,3"] and params["edit_hide"] == ["2"]
    assert params["edit_t"] == ["0.5"] and params["edit_ablate"] == ["1"]
    edit = {"layer": 1, "heads": [0, 3], "temperature": 0.5, "hidden_keys": [2], "ablate": True}
    assert np.abs(drawn(page) - head(api, text, 4, 3, edit)).max() <= COMPACT
    expect(page.locator("#edit-banner")).to_contain_text("keys 2 hidden")
    expect(page.locator("#edit-banner")).to_contain_text("ablated")
    # the grid is the edited answer's too: one edited summary was fetched
    expect(page.locator("body")).to_have_class(re.compile("is-edited"))

    # A malformed list is refused by the form, before any request.
    page.locator("#edit-heads").fill("zero")
    page.locator("#edit-apply").click()
    expect(page.locator("#edit-error")).to_be_visible()
    assert url_query(page)["edit_heads"] == ["0,3"]


@pytest.mark.expect_http_errors(422)
def test_an_edit_the_server_refuses_shows_its_message(page: Page, api):
    text = text_of(32)
    bad = {"text": text, "edit": {"layer": 1, "heads": [40], "temperature": 1, "hidden_keys": [], "ablate": False}}
    response = api.post("/api/v1/attention/summary?encoding=u16", json=bad)
    assert response.status_code == 422
    page.goto(link(text, layer=0, head=0, edit=1, edit_heads=40))
    status = page.locator("#status")
    expect(status).to_have_class(re.compile("is-error"))
    expect(status).to_contain_text(response.json()["detail"])

    # Sent from the form under a drawn map, the refusal shows beside the form too (the status line is at the
    # top, off screen), and goes when an answer comes.
    page.goto(link(text, layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")
    page.locator("#edit-layer").select_option("1")
    page.locator("#edit-heads").fill("40")
    page.locator("#edit-apply").click()
    expect(page.locator("#edit-error")).to_be_visible()
    expect(page.locator("#edit-error")).to_contain_text(response.json()["detail"])
    page.locator("#edit-heads").fill("3")
    page.locator("#edit-apply").click()
    expect(page.locator("#edit-error")).to_be_hidden()


def test_the_edit_form_starts_at_the_selected_heads_layer(page: Page):
    """Without an edit the form's layer follows the selected head's, until the learner picks another."""
    text = text_of(16)
    page.goto(link(text, layer=3, head=0))
    wait_title(page, "Layer 3 · Head 0")
    expect(page.locator("#edit-layer")).to_have_value("3")
    page.goto(link(text, layer=1, head=2))
    wait_title(page, "Layer 1 · Head 2")
    expect(page.locator("#edit-layer")).to_have_value("1")
    page.locator("#edit-layer").select_option("4")
    page.locator("#layer-select").select_option("2")
    wait_title(page, "Layer 2 · Head 2")
    expect(page.locator("#edit-layer")).to_have_value("4")  # the learner's choice is kept


def test_each_token_shows_the_index_the_hidden_keys_ask_for(page: Page, api):
    text = text_of(16)
    page.goto(link(text, layer=0, head=0))
    wait_title(page, "Layer 0 · Head 0")
    tokens = post(api, "/api/v1/attention", {"text": text, "layers": [0], "heads": [0]})["tokens"]
    shown = page.evaluate("""() => Array.from(document.querySelectorAll('#tokens button.chip'),
        (chip) => [getComputedStyle(chip, '::before').content, chip.textContent])""")
    assert [index for index, _ in shown] == [f'"{i}"' for i in range(len(tokens))]
    assert [text for _, text in shown] == [token["display"] for token in tokens]  # the chip's own text is the token's


def test_a_probsparse_edit_marks_the_active_queries_and_says_what_it_changed(page: Page, api):
    """The form's ProbSparse kind: the edited maps are the API's, the head's active queries are outlined on the
    large map (and no row of an unedited head is), and every number of the effect's sentences is the answer's."""
    from .helpers import switch_to_chinese

    text = text_of(32)
    page.goto(link(text, layer=2, head=4))
    wait_title(page, "Layer 2 · Head 4")
    page.locator("#edit-layer").select_option("2")
    page.locator("#edit-heads").fill("4")
    page.locator("#edit-kind").select_option("probsparse")
    expect(page.locator("#edit-temperature")).to_be_disabled()
    expect(page.locator("#edit-kind-note")).to_be_visible()
    page.locator("#edit-factor").fill("1")
    page.locator("#edit-apply").click()
    wait_title(page, "Layer 2 · Head 4 (edited)")
    params = url_query(page)
    assert params["edit_kind"] == ["probsparse"] and params["edit_c"] == ["1"]
    edit = {"layer": 2, "heads": [4], "kind": "probsparse", "factor": 1}
    assert np.abs(drawn(page) - head(api, text, 2, 4, edit)).max() <= COMPACT

    effect = post(api, "/api/v1/edit/effect", {"text": text, "edit": edit})
    active = effect["probsparse"]["active"][0]
    n = len(effect["tokens"])
    lines = page.locator("#edit-effect p")
    expect(lines.first).to_contain_text(f"{len(active)} of {n} queries keep their softmax row")
    expect(lines.first).to_contain_text(f"the other {n - len(active)} get the mean of V")
    expect(lines.nth(1)).to_contain_text(f"= {effect['hidden_relative']:.3f}")
    means = [f"layer {layer} {np.mean(row):.3f}" for layer, row in zip(effect["layers"], effect["row_change_mean"],
                                                                        strict=True)]
    expect(lines.nth(2)).to_contain_text(", ".join(means))
    outlined = page.evaluate("() => document.getElementById('heatmap').layout.shapes"
                             ".filter((s) => s.line.color === '#e64980').map((s) => s.y0 + 0.5)")
    assert sorted(outlined) == active  # every token is its own row here (no word view, specials shown)
    expect(page.locator("#heatmap")).to_contain_text(f"this head’s {len(active)} active queries")

    page.locator("#head-select").select_option("5")  # a head the edit left as it was: nothing outlined
    wait_title(page, "Layer 2 · Head 5 (edited)")
    assert page.evaluate("() => document.getElementById('heatmap').layout.shapes"
                         ".filter((s) => s.line.color === '#e64980').length") == 0

    switch_to_chinese(page)
    expect(page.locator("#edit-effect p").first).to_contain_text(f"{n} 个查询里有 {len(active)} 个保留 softmax 行")
