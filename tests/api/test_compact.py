"""Compact u16 answers, max-pooled summaries and the attention cache."""

import copy
import json
import struct

import numpy as np
import pytest
import torch

from app.cache import ByteLRU
from app.hub import ModelHub

from .conftest import attention

TEXT = "Compact answers carry the same attention in two bytes a weight."


def decode_u16(body: bytes) -> tuple[dict, np.ndarray]:
    """The client side of the documented layout (docs/encoding.md)."""
    magic, size = struct.unpack_from("<4sI", body, 0)
    assert magic == b"ATN1"
    header = json.loads(body[8 : 8 + size])
    values = np.frombuffer(body, dtype="<u2", offset=8 + size).reshape(header["shape"])
    return header, values / header["scale"]


def post(client, path, encoding, **body):
    r = client.post(f"/api/v1/{path}?encoding={encoding}", json=body)
    assert r.status_code == 200, r.text
    return r


def test_u16_equals_json_within_the_documented_error(client):
    body = {"text": TEXT, "text_pair": "A second segment.", "layers": [5, 0], "heads": [3, 1, 10]}
    js = post(client, "attention", "json", **body).json()
    r = post(client, "attention", "u16", **body)
    assert r.headers["content-type"] == "application/octet-stream"
    header, weights = decode_u16(r.content)
    assert (8 + len(r.content[8:]) - weights.size * 2) % 8 == 0  # data starts at a multiple of 8
    same = ("model", "tokens", "layers", "heads")
    assert {k: header[k] for k in same} == {k: js[k] for k in same}
    assert header["shape"] == [2, 3, len(js["tokens"]), len(js["tokens"])]
    assert np.abs(weights - np.array(js["attention"])).max() <= 7.7e-6  # half a step of 1/65535, plus float32 rounding


def test_u16_of_all_maps_at_128_tokens_fits_in_2_5_mb(client):
    r = client.post("/api/v1/attention?encoding=u16", json={"text": " ".join(["word"] * 126)})
    header, weights = decode_u16(r.content)
    assert header["shape"] == [6, 12, 128, 128]
    assert len(r.content) <= 2.5e6
    assert np.allclose(weights.sum(-1), 1, atol=1e-3)


def test_u16_has_no_json_cap(client):
    text = " ".join(["word"] * 300)  # all maps at 302 tokens: 6.6 M weights, over the JSON cap
    assert attention(client, text=text).status_code == 413
    assert "encoding=u16" in attention(client, text=text).json()["detail"]
    header, _ = decode_u16(post(client, "attention", "u16", text=text).content)
    assert header["shape"] == [6, 12, 302, 302]


def test_unknown_encoding_is_422(client):
    r = client.post("/api/v1/attention?encoding=f8", json={"text": "x"})
    assert r.status_code == 422 and "encoding" in r.json()["detail"]


def decode_f32_trace(body: bytes) -> tuple[dict, dict]:
    """The client side of the documented f32 trace layout (README "The compact encoding"): the header and
    its arrays as {step: array or {key: array}}."""
    magic, size = struct.unpack_from("<4sI", body, 0)
    assert magic == b"ATN1"
    assert (8 + size) % 8 == 0
    header = json.loads(body[8 : 8 + size])
    assert header["dtype"] == "float32"
    steps: dict = {}
    offset = 8 + size
    for entry in header["arrays"]:
        count = int(np.prod(entry["shape"]))
        values = np.frombuffer(body, dtype="<f4", count=count, offset=offset).reshape(entry["shape"])
        offset += 4 * count
        if entry["key"] is None:
            steps[entry["step"]] = values
        else:
            steps.setdefault(entry["step"], {})[entry["key"]] = values
    assert offset == len(body)  # nothing after the last array
    return header, steps


def from_json(numbers) -> np.ndarray:
    """A JSON matrix as float64, null (hidden) as NaN."""
    flat = [np.nan if v is None else v for v in np.array(numbers, dtype=object).ravel()]
    return np.array(flat, dtype=np.float64).reshape(np.shape(numbers))


def assert_same_numbers(ours: np.ndarray, numbers) -> None:
    """ours (float32) equals the JSON numbers exactly; -inf exactly where JSON has null."""
    ref = from_json(numbers)
    hidden = np.isnan(ref)
    assert ours.shape == ref.shape
    assert np.array_equal(np.isneginf(ours), hidden)
    assert np.array_equal(ours[~hidden].astype(np.float64), ref[~hidden])  # the very same float32 numbers


@pytest.mark.parametrize("body", [
    {"text": TEXT, "text_pair": "A second segment.", "layer": 3, "head": 7, "block": True},
    {"text": "Every head at once.", "layer": 0, "head": None},
])
def test_f32_trace_equals_the_json_trace_number_for_number(client, body):
    js = client.post("/api/v1/trace", json=body).json()
    r = post(client, "trace", "f32", **body)
    assert r.headers["content-type"] == "application/octet-stream"
    header, steps = decode_f32_trace(r.content)
    assert {k: v for k, v in header.items() if k not in ("dtype", "arrays", "block")} == {
        k: v for k, v in js.items() if k not in ("steps", "block")}
    block = js.get("block")  # its arrays travel as step "block", one key each, in its steps' order
    assert ("block" in header) == (block is not None) == body.get("block", False)
    every = js["steps"] if block is None else {**js["steps"], "block": block["arrays"]}
    if block is not None:
        assert header["block"] == {k: v for k, v in block.items() if k != "arrays"}
        assert list(block["arrays"]) == [*(s["name"] for s in block["steps"]), "mlp_alone"]
    assert [(a["step"], a["key"]) for a in header["arrays"]] == [
        (step, key) for step, value in every.items() for key in (value if isinstance(value, dict) else [None])]
    for step, value in every.items():
        for key, numbers in (value.items() if isinstance(value, dict) else [(None, value)]):
            assert_same_numbers(steps[step] if key is None else steps[step][key], numbers)


def test_f32_trace_carries_the_causal_mask_as_minus_infinity(local_client):
    body = {"text": "Hello world, attention is all you need.", "model": "tiny-gpt2", "layer": 1, "head": 0}
    js = local_client.post("/api/v1/trace", json=body).json()
    _, steps = decode_f32_trace(post(local_client, "trace", "f32", **body).content)
    n = len(js["tokens"])
    assert np.array_equal(np.isneginf(steps["mask"][0]), np.triu(np.ones((n, n), dtype=bool), 1))
    assert_same_numbers(steps["mask"], js["steps"]["mask"])
    assert_same_numbers(steps["softmax"], js["steps"]["softmax"])


def test_f32_trace_has_no_json_cap_and_its_encodings_are_documented(client):
    text = " ".join(["word"] * 200)  # every head at 202 tokens: 3.7 M numbers, over the JSON cap
    refused = client.post("/api/v1/trace", json={"text": text, "layer": 1})
    assert refused.status_code == 413 and "encoding=f32" in refused.json()["detail"]
    header, steps = decode_f32_trace(post(client, "trace", "f32", text=text, layer=1).content)
    assert header["heads"] == list(range(12)) and steps["softmax"].shape == (12, 202, 202)
    assert client.post("/api/v1/trace?encoding=u16", json={"text": "x", "layer": 0}).status_code == 422
    spec = client.get("/openapi.json").json()
    (encoding,) = [p for p in spec["paths"]["/api/v1/trace"]["post"]["parameters"] if p["name"] == "encoding"]
    assert "f32" in encoding["description"] and encoding["schema"]["default"] == "json"
    schema = encoding["schema"]
    if "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].split("/")[-1]]
    assert schema["enum"] == ["json", "f32"]


@pytest.mark.parametrize("n_words, size", [(150, 64), (100, 16), (20, 64)])
def test_summary_is_the_max_of_each_block(client, n_words, size):
    text = " ".join(f"tok{i % 37}" for i in range(n_words))
    full = np.array(post(client, "attention", "json", text=text, layers=[1, 4], heads=[2, 9]).json()["attention"])
    s = post(client, "attention/summary", "json", text=text, layers=[1, 4], heads=[2, 9], size=size).json()
    n = full.shape[-1]
    m = min(n, size)
    assert s["size"] == m and len(s["bins"]) == m
    assert s["bins"][0][0] == 0 and s["bins"][-1][1] == n
    pooled = np.array(s["attention"])
    assert pooled.shape == (2, 2, m, m)
    for i, (r0, r1) in enumerate(s["bins"]):
        for j, (c0, c1) in enumerate(s["bins"]):
            assert pooled[:, :, i, j] == pytest.approx(full[:, :, r0:r1, c0:c1].max(axis=(-1, -2)), abs=1e-7)
    if n <= size:
        assert np.array_equal(pooled, full)


def test_summary_u16_and_limits(client):
    text = " ".join(["word"] * 510)
    r = post(client, "attention/summary", "u16", text=text)
    header, pooled = decode_u16(r.content)
    assert header["shape"] == [6, 12, 64, 64] and len(header["bins"]) == 64
    # the pooled maps and a header of 512 tokens (about 100 bytes each with display and unknown)
    assert len(r.content) <= 72 * 64 * 64 * 2 + 60_000
    assert client.post("/api/v1/attention/summary", json={"text": "x", "size": 65}).status_code == 422
    assert client.post("/api/v1/attention/summary", json={"text": "x", "size": 0}).status_code == 422


def test_cache_never_mixes_texts_pairs_or_models(client):
    hub: ModelHub = client.app.state.hub
    bodies = [{"text": "the first text"}, {"text": "the second text"},
              {"text": "the first text", "text_pair": "with a pair"}]
    first = [attention(client, **b, layers=[2], heads=[4]).json() for b in bodies]
    assert first[0]["attention"] != first[1]["attention"] != first[2]["attention"]
    again = [attention(client, **b, layers=[2], heads=[4]).json() for b in reversed(bodies)]
    assert list(reversed(again)) == first

    # Same text under another model id: a perturbed copy of the encoder must not be answered from the cache.
    model = hub.loaded["minilm"]
    other = copy.copy(model)
    other.net = copy.deepcopy(model.net)
    with torch.no_grad():
        other.net.blocks[0].attention.query.weight.mul_(1.5)
    hub.loaded["other"] = other
    try:
        enc = model.tokenizer.encode("the first text")
        a = hub.attention("minilm", enc, "the first text", None)
        b = hub.attention("other", enc, "the first text", None)
        assert not torch.equal(a.per_layer[0], b.per_layer[0])
        assert hub.attention("minilm", enc, "the first text", None) is a  # a hit
    finally:
        del hub.loaded["other"]


def test_byte_lru_evicts_least_recent_and_keeps_within_budget():
    cache = ByteLRU(100)
    cache.put("a", 1, 40)
    cache.put("b", 2, 40)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3, 40)  # evicts b
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    assert cache.used == 80
    cache.put("huge", 4, 101)  # larger than the budget: not stored, nothing evicted
    assert cache.get("huge") is None and len(cache) == 2
    cache.put("a", 5, 60)  # replacing a key frees its old size first
    assert cache.get("a") == 5 and cache.used <= 100
    off = ByteLRU(0)
    off.put("x", 1, 1)
    assert off.get("x") is None
