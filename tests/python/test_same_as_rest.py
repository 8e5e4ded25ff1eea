"""Each analysis of the Python API answers what its REST route answers for the same input, on MiniLM and on the
tiny GPT-2 checkpoint: the REST is the contract (its own tests hold it to references), so the numbers must agree
to 1e-6 and the tokens, settings and shapes exactly."""

from __future__ import annotations

import numpy as np
import pytest

import attnscope

TOLERANCE = 1e-6
TEXT = "The cat sat on the mat because it was tired."
MODELS = ["minilm", "tiny-gpt2"]


def post(rest, route: str, **body):
    r = rest.post(f"/api/v1/{route}", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def close(got: np.ndarray, want: object, tolerance: float = TOLERANCE) -> None:
    want_array = np.asarray(want, dtype=np.float64)
    assert got.shape == want_array.shape
    assert np.abs(got.astype(np.float64) - want_array).max() <= tolerance


def same_tokens(tokens, want: list[dict]) -> None:
    assert [(t.text, t.display, t.start, t.end, t.special) for t in tokens] == [
        (w["text"], w["display"], w["start"], w["end"], w["special"]) for w in want]


@pytest.mark.parametrize("model_id", MODELS)
def test_metrics_and_detectors(models, rest, model_id):
    model = models[model_id]
    got, detected = model.metrics(TEXT), model.detect()
    want = post(rest, "metrics", text=TEXT, model=model_id)
    same_tokens(got.tokens, want["tokens"])
    assert set(got.metrics) == set(want["metrics"]) and got.labels == want["labels"]
    for name, values in got.metrics.items():
        assert values.dtype == np.float32 and values.shape == (model.info.layers, model.info.heads)
        close(values, want["metrics"][name])
    assert {k: (t.metric, t.at_least) for k, t in got.thresholds.items()} == {
        k: (t["metric"], t["at_least"]) for k, t in want["thresholds"].items()}
    repeated = want["repeated"]
    assert (detected.ids, detected.start, detected.half, detected.seed) == (
        repeated["ids"], repeated["start"], repeated["half"], repeated["seed"])
    close(detected.previous_token, repeated["previous_token"])
    close(detected.induction, repeated["induction"])
    assert len(detected.tokens) == len(detected.ids)


@pytest.mark.parametrize("model_id", MODELS)
def test_mean_and_rollout(models, rest, model_id):
    model = models[model_id]
    mean, rollout = model.mean(TEXT), model.rollout(TEXT, residual=0.3)
    close(mean.maps, post(rest, "aggregate", text=TEXT, model=model_id, kind="mean")["maps"])
    want = post(rest, "aggregate", text=TEXT, model=model_id, kind="rollout", residual=0.3)
    close(rollout.maps, want["maps"])
    assert (mean.kind, mean.residual, rollout.kind, rollout.residual) == ("mean", None, "rollout", 0.3)
    assert rollout.maps.shape == (model.info.layers, len(mean.ids), len(mean.ids))


@pytest.mark.parametrize("model_id", MODELS)
def test_contributions(models, rest, model_id):
    got = models[model_id].contributions(TEXT, layers=[1, 0], heads=[3, 0])
    want = post(rest, "contributions", text=TEXT, model=model_id, layers=[1, 0], heads=[3, 0])
    assert (got.layers, got.heads) == ([1, 0], [3, 0])
    close(got.contributions, want["contributions"])
    close(got.layer_sum, want["layer_sum"])


def test_the_lens(gpt2, rest):
    got = gpt2.lens(TEXT, position=3, top_k=4)
    want = post(rest, "lens", text=TEXT, model="tiny-gpt2", position=3, top_k=4)
    assert got.layers == [layer["layer"] for layer in want["layers"]] and got.position == 3
    assert got.top_ids.tolist() == [[p["id"] for p in layer["predictions"]] for layer in want["layers"]]
    assert got.top_displays == [[p["display"] for p in layer["predictions"]] for layer in want["layers"]]
    close(got.probabilities, [[p["probability"] for p in layer["predictions"]] for layer in want["layers"]])
    close(got.logits, [[p["logit"] for p in layer["predictions"]] for layer in want["layers"]])


@pytest.mark.parametrize(("model_id", "edit"), [
    ("minilm", {"layer": 2, "heads": [5], "temperature": 3, "hidden_keys": [1]}),
    ("tiny-gpt2", {"layer": 0, "heads": [2], "kind": "probsparse", "factor": 1}),
])
def test_edits_and_their_effect(models, rest, model_id, edit):
    model = models[model_id]
    got = model.attention(TEXT, layers=[edit["layer"], model.info.layers - 1], edit=edit)
    want = post(rest, "attention", text=TEXT, model=model_id, layers=[edit["layer"], model.info.layers - 1],
                edit=edit)
    assert want["edited"] is True and got.edit is not None and got.edit["layer"] == edit["layer"]
    close(got.maps, want["attention"])
    assert np.abs(got.maps - model.attention(TEXT, layers=got.layers).maps).max() > 1e-3  # the edit changed them
    effect = model.edit_effect(TEXT, edit)
    answer = post(rest, "edit/effect", text=TEXT, model=model_id, edit=edit)
    assert effect.layers == answer["layers"]
    close(effect.row_change_mean, answer["row_change_mean"])
    close(effect.row_change_max, answer["row_change_max"])
    close(effect.hidden_by_token, answer["hidden_by_token"])
    assert effect.hidden_relative == pytest.approx(answer["hidden_relative"], abs=TOLERANCE)
    if answer["next_token"] is None:
        assert effect.next_token is None
    else:
        assert effect.next_token is not None
        assert (effect.next_token.before, effect.next_token.after) == (
            answer["next_token"]["before"]["id"], answer["next_token"]["after"]["id"])
        assert effect.next_token.kl == pytest.approx(answer["next_token"]["kl"], abs=TOLERANCE)
    if answer["probsparse"] is None:
        assert effect.probsparse is None
    else:
        assert effect.probsparse is not None and effect.probsparse.active.tolist() == answer["probsparse"]["active"]
        close(effect.probsparse.measure, answer["probsparse"]["measure"])


def test_an_edit_may_be_the_models_own(minilm):
    from model.nets.edit import Edit

    as_dict = minilm.attention(TEXT, edit={"layer": 1, "heads": [0, 3], "ablate": True})
    as_edit = minilm.attention(TEXT, edit=Edit(layer=1, heads=(0, 3), ablate=True))
    assert np.array_equal(as_dict.maps, as_edit.maps) and as_dict.edit == as_edit.edit


@pytest.mark.parametrize(("model_id", "target", "answer"), [
    ("minilm", "heads", None), ("minilm", "residual", None), ("tiny-gpt2", "heads", [5, 7]),
    ("tiny-gpt2", "residual", [" the", 7]),
])
def test_patching(models, rest, model_id, target, answer):
    clean, corrupted = "The cat sat on the mat.", "The dog sat on the mat."
    got = models[model_id].patch(clean, corrupted, target=target, answer=answer)
    body = {"clean": clean, "corrupted": corrupted, "model": model_id, "target": target}
    want = post(rest, "patch", **body, **({"answer": answer} if answer else {}))
    assert (got.metric_name, got.columns, got.axes, got.normalised) == (
        want["metric_name"], want["columns"], want["axes"], want["normalised"])
    assert got.metric_clean == pytest.approx(want["metric"]["clean"], abs=TOLERANCE)
    assert got.metric_corrupted == pytest.approx(want["metric"]["corrupted"], abs=TOLERANCE)
    close(got.patched, want["patched"])
    if want.get("grid") is not None:
        assert got.grid is not None
        close(got.grid, want["grid"])
    assert got.answer == (None if want["answer"] is None else [(a["id"], a["display"]) for a in want["answer"]])
    same_tokens(got.corrupted_tokens, want["corrupted_tokens"])


@pytest.mark.parametrize(("model_id", "target", "settings"), [
    ("minilm", "A dog lay on a rug.", {"steps": 32}),
    ("minilm", "A dog lay on a rug.", {"method": "gradient_x_input"}),
    ("tiny-gpt2", 5, {"steps": 32, "baseline": "zeros"}),
    ("tiny-gpt2", 5, {"steps": 32, "baseline": {"text": "The dog sat on the mat."}}),
])
def test_attribution(models, rest, model_id, target, settings):
    text = "The cat sat on the mat." if isinstance(settings.get("baseline"), dict) else TEXT
    got = models[model_id].attribute(text, target, **settings)
    want = post(rest, "attribution", text=text, model=model_id, target=target, **settings)
    assert (got.method, got.steps, got.output_name, got.baseline, got.rows) == (
        want["method"], want["steps"], want["output_name"], want["baseline"]["kind"], want["rows"])
    close(got.scores, want["scores"])
    for name, values in got.compared.items():
        close(values, want["compared"][name])
    assert got.output == pytest.approx(want["output"], abs=TOLERANCE)
    assert got.baseline_output == pytest.approx(want["baseline"]["output"], abs=TOLERANCE)
    for name, rho in got.agreement.items():
        assert rho == pytest.approx(want["agreement"][name], abs=TOLERANCE)
    if want["completeness"] is not None:
        assert got.completeness is not None and got.completeness.ok == want["completeness"]["ok"]
        assert got.completeness.sum == pytest.approx(want["completeness"]["sum"], abs=TOLERANCE)


def test_the_results_are_frozen(minilm):
    answer = minilm.mean("A cat.")
    with pytest.raises(AttributeError):
        answer.kind = "rollout"  # type: ignore[misc]
    assert isinstance(answer, attnscope.Aggregate) and answer.model == "minilm"
