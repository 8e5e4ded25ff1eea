"""POST /api/v1/aggregate, /metrics and /contributions on the real model, and the AttentionEdit request model."""

import math

import numpy as np
import pytest
from pydantic import ValidationError

from app.schemas.api import AttentionEdit
from model.nets.edit import Edit

from .test_compact import decode_u16

TEXT = "The cat sat on the mat. It was happy, wasn't it?"
LONG = " ".join(["word", "."] * 255)  # 512 tokens, the model's limit


def post(client, path, **body):
    return client.post(f"/api/v1/{path}", json=body)


def attention_maps(client, text, text_pair=None):
    """(L, H, N, N) from /attention: JSON, or the compact answer (error at most 7.7e-6) over the JSON cap."""
    r = post(client, "attention", text=text, text_pair=text_pair)
    if r.status_code == 413:
        r = client.post("/api/v1/attention?encoding=u16", json={"text": text, "text_pair": text_pair})
        assert r.status_code == 200
        header, maps = decode_u16(r.content)
        return maps.astype(np.float64)
    assert r.status_code == 200
    return np.array(r.json()["attention"], dtype=np.float64)


def tolerance(maps):
    return 1e-6 if maps.shape[-1] < 100 else 1e-5  # the compact answer's 7.7e-6 at 512 tokens


def np_rollout(maps, residual):
    out, product = [], None
    for layer in maps:
        a = residual * np.eye(layer.shape[-1]) + (1 - residual) * layer.mean(axis=0)
        a = a / a.sum(axis=-1, keepdims=True)
        product = a if product is None else a @ product
        out.append(product)
    return np.stack(out)


@pytest.mark.parametrize("text", [TEXT, LONG], ids=["short", "512"])
def test_aggregate_mean_and_rollout_equal_numpy_on_the_attention_answer(client, text):
    maps = attention_maps(client, text)
    n = maps.shape[-1]
    mean = post(client, "aggregate", text=text)
    assert mean.status_code == 200
    body = mean.json()
    assert body["kind"] == "mean" and body["residual"] is None and body["layers"] == list(range(6))
    assert len(body["tokens"]) == n and body["model"] == "minilm"
    np.testing.assert_allclose(np.array(body["maps"]), maps.mean(axis=1), atol=tolerance(maps))
    for residual in (0.5, 0.2):
        r = post(client, "aggregate", text=text, kind="rollout", residual=residual)
        assert r.status_code == 200 and r.json()["residual"] == residual and r.json()["kind"] == "rollout"
        np.testing.assert_allclose(np.array(r.json()["maps"]), np_rollout(maps, residual), atol=10 * tolerance(maps))


def test_aggregate_of_a_pair(client):
    maps = attention_maps(client, "Where is the cat?", "On the mat.")
    r = post(client, "aggregate", text="Where is the cat?", text_pair="On the mat.", kind="rollout")
    assert r.status_code == 200
    assert [t["segment"] for t in r.json()["tokens"]].count(1) == 5  # on the mat . [SEP]
    np.testing.assert_allclose(np.array(r.json()["maps"]), np_rollout(maps, 0.5), atol=1e-5)


@pytest.mark.parametrize("text", [TEXT, LONG], ids=["short", "512"])
def test_metrics_shapes_and_values(client, text):
    maps = attention_maps(client, text)
    n = maps.shape[-1]
    r = post(client, "metrics", text=text)
    assert r.status_code == 200
    body = r.json()
    assert (body["n_layers"], body["n_heads"]) == (6, 12) and len(body["tokens"]) == n
    names = {"entropy", "distance", "to_cls", "to_sep", "to_self", "to_previous", "to_next", "to_punctuation",
             "to_first"}
    assert set(body["metrics"]) == names == set(body["definitions"])
    for values in body["metrics"].values():
        assert np.array(values).shape == (6, 12)
    logs = np.where(maps > 0, np.log(np.where(maps > 0, maps, 1)), 0)
    atol = 10 * tolerance(maps)
    # a weight under the compact answer's step (1/65535) can add up to ~1e-4 nats each: 0.05 at 512 keys
    entropy_atol = 1e-5 if n < 100 else 0.05
    np.testing.assert_allclose(body["metrics"]["entropy"], (-(maps * logs).sum(-1)).mean(-1), atol=entropy_atol)
    np.testing.assert_allclose(body["metrics"]["to_cls"], maps[..., 0].mean(-1), atol=atol)
    np.testing.assert_allclose(body["metrics"]["to_sep"], maps[..., n - 1].mean(-1), atol=atol)
    prev = np.stack([maps[..., i, i - 1] for i in range(1, n)], -1).mean(-1)
    np.testing.assert_allclose(body["metrics"]["to_previous"], prev, atol=atol)
    np.testing.assert_allclose(body["metrics"]["to_first"], maps[..., 1:, 0].mean(-1), atol=atol)
    punct = [i for i, t in enumerate(body["tokens"]) if t["text"] in {".", ",", "'", "?"}]
    np.testing.assert_allclose(body["metrics"]["to_punctuation"], maps[..., punct].sum(-1).mean(-1),
                               atol=1e-6 + len(punct) * tolerance(maps))  # a sum of len(punct) weights
    assert set(body["thresholds"]) == {"broad", "previous", "next", "cls", "sep", "self", "sink"}
    assert body["thresholds"]["broad"]["at_least"] == pytest.approx(0.8 * math.log(n))
    assert body["thresholds"]["sep"] == {"metric": "to_sep", "at_least": 0.5, "rule": body["thresholds"]["sep"]["rule"]}
    assert "Clark" in body["source"]
    labels = body["labels"]
    assert len(labels) == 6 and all(len(row) == 12 for row in labels)
    for layer in range(6):
        for head in range(12):
            for label in labels[layer][head]:
                rule = body["thresholds"][label]
                assert body["metrics"][rule["metric"]][layer][head] >= rule["at_least"] - 1e-6


@pytest.mark.parametrize("text", [TEXT, LONG], ids=["short", "512"])
def test_contributions_shapes_and_structure(client, text):
    maps = attention_maps(client, text)
    n = maps.shape[-1]
    r = post(client, "contributions", text=text, layers=[3, 1], heads=[7, 0])
    assert r.status_code == 200
    body = r.json()
    assert body["layers"] == [3, 1] and body["heads"] == [7, 0] and len(body["tokens"]) == n
    c = np.array(body["contributions"])
    total = np.array(body["layer_sum"])
    assert c.shape == (2, 2, n, n) and total.shape == (2, n, n)
    assert (c >= 0).all() and (total >= 0).all()
    for li, layer in enumerate([3, 1]):
        for hi, head in enumerate([7, 0]):
            a = maps[layer, head]
            norms = c[li, hi].max(axis=0) / a[c[li, hi].argmax(axis=0), np.arange(n)]  # ||f_h(x_j)|| per key j
            np.testing.assert_allclose(c[li, hi], a * norms[None, :], atol=50 * tolerance(maps) * norms.max())
    all_heads = np.array(post(client, "contributions", text=TEXT, layers=[1]).json()["contributions"])
    short_total = np.array(post(client, "contributions", text=TEXT, layers=[1], heads=[0]).json()["layer_sum"])
    assert (short_total <= all_heads.sum(axis=1) + 1e-4).all()  # the triangle inequality, over every head


@pytest.mark.parametrize("path", ["aggregate", "metrics", "contributions"])
def test_refusals(client, path):
    r = post(client, path, text="hi", model="nope")
    assert r.status_code == 404 and r.json()["errors"][0]["type"] == "unknown_model"
    r = post(client, path, text="word " * 600)
    assert r.status_code == 413 and r.json()["errors"][0]["type"] == "too_many_tokens"
    r = post(client, path, text="  ")
    assert r.status_code == 422 and "blank" in r.json()["detail"]
    r = post(client, path, text="hi", extra=1)
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "extra"]
    r = client.post(f"/api/v1/{path}", content=b"{", headers={"content-type": "application/json"})
    assert r.status_code == 422


def test_aggregate_refusals(client):
    for body, loc in (({"kind": "max"}, ["body", "kind"]), ({"residual": 1.5}, ["body", "residual"]),
                      ({"residual": -0.1}, ["body", "residual"]), ({"residual": "0.5"}, ["body", "residual"])):
        r = post(client, "aggregate", text="hi", **body)
        assert r.status_code == 422 and r.json()["errors"][0]["loc"] == loc, body
    assert post(client, "aggregate", text="hi", layers=[0]).status_code == 422  # no index fields here


def test_contributions_refusals(client):
    r = post(client, "contributions", text="hi", layers=[6])
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["type"] == "index_out_of_range" and error["loc"] == ["body", "layers", "0"]
    assert "this model has layers 0..5" in error["msg"]
    r = post(client, "contributions", text="hi", heads=[0, 12])
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "heads", "1"]
    r = post(client, "contributions", text="hi", heads=[1, 1])
    assert r.status_code == 422 and "duplicates" in r.json()["detail"]
    r = post(client, "contributions", text=LONG)  # 6 x 13 x 512 x 512 numbers
    assert r.status_code == 413 and r.json()["errors"][0]["type"] == "answer_too_large"
    assert "fewer layers or heads" in r.json()["detail"]


def test_the_openapi_schema_documents_the_routes(client):
    spec = client.get("/openapi.json").json()
    for path, response in (("/api/v1/aggregate", "AggregateResponse"), ("/api/v1/metrics", "MetricsResponse"),
                           ("/api/v1/contributions", "ContributionsResponse")):
        post_op = spec["paths"][path]["post"]
        assert post_op["requestBody"]["content"]["application/json"]["examples"]
        assert post_op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(response)
        for status in ("404", "413", "422"):
            assert status in post_op["responses"]
        for rule in ("max_tokens", "unknown_model", "too_many_tokens", "pair_not_supported"):
            assert rule in post_op["description"]
        assert "{" not in post_op["description"]  # the shared rules text filled in


# ---- the edit's request model (the lead adds it to /attention) ----

def test_attention_edit_defaults_and_conversion():
    edit = AttentionEdit.model_validate({"layer": 2, "heads": [5], "temperature": 3})
    assert edit.to_edit() == Edit(layer=2, heads=(5,), temperature=3.0, hidden_keys=(), ablate=False)
    assert AttentionEdit.model_validate({"layer": 0}).to_edit().changes_nothing
    assert AttentionEdit.model_validate_json('{"layer": 1, "hidden_keys": [0, 4], "ablate": true}').to_edit() == Edit(
        1, None, 1.0, (0, 4), True)
    for example in AttentionEdit.model_config["json_schema_extra"]["examples"]:
        AttentionEdit.model_validate(example).to_edit()


@pytest.mark.parametrize("body", [
    {"layer": 0, "temperature": 0}, {"layer": 0, "temperature": 0.001}, {"layer": 0, "temperature": 1000},
    {"layer": 0, "temperature": "2"}, {"layer": -1}, {"layer": "1"}, {"layer": 1.0}, {"heads": [0]},
    {"layer": 0, "heads": []}, {"layer": 0, "heads": [1, 1]}, {"layer": 0, "hidden_keys": [3, 3]},
    {"layer": 0, "hidden_keys": [-1]}, {"layer": 0, "ablate": 1}, {"layer": 0, "ablate": "yes"},
    {"layer": 0, "other": 1},
])
def test_attention_edit_refusals(body):
    with pytest.raises(ValidationError):
        AttentionEdit.model_validate(body)


@pytest.mark.parametrize("raw", ['{"layer": 0, "temperature": NaN}', '{"layer": 0, "temperature": Infinity}'])
def test_attention_edit_refuses_non_finite_temperatures(raw):
    with pytest.raises(ValidationError):
        AttentionEdit.model_validate_json(raw)


def test_attention_edit_schema_states_its_bounds():
    schema = AttentionEdit.model_json_schema()
    temperature = schema["properties"]["temperature"]
    assert (temperature["minimum"], temperature["maximum"]) == (0.01, 100.0)
    assert schema["properties"]["hidden_keys"]["uniqueItems"] is True
    assert schema["additionalProperties"] is False
    assert "index_out_of_range" in AttentionEdit.__doc__ and "edit_hidden_key" in AttentionEdit.__doc__


def test_metrics_give_the_repeated_sequences_scores_whatever_the_text(client):
    """The previous-token and induction scores of every head, on R R (tests/model/test_circuits.py checks the
    numbers against transformers): the same sequence and scores for every text, one score per head."""
    first = client.post("/api/v1/metrics", json={"text": "The cat sat on the mat."}).json()["repeated"]
    other = client.post("/api/v1/metrics", json={"text": "Where did the dog go?"}).json()["repeated"]
    assert first == other
    half, start = first["half"], first["start"]
    assert (start, first["seed"], len(first["ids"])) == (1, 0, 2 * half + 2)  # [CLS] R R [SEP]
    assert first["ids"][start: start + half] == first["ids"][start + half: start + 2 * half]
    for name in ("previous_token", "induction"):
        scores = np.array(first[name])
        assert scores.shape == (6, 12) and ((scores >= 0) & (scores <= 1)).all()
        assert name in first["definitions"]
