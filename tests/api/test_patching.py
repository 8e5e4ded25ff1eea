"""POST /api/v1/patch through HTTP: the answer equals model/analysis/patching.py called on the same checkpoint
(its numbers are tested against transformers in tests/model/test_patching.py), and every refusal says what to
change."""

from __future__ import annotations

import pytest
import torch

from model.analysis import patching
from model.checkpoints import load

CLEAN, CORRUPTED = "The cat sat on the mat.", "The dog sat on the mat."


def post(client, **body):
    return client.post("/api/v1/patch", json=body)


def assert_equal(got: dict, found: patching.Patching) -> None:
    assert got["metric_name"] == found.metric_name and got["target"] == found.target
    assert got["metric"] == {"clean": pytest.approx(found.clean, abs=1e-7),
                             "corrupted": pytest.approx(found.corrupted, abs=1e-7)}
    assert got["axes"] == list(found.axes) and got["normalised"] == found.normalised
    assert got["gap"] == pytest.approx(found.gap, abs=1e-6) and got["min_gap"] == pytest.approx(found.min_gap, rel=1e-6)
    assert torch.tensor(got["patched"]).shape == found.patched.shape
    assert torch.tensor(got["patched"]).sub(found.patched).abs().max() <= 1e-6
    if found.grid is None:
        assert got["grid"] is None
    else:
        assert torch.tensor(got["grid"]).shape == found.grid.shape
        assert torch.tensor(got["grid"]).sub(found.grid).abs().max() <= 1e-6


SHAPES = {"heads": ("head",), "pattern": ("head",), "residual": ("position",), "mlp": ("position",),
          "head_position": ("head", "position")}


@pytest.mark.parametrize("target", patching.TARGETS)
def test_minilm_answer_equals_the_model_function(client, target):
    clean_text, corrupted_text = ("The cat sat.", "The dog sat.") if target == "head_position" else (CLEAN, CORRUPTED)
    r = post(client, clean=clean_text, corrupted=corrupted_text, target=target, model="minilm")
    assert r.status_code == 200, r.text
    got = r.json()
    model = load("minilm")
    clean, corrupted = model.tokenizer.encode(clean_text), model.tokenizer.encode(corrupted_text)
    assert_equal(got, patching.patch(model, clean, corrupted, target))
    assert [t["text"] for t in got["clean_tokens"]] == [t.text for t in clean.tokens]
    assert [t["text"] for t in got["corrupted_tokens"]] == [t.text for t in corrupted.tokens]
    assert got["axes"] == ["layer", *SHAPES[target]] and got["rows"] == "layer" and got["columns"] == SHAPES[target][0]
    assert got["answer"] is None and got["metric"]["clean"] == pytest.approx(1.0, abs=1e-6)
    sizes = {"head": 12, "position": len(clean)}
    assert torch.tensor(got["grid"]).shape == (6, *(sizes[axis] for axis in SHAPES[target]))
    assert (got["n_heads"], got["n_kv_heads"], got["normalised"]) == (12, 12, True)


def test_a_tiny_gap_answers_the_raw_metric_and_says_the_grid_is_not_normalised(client):
    """"the" → "a" moves MiniLM's cosine similarity by about 0.005: below 5 % of its scale 1."""
    r = post(client, clean=CLEAN, corrupted="The cat sat on a mat.", target="mlp")
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["normalised"] is False and got["grid"] is None and got["min_gap"] == pytest.approx(0.05)
    assert 0 < got["gap"] < 0.05
    assert got["gap"] == pytest.approx(got["metric"]["clean"] - got["metric"]["corrupted"], abs=1e-6)
    assert torch.tensor(got["patched"]).shape == (6, 9)
    model = load("minilm")
    assert_equal(got, patching.patch(model, model.tokenizer.encode(CLEAN),
                                     model.tokenizer.encode("The cat sat on a mat."), "mlp"))


def test_gpt2_answer_as_ids_or_text(local_client, local_dirs):
    ids = post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2", answer=[328, 326])
    text = post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2", answer=[" mat", " cat"])
    assert ids.status_code == 200, ids.text
    assert text.json() == ids.json()
    model = load(local_dirs["gpt2"])
    found = patching.patch(model, model.tokenizer.encode(CLEAN), model.tokenizer.encode(CORRUPTED), "heads", [328, 326])
    got = ids.json()
    assert_equal(got, found)
    assert got["metric_name"] == "logit_difference"
    assert got["answer"] == [{"id": 328, "token": "Ġmat", "display": " mat"},
                             {"id": 326, "token": "Ġcat", "display": " cat"}]


def error_of(r, status: int) -> dict:
    assert r.status_code == status, r.text
    body = r.json()
    assert body["detail"]
    return body["errors"][0]


def test_refusals(client, local_client):
    counts = error_of(post(client, clean=CLEAN, corrupted="A dog.", model="minilm"), 422)
    assert counts["type"] == "token_counts_differ" and counts["ctx"] == {"clean": 9, "corrupted": 5}
    assert "9 tokens" in counts["msg"] and "5" in counts["msg"] and counts["loc"] == ["body", "corrupted"]
    encoder = error_of(post(client, clean=CLEAN, corrupted=CORRUPTED, answer=[1, 2]), 422)
    assert encoder["type"] == "answer_not_allowed" and encoder["loc"] == ["body", "answer"]
    same = error_of(post(client, clean=CLEAN, corrupted=CLEAN, target="pattern"), 422)
    assert same["type"] == "metric_unchanged" and "nothing for a patch to restore" in same["msg"]
    # a head and position grid is H times the residual grid's runs: 37 tokens fit, and the heads grid still does
    position = error_of(post(client, clean=" ".join(["cat"] * 40), corrupted=" ".join(["cat"] * 39 + ["dog"]),
                             target="head_position"), 422)
    assert position["type"] == "patch_too_large" and position["ctx"] == {"tokens": 42, "max_tokens": 37}
    assert "or target heads" in position["msg"]
    # MiniLM's residual grid fits up to 128 tokens ([CLS] + 127 words + [SEP] is 129); its heads grid still fits
    long_clean, long_corrupted = " ".join(["cat"] * 127), " ".join(["cat"] * 126 + ["dog"])
    large = error_of(post(client, clean=long_clean, corrupted=long_corrupted, target="residual"), 422)
    assert large["type"] == "patch_too_large" and large["ctx"] == {"tokens": 129, "max_tokens": 128}
    assert "at most 128 tokens or target heads" in large["msg"]
    missing = error_of(post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2"), 422)
    assert missing["type"] == "answer_missing"
    bad_id = error_of(post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2", answer=[328, 370]), 422)
    assert bad_id["type"] == "answer_out_of_range" and bad_id["ctx"] == {"id": 370, "vocab_size": 370}
    assert bad_id["loc"] == ["body", "answer", "1"]
    two = error_of(post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2", answer=[" mat", "world"]),
                   422)
    assert two["type"] == "answer_not_single_token" and "single token" in two["msg"]
    for answer in ([1], [1, 2, 3], [-1, 2], [1.0, 2], [True, 2], [""]):
        assert post(local_client, clean=CLEAN, corrupted=CORRUPTED, model="tiny-gpt2", answer=answer).status_code == 422
    too_long = error_of(post(client, clean="word " * 600, corrupted=CORRUPTED), 413)
    assert too_long["type"] == "too_many_tokens"
    unknown = error_of(post(client, clean=CLEAN, corrupted=CORRUPTED, model="nope"), 404)
    assert unknown["type"] == "unknown_model" and "minilm" in unknown["msg"]
    target = error_of(post(client, clean=CLEAN, corrupted=CORRUPTED, target="neurons"), 422)
    assert target["loc"] == ["body", "target"]
    assert post(client, clean=" ", corrupted=CORRUPTED).status_code == 422
