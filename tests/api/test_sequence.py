"""POST /api/v1/sequence/reach: the three layers' reach over HTTP. The answer equals model/lab/sequence.py's
reach for the same request, its sizes are what was asked, and each bad field is a 422 naming it."""

from __future__ import annotations

import math

import pytest

from model.lab.sequence import MAX_D, MAX_KERNEL, MAX_LAYERS, MAX_LENGTH, reach


def test_a_good_request_is_the_models_reach(client):
    body = {"length": 24, "d": 6, "kernel": 3, "dilated": False, "layers": 4, "seed": 3}
    r = client.post("/api/v1/sequence/reach", json=body)
    assert r.status_code == 200, r.text
    a = r.json()
    assert {k: a[k] for k in body} == body
    want = reach(24, 6, 3, False, 4, seed=3)
    for name in ("rnn", "conv", "attention"):
        assert len(a[name]) == 24
        expected = getattr(want, name).tolist()
        assert all(math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12) for x, y in zip(a[name], expected, strict=True))
    assert a["receptive_field"] == [3, 5, 7, 9]
    assert [j for j, g in enumerate(a["conv"]) if g != 0] == list(range(24 - 9, 24))  # the last 9 positions
    assert a["rnn_path"] == [23 - j for j in range(24)] and a["attention_path"] == [1] * 23 + [0]
    assert a["conv_path"][0] == math.ceil(23 / 2)
    assert a["sequential"] == {"rnn": 24, "conv": 1, "attention": 1}


def test_the_defaults(client):
    a = client.post("/api/v1/sequence/reach", json={}).json()
    assert (a["length"], a["d"], a["kernel"], a["dilated"], a["layers"], a["seed"]) == (64, 32, 3, True, 4, 0)
    assert a["receptive_field"] == [3, 7, 15, 31]


@pytest.mark.parametrize(("body", "field"), [
    ({"length": 1}, "length"), ({"length": MAX_LENGTH + 1}, "length"), ({"d": 0}, "d"), ({"d": MAX_D + 1}, "d"),
    ({"kernel": 1}, "kernel"), ({"kernel": MAX_KERNEL + 1}, "kernel"), ({"layers": 0}, "layers"),
    ({"layers": MAX_LAYERS + 1}, "layers"), ({"seed": -1}, "seed"), ({"length": "64"}, "length"),
    ({"dilated": 1}, "dilated"), ({"depth": 3}, "depth"),
])
def test_each_bad_field_is_a_422_naming_it(client, body, field):
    r = client.post("/api/v1/sequence/reach", json=body)
    assert r.status_code == 422, r.text
    answer = r.json()
    assert answer["errors"][0]["loc"] == ["body", field]
    assert field in answer["detail"]


def test_a_reach_over_the_work_budget_names_the_longest_that_fits(client):
    """The reach is bounded by the server's work budget like every model request: over it, 422 work_too_large on
    `length` with the most positions that fit, checked against the estimate."""
    from model.analysis import work
    from model.lab.sequence import reach_flops

    kept = client.app.state.settings
    client.app.state.settings = kept.model_copy(update={"work_budget": reach_flops(100, 64, 3, True, 4) / work.GIGA})
    try:
        r = client.post("/api/v1/sequence/reach", json={"length": 200, "d": 64})
        fits = client.post("/api/v1/sequence/reach", json={"length": 100, "d": 64})
    finally:
        client.app.state.settings = kept
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["type"] == "work_too_large" and error["loc"] == ["body", "length"]
    assert error["ctx"]["largest"] == 100 and "lower length to at most 100" in error["msg"]
    assert fits.status_code == 200
