"""A server whose models are in bfloat16 (ATTNSCOPE_DTYPE=bfloat16, attnscope serve --dtype bfloat16): the model
list says so, and every model route answers in float32 as it does for a float32 model (the numbers against
transformers' bfloat16 are in tests/model/test_dtype.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.model.test_dtype import BF16

TEXT = "Hello world, attention is all you need."

pytestmark = pytest.mark.skipif(not BF16, reason="this CPU has no bfloat16 arithmetic (tests/model/test_dtype.py)")


@pytest.fixture(scope="module")
def half_client(checkpoint_dirs, llama_dirs):
    settings = Settings(allowed_hosts=["testserver"], dtype="bfloat16",
                        model_paths=[checkpoint_dirs["gpt2"], llama_dirs["gemma2"]])
    with TestClient(create_app(settings)) as c:
        yield c


def test_the_model_list_gives_the_dtype(half_client, client):
    half = {m["id"]: m["dtype"] for m in half_client.get("/api/v1/models").json()["models"]}
    assert half == {"minilm": "bfloat16", "tiny-gpt2": "bfloat16", "tiny-gemma2": "bfloat16"}
    assert {m["dtype"] for m in client.get("/api/v1/models").json()["models"]} == {"float32"}


@pytest.mark.parametrize("model", ["minilm", "tiny-gpt2", "tiny-gemma2"])
def test_every_model_route_answers_for_a_bfloat16_model(half_client, model):
    body = {"text": TEXT, "model": model}
    for route, extra in [("/api/v1/attention?encoding=u16", {}), ("/api/v1/attention/summary", {}),
                         ("/api/v1/aggregate", {"kind": "rollout"}), ("/api/v1/metrics", {}),
                         ("/api/v1/contributions", {"layers": [1], "heads": [0]}),
                         ("/api/v1/trace?encoding=f32", {"layer": 1})]:
        answer = half_client.post(route, json=body | extra)
        assert answer.status_code == 200, (route, answer.text)
    maps = np.array(half_client.post("/api/v1/attention", json=body).json()["attention"], dtype=np.float64)
    assert np.abs(maps.sum(-1) - 1).max() <= 1e-5  # float32 softmax rows
    trace = half_client.post("/api/v1/trace", json=body | {"layer": 0}).json()
    assert np.allclose(np.array(trace["steps"]["softmax"], dtype=np.float64).sum(-1), 1.0, atol=1e-5)
    edited = half_client.post("/api/v1/attention", json=body | {"edit": {"layer": 0, "heads": [1], "ablate": True}})
    assert edited.status_code == 200, edited.text
    assert not np.allclose(np.array(edited.json()["attention"][1], dtype=np.float64), maps[1])
    if model == "minilm":
        return
    lens = half_client.post("/api/v1/lens", json=body | {"top_k": 3})
    assert lens.status_code == 200, lens.text
    probabilities = [p["probability"] for layer in lens.json()["layers"] for p in layer["predictions"]]
    assert all(0 < p <= 1 for p in probabilities)
    generated = half_client.post("/api/v1/generate", json=body | {"max_new_tokens": 4})
    assert generated.status_code == 200, generated.text
    events = [json.loads(line[6:]) for line in generated.text.splitlines() if line.startswith("data: ")]
    assert events[0]["dtype"] == "bfloat16" and events[-1]["tokens"] == 4
    cfg = events[0]
    last = events[-2]  # the fourth token: every token so far is in the cache, 2 bytes a number
    assert last["cache_bytes"] == 2 * cfg["n_layers"] * (last["index"] + 1) * cfg["n_kv_heads"] * cfg["d_head"] * 2
