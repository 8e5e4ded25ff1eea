"""The ProbSparse edit through /attention, and POST /api/v1/edit/effect: the active queries' rows are the unedited
ones and every other row of the edited heads is 1/N (an encoder) or 1 on keys 0..i (a causal model), the
effect's row changes recomputed here with numpy from the two /attention answers, its next token from the lens,
and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from .test_edit import TEXT, maps

PROBSPARSE = {"layer": 2, "heads": [1, 4], "kind": "probsparse", "factor": 1, "seed": 5}


def effect(client, text=TEXT, model=None, **edit):
    body = {"text": text, "edit": edit} | ({"model": model} if model else {})
    r = client.post("/api/v1/edit/effect", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_probsparse_keeps_the_active_rows_and_gives_the_rest_the_mean(client):
    _, before = maps(client)
    answer, after = maps(client, edit=PROBSPARSE)
    assert answer["edited"] is True
    found = effect(client, **PROBSPARSE)["probsparse"]
    n = before.shape[-1]
    assert found["heads"] == [1, 4] and all(len(a) == min(np.ceil(np.log(n)), n) for a in found["active"])
    for head, active in zip(found["heads"], found["active"], strict=True):
        lazy = np.setdiff1d(np.arange(n), active)
        assert np.array_equal(after[2, head, active], before[2, head, active])
        assert np.abs(after[2, head, lazy] - 1 / n).max() <= 1e-7
    others = [h for h in range(12) if h not in (1, 4)]
    assert np.array_equal(after[:2], before[:2]) and np.array_equal(after[2, others], before[2, others])
    assert np.abs(after[3:] - before[3:]).max() > 1e-3  # later layers run on the edited hidden state


def test_the_row_changes_are_the_total_variation_between_the_two_answers(client):
    _, before = maps(client)
    _, after = maps(client, edit=PROBSPARSE)
    found = effect(client, **PROBSPARSE)
    change = 0.5 * np.abs(after[2:] - before[2:]).sum(axis=-1)  # (layers from 2, H, N)
    assert found["layers"] == [2, 3, 4, 5]
    assert np.abs(np.array(found["row_change_mean"]) - change.mean(axis=-1)).max() <= 1e-5
    assert np.abs(np.array(found["row_change_max"]) - change.max(axis=-1)).max() <= 1e-5
    assert found["next_token"] is None and 0 < found["hidden_relative"] < 1
    assert len(found["hidden_by_token"]) == before.shape[-1]


def test_an_ablation_is_measured_too(client):
    found = effect(client, layer=4, heads=[2], ablate=True)
    assert found["probsparse"] is None
    assert max(found["row_change_max"][0]) == 0  # ablation keeps the edited layer's weights
    assert found["hidden_relative"] > 0


def test_a_causal_model_sums_v_and_its_next_token_is_the_lens(local_client):
    text = "the cat sat on the mat and the dog"
    plain = local_client.post("/api/v1/attention", json={"text": text, "model": "tiny-gpt2", "layers": [0]}).json()
    before = np.array(plain["attention"])[0]
    edit = {"layer": 0, "heads": [2], "kind": "probsparse", "factor": 1}
    after = np.array(local_client.post("/api/v1/attention", json={"text": text, "model": "tiny-gpt2", "layers": [0],
                                                                  "edit": edit}).json()["attention"])[0]
    found = effect(local_client, text, "tiny-gpt2", **edit)
    n = before.shape[-1]
    active = found["probsparse"]["active"][0]
    lazy = np.setdiff1d(np.arange(n), active)
    assert np.array_equal(after[2, lazy], np.tril(np.ones((n, n)))[lazy])  # the cumulative sum of V
    assert np.array_equal(after[2, active], before[2, active])
    lens = local_client.post("/api/v1/lens", json={"text": text, "model": "tiny-gpt2", "top_k": 1}).json()
    top = lens["layers"][-1]["predictions"][0]
    assert (found["next_token"]["before"]["id"], found["next_token"]["before"]["probability"]) == pytest.approx(
        (top["id"], top["probability"]), rel=1e-5)
    assert found["next_token"]["kl"] >= 0


@pytest.mark.parametrize(("edit", "loc", "rule"), [
    ({"layer": 0, "kind": "probsparse", "temperature": 2}, ["body", "edit", "temperature"], "edit_probsparse_alone"),
    ({"layer": 0, "kind": "probsparse", "hidden_keys": [1]}, ["body", "edit", "hidden_keys"], "edit_probsparse_alone"),
    ({"layer": 0, "kind": "probsparse", "factor": 0}, ["body", "edit", "factor"], "greater_than_equal"),
    ({"layer": 0, "kind": "sparse"}, ["body", "edit", "kind"], "literal_error"),
    ({"layer": 9, "kind": "probsparse"}, ["body", "edit", "layer"], "index_out_of_range"),
])
@pytest.mark.parametrize("route", ["attention", "edit/effect"])
def test_a_probsparse_edit_that_cannot_be_applied_is_422(client, route, edit, loc, rule):
    r = client.post(f"/api/v1/{route}", json={"text": TEXT, "edit": edit})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert (error["loc"], error["type"]) == (loc, rule)


def test_effect_needs_an_edit(client):
    r = client.post("/api/v1/edit/effect", json={"text": TEXT})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "edit"]
