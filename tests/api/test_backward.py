"""POST /api/v1/toy/backward on a real app: gradients against torch autograd computed here, the
variants' flags, the /toy answer inside it, and the upstream rules."""


import pytest
import torch

from tests.model.test_backward import as_tensors, reference_gradients

URL = "/api/v1/toy/backward"
F64 = torch.float64
CASES = [
    {},
    {"queries": [[1, 0, 1, 0], [0, 2, 0, 1]], "keys": [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
     "values": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], "n_heads": 2, "d_keys": 2, "d_values": 1,
     "upstream": [[1, 0, 0, 0], [0, 0, 0, -1]]},
    {"variant": "additive", "causal": True, "upstream": [[0.5, -1, 2, 0]] * 4},
    {"variant": "gumbel", "straight_through": True, "positions": "rope", "seed": 3, "temperature": 0.7},
    {"variant": "dot", "positions": "sinusoidal", "hidden_keys": [2]},
    {"variant": "sample", "positions": "alibi", "seed": 11},
    {"variant": "probsparse", "factor": 1, "causal": True, "positions": "rope"},
    {"variant": "probsparse", "factor": 1, "seed": 5, "temperature": 0.5, "upstream": [[1, -2, 0, 0.5]] * 4},
    {"variant": "general", "seed": 2, "tau": 1.5, "delta": [0.5, -1, 0, 2], "causal": True},
    {"variant": "cosine", "scale": 3, "positions": "rope", "tau": 0.5, "delta": 1},
    {"variant": "cosine", "queries": [[0, 0, 1, 1], [1, 2, 0, 0], [0, 0, 0, 0]], "hidden_keys": [1]},
]


def _full(body):
    """The request with the defaults the toy fills in (the worked example for {})."""
    if not any(k in body for k in ("queries", "keys", "values")):
        return {**body, "queries": [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]],
                "values": [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]]}
    return body


@pytest.mark.parametrize("body", CASES)
def test_gradients_match_autograd_computed_here(client, body, capsys):
    r = client.post(URL, json=body)
    assert r.status_code == 200, r.text
    answer = r.json()
    req = _full(body)
    upstream = torch.tensor(body["upstream"], dtype=F64) if "upstream" in body else torch.ones(
        len(req["queries"]), len(req["queries"][0]), dtype=F64)
    assert answer["upstream"] == upstream.tolist() and answer["upstream_default"] == ("upstream" not in body)
    ref = reference_gradients(req, answer["forward"], upstream)
    mine = as_tensors(answer["gradients"])
    worst = 0.0
    for name, g in ref.items():
        diff = float((mine[name] - g).abs().max())
        worst = max(worst, diff)
        assert diff <= 1e-10 * max(1.0, float(g.abs().max())), name
    with capsys.disabled():
        print(f"\n{URL} {sorted(body) or '{}'}: max |API − autograd here| {worst:.3g}, "
              f"check.max_abs_diff {answer['check']['max_abs_diff']:.3g}")
    assert answer["check"]["reference"] == "torch.autograd float64"
    assert answer["check"]["max_abs_diff"] <= 1e-10 * max(1.0, float(mine["w_o"].abs().max()))
    assert answer["forward"] == client.post("/api/v1/toy", json={k: v for k, v in body.items()
                                                                  if k != "upstream"}).json()


def test_shapes_and_self_attention_input(client):
    g = client.post(URL, json={}).json()["gradients"]
    shapes = {"output": (4, 4), "w_o": (4, 4), "b_o": (4,), "concat": (4, 4), "weighted_sum": (2, 4, 2),
              "v": (2, 4, 2), "softmax": (2, 4, 4), "scores": (2, 4, 4), "q": (2, 4, 2), "k": (2, 4, 2),
              "w_q": (4, 4), "queries": (4, 4), "keys": (4, 4), "values": (4, 4)}
    for name, shape in shapes.items():
        assert tuple(torch.tensor(g[name]).shape) == shape, name
    assert g["input"] is None  # the worked example sends its values, so it is not self-attention
    body = {"queries": [[1, 0], [0, 1], [1, 1]], "n_heads": 1}
    g = client.post(URL, json=body).json()["gradients"]
    summed = torch.tensor(g["queries"]) + torch.tensor(g["keys"]) + torch.tensor(g["values"])
    assert torch.allclose(torch.tensor(g["input"]), summed, rtol=0, atol=1e-15)
    ref = reference_gradients(body, client.post("/api/v1/toy", json=body).json(), torch.ones(3, 2, dtype=F64),
                              together=True)
    assert torch.allclose(torch.tensor(g["input"], dtype=F64), ref["queries"], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("body, flow", [({}, "softmax"), ({"variant": "hard"}, "none"), ({"variant": "sample"}, "none"),
                                        ({"variant": "gumbel"}, "softmax"),
                                        ({"variant": "gumbel", "straight_through": True}, "straight_through"),
                                        ({"variant": "probsparse", "factor": 1}, "probsparse")])
def test_flow_says_how_the_scores_get_their_gradient(client, body, flow):
    answer = client.post(URL, json=body).json()
    assert answer["flow"] == flow
    g = answer["gradients"]
    scores_zero = all(x == 0 for head in g["scores"] for row in head for x in row)
    assert scores_zero == (flow == "none")
    if flow == "none":
        assert "no gradient" in answer["note"] and "softmax" not in answer["check"]["compared"]
        assert all(x == 0 for row in g["w_q"] for x in row) and any(x != 0 for row in g["w_v"] for x in row)
    if flow == "straight_through":
        assert "Straight-through" in answer["note"]
        soft = torch.tensor(answer["forward"]["soft"])
        hard = torch.tensor(answer["forward"]["steps"]["softmax"])
        assert set(hard.unique().tolist()) <= {0.0, 1.0} and not torch.equal(soft, hard)


@pytest.mark.parametrize("body, loc, type_, ctx", [
    ({"upstream": [[1, 1, 1, 1]]}, ["body", "upstream"], "toy_upstream_shape",
     {"rows": 1, "cols": 4, "want_rows": 4, "want_cols": 4}),
    ({"queries": [[1, 2], [3, 4]], "n_heads": 1, "upstream": [[1, 2, 3], [4, 5, 6]]}, ["body", "upstream"],
     "toy_upstream_shape", {"rows": 2, "cols": 3, "want_rows": 2, "want_cols": 2}),
    ({"upstream": [[1, 1, 1, 1], [1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]}, ["body", "upstream", "1"], "toy_ragged",
     {"cols": 2, "first_cols": 4}),
    ({"upstream": [[1, 1, 1, 1]] * 3 + [[1, 1, 1, 2e6]]}, ["body", "upstream", "3", "3"], "toy_magnitude",
     {"max": 1e6}),
    ({"upstream": []}, ["body", "upstream"], "too_short", None),
])
def test_bad_upstream_is_a_422_naming_the_problem(client, body, loc, type_, ctx):
    r = client.post(URL, json=body)
    assert r.status_code == 422, r.text
    item = r.json()["errors"][0]
    assert (item["loc"], item["type"]) == (loc, type_)
    if ctx is not None:
        assert item["ctx"] == ctx
    assert "upstream" in r.json()["detail"]


def test_non_finite_upstream_is_refused(client):
    r = client.post(URL, content='{"upstream": [[1, 1, 1, NaN]]}', headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][:2] == ["body", "upstream"]


def test_the_toy_rules_apply(client):
    r = client.post(URL, json={"queries": [[1, 2, 3]]})
    assert r.status_code == 422 and r.json()["errors"][0]["type"] == "toy_odd_d_model"


def test_openapi_documents_the_route(client):
    from model.errors import BACKWARD_RULES

    op = client.get("/openapi.json").json()["paths"][URL]["post"]
    assert "422" in op["responses"] and op["requestBody"]["content"]["application/json"]["examples"]
    for rule, (keys, _) in BACKWARD_RULES.items():
        assert f"`{rule}` {{{', '.join(keys)}}}" in op["description"]
    assert "torch.autograd float64" in op["description"]


FORMULA_CASES = [
    {"variant": "general", "seed": 2, "tau": 1.5, "delta": [0.5, -1, 0, 2], "causal": True},
    {"variant": "general", "seed": 4, "n_heads": 2},
    {"variant": "cosine", "scale": 3, "tau": 0.5},
    {"variant": "cosine", "n_heads": 2, "causal": True},
    {"tau": 2.0},
]


@pytest.mark.parametrize("body", FORMULA_CASES)
def test_the_formulas_the_page_writes_hold_on_the_answers_numbers(client, body):
    """static/js/figures/backward.js writes dQ_h = τ · dS_h · K_h (general: · W_s,hᵀ; cosine: through the norms) and
    dW_s,h = τ · Q_hᵀ · dS_h · K_h: each recomputed here with numpy from the answer's own q, k, dS and W_s."""
    import numpy as np

    answer = client.post(URL, json=body).json()
    f, g = answer["forward"], answer["gradients"]
    tau = body.get("tau", 1.0)
    assert f["tau"] == tau
    for h in range(f["n_heads"]):
        q, k = (np.array(f["steps"]["split"][m][h]) for m in ("q", "k"))
        ds = tau * np.array(g["scores"][h])
        if body.get("variant") == "general":
            w = np.array(f["general_w"][h])
            want_q, want_k = ds @ k @ w.T, ds.T @ q @ w
            assert np.abs(np.array(g["general_w"][h]) - q.T @ ds @ k).max() <= 1e-10
        elif body.get("variant") == "cosine":
            qn, kn = np.linalg.norm(q, axis=1, keepdims=True), np.linalg.norm(k, axis=1, keepdims=True)
            cos = (q / qn) @ (k / kn).T
            want_q = (ds @ (k / kn) - (ds * cos).sum(axis=1, keepdims=True) * q / qn) / qn
            want_k = (ds.T @ (q / qn) - (ds * cos).sum(axis=0)[:, None] * k / kn) / kn
        else:
            want_q, want_k = ds @ k, ds.T @ q
        assert np.abs(np.array(g["q"][h]) - want_q).max() <= 1e-10
        assert np.abs(np.array(g["k"][h]) - want_k).max() <= 1e-10
