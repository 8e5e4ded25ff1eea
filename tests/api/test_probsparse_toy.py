"""POST /api/v1/toy with variant probsparse: the answer's shape and the numbers the page's captions state,
recomputed here from the answer (its 422 rules are in test_trace_toy.py's HTTP_CASES)."""

import math

import numpy as np

URL = "/api/v1/toy"
Q6 = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0], [0, 2, 1, 1], [1, 2, 0, 0]]


def test_the_answer_holds_the_sample_the_measure_and_the_active_queries(client):
    body = client.post(URL, json={"queries": Q6, "variant": "probsparse", "factor": 1, "seed": 2}).json()
    sparse, steps = body["probsparse"], body["steps"]
    u, big_u = min(math.ceil(math.log(6)), 6), min(math.ceil(math.log(6)), 6)
    assert body["factor"] == 1 and np.array(sparse["sampled_keys"]).shape == (6, big_u)
    assert np.array(sparse["measure"]).shape == (2, 6) and np.array(sparse["active"]).shape == (2, u)
    weights = np.array(steps["softmax"])
    for h, active in enumerate(sparse["active"]):
        m = np.array(sparse["measure"][h])
        assert sorted(active) == active and m[active].min() >= np.delete(m, active).max()
        lazy = [i for i in range(6) if i not in active]
        assert (weights[h, lazy] == 1 / 6).all()  # the caption: lazy rows hold 1/S, the mean of V
    assert client.post(URL, json={"variant": "scaled_dot"}).json()["probsparse"] is None


def test_where_u_reaches_l_every_query_is_active_and_it_is_full_attention(client):
    body = client.post(URL, json={"variant": "probsparse", "factor": 2}).json()  # u = min(2·⌈ln 4⌉, 4) = 4
    assert all(len(a) == 4 for a in body["probsparse"]["active"])
    full = client.post(URL, json={}).json()
    np.testing.assert_allclose(body["steps"]["output"], full["steps"]["output"], rtol=0, atol=1e-12)
    assert max(body["probsparse"]["output_difference"]) <= 1e-12


def test_a_query_active_in_every_head_gets_full_attentions_output(client):
    # the output step's caption: "a query that is active in every head gets exactly full attention's output"
    body = client.post(URL, json={"queries": Q6, "variant": "probsparse", "factor": 1, "n_heads": 1}).json()
    sparse = body["probsparse"]
    full = np.array(client.post(URL, json={"queries": Q6, "n_heads": 1}).json()["steps"]["output"])
    difference = np.linalg.norm(np.array(body["steps"]["output"]) - full, axis=1)
    np.testing.assert_allclose(sparse["output_difference"], difference, rtol=0, atol=1e-12)
    active = set(sparse["active"][0])
    assert all(difference[i] <= 1e-12 for i in active)
    assert any(difference[i] > 1e-3 for i in range(6) if i not in active)
