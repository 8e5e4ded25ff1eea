"""POST /api/v1/attribution through HTTP: the answer equals model/analysis/attribution.py called on the same
checkpoint (its numbers are tested against transformers in tests/model/test_attribution.py), and every
refusal names the field to change."""

from __future__ import annotations

import pytest

from model.analysis import attribution
from model.checkpoints import load

TEXT = "The cat sat on the mat."
TARGET = "A dog lay on a rug."


def post(client, **body):
    return client.post("/api/v1/attribution", json=body)


def assert_equal_to_the_function(got: dict, found: attribution.Attribution) -> None:
    assert got["scores"] == pytest.approx(list(found.scores), rel=1e-6, abs=1e-9)
    assert got["output"] == pytest.approx(found.output, abs=1e-7)
    assert got["baseline"] == {"kind": found.baseline, "token_id": found.baseline_token, "token": found.baseline_text,
                               "text": found.baseline_source, "output": pytest.approx(found.baseline_output, abs=1e-7)}
    assert got["warning"] == found.warning
    assert (got["method"], got["steps"], got["rows"], got["output_name"]) == (
        found.method, found.steps, found.rows, found.output_name)
    for name in attribution.COMPARED:
        assert got["compared"][name] == pytest.approx(list(found.compared[name]), abs=1e-7)
        assert got["agreement"][name] == pytest.approx(found.agreement[name], abs=1e-9)
    if found.completeness is None:
        assert got["completeness"] is None
    else:
        assert got["completeness"]["sum"] == pytest.approx(found.completeness.sum, abs=1e-7)
        assert got["completeness"]["difference"] == pytest.approx(found.completeness.difference, abs=1e-7)
        assert got["completeness"]["relative_gap"] == pytest.approx(found.completeness.relative_gap, abs=1e-6)
        assert (got["completeness"]["ok"], got["completeness"]["reason"]) == (found.completeness.ok,
                                                                              found.completeness.reason)


def test_minilm_answer_equals_the_model_function(client):
    r = post(client, text=TEXT, target=TARGET, model="minilm")
    assert r.status_code == 200, r.text
    got = r.json()
    model = load("minilm")
    encoded = model.tokenizer.encode(TEXT)
    found = attribution.attribute(model, encoded, TARGET)  # the defaults: integrated gradients, DEFAULT_STEPS, mean
    assert [t["text"] for t in got["tokens"]] == [t.text for t in encoded.tokens]
    assert got["target"] == TARGET and got["steps"] == attribution.DEFAULT_STEPS
    assert got["baseline"]["kind"] == "mean" and got["rows"] == "mean"
    assert_equal_to_the_function(got, found)
    assert got["completeness"]["relative_gap"] <= 0.01 and got["completeness"]["ok"] and got["warning"] is None


@pytest.mark.parametrize("baseline", ["pad", "mask", "zeros", {"text": TARGET}])
def test_each_baseline_answer_equals_the_model_function(client, baseline):
    r = post(client, text=TEXT, target=TARGET, model="minilm", steps=attribution.MIN_STEPS, baseline=baseline)
    assert r.status_code == 200, r.text
    model = load("minilm")
    found = attribution.attribute(model, model.tokenizer.encode(TEXT), TARGET, "integrated_gradients",
                                  attribution.MIN_STEPS, baseline)
    got = r.json()
    assert got["baseline"]["kind"] == (baseline if isinstance(baseline, str) else "text")
    assert_equal_to_the_function(got, found)


@pytest.fixture(scope="module")
def llama_client(llama_dirs):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(allowed_hosts=["testserver"], model_paths=[llama_dirs["llama"]]))) as c:
        yield c


def test_an_unreliable_answer_claims_no_ranking_and_says_what_to_change(llama_client, llama_dirs):
    text = "The cat sat on the mat because it was warm."
    r = post(llama_client, text=text, target=5, model="tiny-llama", steps=64, baseline="zeros")
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["completeness"]["ok"] is False and got["completeness"]["reason"] == "gap"
    assert got["completeness"]["relative_gap"] > attribution.COMPLETENESS_TOLERANCE
    assert got["agreement"] == {"attention": None, "rollout": None, "contributions": None}
    assert "unreliable" in got["warning"] and "up to 512" in got["warning"] and "baseline" in got["warning"]
    model = load(llama_dirs["llama"])
    assert_equal_to_the_function(got, attribution.attribute(model, model.tokenizer.encode(text), 5,
                                                            "integrated_gradients", 64, "zeros"))
    r = post(llama_client, text=text, target=5, model="tiny-llama")  # the default baseline and steps
    assert r.status_code == 200, r.text
    assert r.json()["completeness"]["ok"] is True and r.json()["warning"] is None
    assert None not in r.json()["agreement"].values()


def test_gpt2_gradient_x_input_equals_the_model_function(local_client, local_dirs):
    r = post(local_client, text="Hello world, attention is all you need.", target=7, model="tiny-gpt2",
             method="gradient_x_input")
    assert r.status_code == 200, r.text
    model = load(local_dirs["gpt2"])
    found = attribution.attribute(model, model.tokenizer.encode("Hello world, attention is all you need."), 7,
                                  "gradient_x_input")
    got = r.json()
    assert got["baseline"]["kind"] == "mean" and got["rows"] == "last" and got["completeness"] is None
    assert_equal_to_the_function(got, found)


def test_a_one_token_text_has_no_rank_correlation(local_client):
    r = post(local_client, text="Hello", target=7, model="tiny-gpt2", steps=attribution.MIN_STEPS)
    assert r.status_code == 200, r.text
    got = r.json()
    assert len(got["scores"]) == 1
    assert got["agreement"] == {"attention": None, "rollout": None, "contributions": None}


@pytest.mark.parametrize("body, status, kind, loc", [
    ({"text": TEXT, "target": 5, "model": "minilm"}, 422, "target_kind", ["body", "target"]),
    ({"text": TEXT, "target": TARGET, "model": "tiny-gpt2"}, 422, "target_kind", ["body", "target"]),
    ({"text": TEXT, "target": 10 ** 6, "model": "tiny-gpt2"}, 422, "target_out_of_range", ["body", "target"]),
    ({"text": TEXT, "target": TARGET, "steps": attribution.MIN_STEPS - 1}, 422, "greater_than_equal",
     ["body", "steps"]),
    ({"text": TEXT, "target": TARGET, "steps": attribution.MAX_STEPS + 1}, 422, "less_than_equal", ["body", "steps"]),
    ({"text": TEXT, "target": TARGET, "model": "minilm", "baseline": {"text": "A dog."}}, 422, "baseline_token_count",
     ["body", "baseline", "text"]),
    ({"text": TEXT, "target": TARGET, "model": "minilm", "baseline": {"text": "cat " * 600}}, 422,
     "baseline_token_count", ["body", "baseline", "text"]),
    ({"text": TEXT, "target": 5, "model": "tiny-gpt2", "baseline": "pad"}, 422, "baseline_unavailable",
     ["body", "baseline"]),
    ({"text": TEXT, "target": 5, "model": "tiny-gpt2", "baseline": "mask"}, 422, "baseline_unavailable",
     ["body", "baseline"]),
    ({"text": TEXT, "target": TARGET, "baseline": "noise"}, 422, "literal_error", ["body", "baseline"]),
    ({"text": TEXT, "target": TARGET, "baseline": {"text": " "}}, 422, "value_error", ["body", "baseline"]),
    ({"text": TEXT, "target": TARGET, "baseline": {"txt": "a"}}, 422, "baseline_type", ["body", "baseline"]),
    ({"text": TEXT, "target": TARGET, "method": "saliency"}, 422, "literal_error", ["body", "method"]),
    ({"text": TEXT, "target": "   "}, 422, "value_error", ["body", "target"]),
    ({"text": TEXT, "target": True, "model": "tiny-gpt2"}, 422, "target_type", ["body", "target"]),
    ({"text": TEXT, "target": 7.0, "model": "tiny-gpt2"}, 422, "int_type", ["body", "target"]),
    ({"text": TEXT, "target": -1, "model": "tiny-gpt2"}, 422, "greater_than_equal", ["body", "target"]),
    ({"text": TEXT, "target": TARGET, "text_pair": "x"}, 422, "extra_forbidden", ["body", "text_pair"]),
    ({"text": "cat " * 80, "target": 5, "model": "tiny-gpt2"}, 413, "too_many_tokens", ["body", "text"]),
    ({"text": TEXT, "target": "cat " * 80, "model": "tiny-bert"}, 413, "too_many_tokens", ["body", "text"]),
    ({"text": TEXT, "target": TARGET, "model": "no-such-model"}, 404, "unknown_model", None),
])
def test_refusals(local_client, body, status, kind, loc):
    r = post(local_client, **body)
    assert r.status_code == status, r.text
    answer = r.json()
    assert answer["detail"]
    if kind is not None and status != 404:
        assert answer["errors"][0]["type"] == kind
    if loc is not None:
        assert answer["errors"][0]["loc"] == loc
    if kind == "baseline_token_count":
        made = 5 if body["baseline"] == {"text": "A dog."} else 602  # over the model's limit: counted all the same
        assert answer["errors"][0]["ctx"] == {"baseline_tokens": made, "text_tokens": 9}
        assert f"baseline.text makes {made} tokens and the text 9" in answer["detail"]
    if kind == "target_out_of_range":
        assert answer["errors"][0]["ctx"] == {"id": 10 ** 6, "vocab_size": 370}
        assert "0..369" in answer["detail"]


def test_a_single_token_text_gives_its_id(local_client, local_dirs):
    r = local_client.post("/api/v1/token", json={"text": "cat", "model": "minilm"})
    assert r.status_code == 200, r.text
    minilm = load("minilm")
    assert r.json() == {"model": "minilm", "id": minilm.tokenizer.encode("cat").ids[1], "token": "cat",
                        "display": "cat"}
    gpt2 = load(local_dirs["gpt2"])
    word = next(t for t in gpt2.tokenizer.encode(" attention is").tokens)  # one token of the test vocabulary
    r = local_client.post("/api/v1/token", json={"text": word.display, "model": "tiny-gpt2"})
    assert r.status_code == 200, r.text
    assert r.json()["id"] == gpt2.tokenizer.encode(word.display).ids[0] and r.json()["display"] == word.display


@pytest.mark.parametrize("text, model, count", [("The cat sat", "minilm", 3), ("cats sitting", "tiny-bert", None)])
def test_a_text_of_several_tokens_is_refused(local_client, text, model, count):
    r = local_client.post("/api/v1/token", json={"text": text, "model": model})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["type"] == "not_single_token" and error["loc"] == ["body", "text"]
    assert error["ctx"]["count"] >= 2 and (count is None or error["ctx"]["count"] == count)
    assert "not one" in r.json()["detail"]
