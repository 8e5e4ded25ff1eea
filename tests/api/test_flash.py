"""POST /api/v1/flash: FlashAttention's tiles of one toy head over HTTP. The answer's output is recomputed
here (numpy, from the q, k, v it names), its tiles cover every (query block, key block) pair in order, and
every bad field is a 4xx naming it."""

from __future__ import annotations

import json

import numpy as np
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


def softmax_attention(q, k, v, scale, hidden):
    s = np.where(hidden, -np.inf, np.asarray(q) @ np.asarray(k).T * scale)
    out = np.zeros((len(q), np.asarray(v).shape[1]))
    for i, row in enumerate(s):
        if np.isfinite(row).any():
            e = np.exp(row - row[np.isfinite(row)].max())
            out[i] = e / e.sum() @ np.asarray(v)
    return out


def test_the_worked_example_tiled_is_its_softmax_attention(client):
    r = client.post("/api/v1/flash", json={"block_rows": 3, "block_cols": 2, "causal": True, "hidden_keys": [1],
                                           "head": 1, "backward": True})
    assert r.status_code == 200, r.text
    a = r.json()
    L, S = len(a["q"]), len(a["k"])
    hidden = np.triu(np.ones((L, S), dtype=bool), 1)
    hidden[:, 1] = True
    want = softmax_attention(a["q"], a["k"], a["v"], a["scale"], hidden)
    assert np.abs(np.array(a["output"]) - want).max() <= 1e-12
    assert np.abs(np.array(a["reference"]) - want).max() <= 1e-12
    assert a["scale"] == 1 / np.sqrt(len(a["q"][0]))
    order = [(t["row_block"], t["col_block"], tuple(t["rows"]), tuple(t["cols"])) for t in a["tiles"]]
    assert order == [(0, 0, (0, 3), (0, 2)), (0, 1, (0, 3), (2, 4)), (1, 0, (3, 4), (0, 2)), (1, 1, (3, 4), (2, 4))]
    first = a["tiles"][0]
    assert first["scores"][0][1] is None and first["scores"][1][1] is None  # key 1 hidden: null, not −∞
    assert [t["skipped"] for t in a["tiles"]] == [False, False, False, False]
    last = {t["rows"][0]: t for t in a["tiles"] if t["cols"][1] == S}
    for i0, t in last.items():  # the last key block's state is the row's final one, and o / l its output
        for r, (o, l_) in enumerate(zip(t["o"], t["l"], strict=True)):
            assert np.allclose(np.array(o) / l_, a["output"][i0 + r], atol=1e-12)
    back = a["backward"]
    assert back["max_abs_diff"] <= 1e-10 and len(back["tiles"]) == 4
    for name in ("dq", "dk", "dv"):
        assert np.abs(np.array(back[name]) - np.array(back["reference"][name])).max() <= 1e-10
    assert back["upstream"] == [[1.0] * len(a["v"][0])] * L


def test_bad_fields_are_named():
    with TestClient(create_app(Settings(allowed_hosts=["testserver"], max_json_values=2000))) as small:
        for body, field in (({"block_rows": 0}, "block_rows"), ({"block_cols": 65}, "block_cols"),
                            ({"head": 5}, "head"), ({"variant": "dot"}, "variant"),
                            ({"backward": True, "upstream": [[1, 2, 3]]}, "upstream"),
                            ({"queries": [[1, float("inf")]]}, "queries")):
            sent = json.dumps(body).replace("Infinity", "1e999")  # 1e999 reads as infinity: not finite
            r = small.post("/api/v1/flash", content=sent, headers={"content-type": "application/json"})
            assert r.status_code == 422, (body, r.text)
            assert field in r.json()["errors"][0]["loc"], (body, r.json())
        big = {"queries": [[float(i % 3), 1.0] for i in range(40)], "n_heads": 1, "block_rows": 1, "block_cols": 1}
        r = small.post("/api/v1/flash", json=big)
        assert r.status_code == 413 and "block_rows" in r.json()["detail"]
