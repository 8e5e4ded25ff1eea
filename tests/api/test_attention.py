"""The /api/v1/attention and /api/v1/models contract, and each error it promises."""

import importlib.metadata
import json
import math
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from fastapi.testclient import TestClient

from app.hub import StartupError
from app.main import create_app
from app.settings import Settings
from model.checkpoints.registry import minilm_dir

from .conftest import attention


def test_models(client):
    r = client.get("/api/v1/models")
    assert r.status_code == 200
    models = r.json()["models"]
    assert [m["default"] for m in models].count(True) == 1
    (minilm,) = [m for m in models if m["id"] == "minilm"]
    assert minilm == {
        "id": "minilm", "name": minilm["name"], "architecture": "bert", "n_layers": 6, "n_heads": 12,
        "d_model": 384, "d_head": 32, "n_kv_heads": 12, "positions": "learned", "window": None, "window_layers": None,
        "max_tokens": 512, "dtype": "float32", "causal": False, "pairs": True, "lm_head": False,
        "local": False, "path": None, "default": True, "trained": False,
    }


def test_healthz(client):
    health = client.get("/healthz").json()
    assert health["status"] == "ok" and health["version"] == importlib.metadata.version("attnscope")
    jobs = health["jobs"]
    assert (jobs["queued"], jobs["dropped"], jobs["gave_way"]) == (0, 0, 0)
    for lane in ("interactive", "background"):  # the model's queue, lane by lane: nothing waits or runs now
        assert set(jobs[lane]) == {"waiting", "running", "done", "slices"}
        assert (jobs[lane]["waiting"], jobs[lane]["running"]) == (0, 0)


def test_full_answer_shape_rows_and_tokens(client):
    text = "The cat sat on the mat."
    r = attention(client, text=text)
    assert r.status_code == 200
    body = r.json()
    assert body["model"] == "minilm" and body["layers"] == list(range(6)) and body["heads"] == list(range(12))
    tokens = body["tokens"]
    n = len(tokens)
    assert [t["text"] for t in tokens] == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    for t in tokens:
        if t["special"]:
            assert t["start"] is None and t["end"] is None
        else:
            assert text[t["start"] : t["end"]].lower() == t["text"]
    att = torch.tensor(body["attention"])
    assert att.shape == (6, 12, n, n)
    assert torch.allclose(att.sum(-1), torch.ones(6, 12, n), atol=1e-3)


def test_values_equal_hf_transformers(client):
    """End to end: the JSON maps equal HF's eager attentions for the chosen layers and heads."""
    import transformers
    directory = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager").eval()
    text, pair = "Where did the dog go?", "It went home."
    with torch.no_grad():
        ref = model(**tok(text, pair, return_tensors="pt"), output_attentions=True).attentions
    body = attention(client, text=text, text_pair=pair, layers=[4, 1], heads=[7, 0, 11]).json()
    assert body["layers"] == [4, 1] and body["heads"] == [7, 0, 11]
    got = torch.tensor(body["attention"])
    want = torch.stack([ref[layer][0, [7, 0, 11]] for layer in (4, 1)])
    assert (got - want).abs().max().item() <= 1e-5


def test_pair_segments_and_typed_sep(client):
    body = attention(client, text="a [SEP] b", text_pair="c d").json()
    tokens = body["tokens"]
    assert [t["text"] for t in tokens] == ["[CLS]", "a", "[SEP]", "b", "[SEP]", "c", "d", "[SEP]"]
    assert [t["special"] for t in tokens] == [True, False, False, False, True, False, False, True]
    assert [t["segment"] for t in tokens] == [0, 0, 0, 0, 0, 1, 1, 1]
    assert (tokens[2]["start"], tokens[2]["end"]) == (2, 7)
    assert (tokens[6]["start"], tokens[6]["end"]) == (2, 3)  # offsets into text_pair


def test_offsets_count_code_points(client):
    text = "🙂 ok"
    tokens = attention(client, text=text, layers=[0], heads=[0]).json()["tokens"]
    ok = [t for t in tokens if t["text"] == "ok"][0]
    assert (ok["start"], ok["end"]) == (2, 4)  # the emoji is one code point (two UTF-16 units)


def _error(r, status):
    assert r.status_code == status, r.text
    body = r.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body["detail"]


@pytest.mark.parametrize(
    "body, status, says",
    [
        ({"text": ""}, 422, "blank"),
        ({"text": "  \n\t "}, 422, "blank"),
        ({"text": "x", "text_pair": " "}, 422, "text_pair"),
        ({"text": "x", "model": "gpt-9"}, 404, "minilm"),
        ({"text": "x", "layers": []}, 422, "at least 1"),
        ({"text": "x", "layers": [1, 1]}, 422, "duplicates"),
        ({"text": "x", "layers": [6]}, 422, "0..5"),
        ({"text": "x", "layers": [-1]}, 422, "0..5"),
        ({"text": "x", "heads": [12]}, 422, "0..11"),
        ({"text": "x", "heads": []}, 422, "heads"),
        ({"text": "x", "heads": [3, 3]}, 422, "duplicates"),
        ({"text": "x", "layers": ["3"]}, 422, "integer"),
        ({"text": "x", "layers": [3.0]}, 422, "integer"),
        ({"text": "x", "layers": [True]}, 422, "integer"),
        ({"text": 5}, 422, "string"),
        ({"text": "x", "colour": "red"}, 422, "colour"),
        ({}, 422, "text"),
        ({"text": " ".join(["word"] * 600)}, 413, "602"),
    ],
)
def test_errors(client, body, status, says):
    assert says in _error(attention(client, **body), status)


def test_escaped_lone_surrogate_is_422(client):
    raw = '{"text": "a\\ud800b"}'
    r = client.post("/api/v1/attention", content=raw, headers={"content-type": "application/json"})
    assert "surrogate" in _error(r, 422)


def test_too_many_tokens_names_limit_and_count(client):
    detail = _error(attention(client, text=" ".join(["word"] * 600)), 413)
    assert "602" in detail and "512" in detail


@pytest.mark.parametrize("raw", ["{bad json", '{"text": "x",}', "", "[1, 2]", '"text"'])
def test_malformed_json(client, raw):
    r = client.post("/api/v1/attention", content=raw, headers={"content-type": "application/json"})
    assert 400 <= r.status_code < 500
    assert r.json()["detail"]


@pytest.mark.parametrize("raw", ['{"text": "x", "layers": [NaN]}', '{"text": "x", "heads": [Infinity]}',
                                 '{"text": 1e999}', '{"text": "\\udcff", "layers": [NaN]}'])
def test_validation_errors_never_echo_the_input(client, raw):
    r = client.post("/api/v1/attention", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422
    body = json.loads(r.text, parse_constant=lambda c: pytest.fail(f"answer holds {c}"))
    assert all(set(e) == {"loc", "msg", "type"} for e in body["errors"])  # no "input" echoed
    assert "udcff" not in r.text.lower()


def test_body_over_the_limit_is_413(client):
    big = json.dumps({"text": "word " * 600_000})  # ~3 MB, over the 2 MB default
    detail = _error(client.post("/api/v1/attention", content=big, headers={"content-type": "application/json"}), 413)
    assert str(2 * 1024 * 1024) in detail


def test_chunked_body_over_the_limit_is_413(client):
    def chunks():
        yield b'{"text": "'
        for _ in range(300):
            yield b"word " * 2000
        yield b'"}'

    r = client.post("/api/v1/attention", content=chunks(), headers={"content-type": "application/json"})
    _error(r, 413)


def test_json_cap_is_413_and_says_what_to_do():
    with TestClient(create_app(Settings(max_json_values=1000, allowed_hosts=["testserver"]))) as small:
        detail = _error(attention(small, text="The cat sat on the mat."), 413)
        assert "fewer layers or heads" in detail and "1000" in detail
        assert attention(small, text="The cat sat on the mat.", layers=[0], heads=[0]).status_code == 200


def test_unknown_default_model_refuses_to_start():
    with pytest.raises(StartupError, match="ATTNSCOPE_DEFAULT_MODEL='nope'.*minilm"):
        with TestClient(create_app(Settings(default_model="nope"))):
            pass


# Different requests on both lanes of the model worker: views' forwards (interactive) and patching and
# attribution (background), each text sent once, so every answer is computed, none a cache copy.
CONCURRENT = [
    *[("/api/v1/attention", {"text": f"Concurrency keeps answer {i} equal to a fresh server's.", "layers": [i % 6],
                              "heads": [i % 12]}) for i in range(8)],
    *[("/api/v1/trace", {"text": f"Trace {i} of a busy server.", "layer": i, "head": 2 * i}) for i in range(2)],
    ("/api/v1/metrics", {"text": "Metrics while others run."}),
    ("/api/v1/patch", {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the mat."}),
    ("/api/v1/patch", {"clean": "A bird flew over the sea.", "corrupted": "A bird swam over the sea.",
                       "target": "residual"}),
    ("/api/v1/attribution", {"text": "Gradients beside attention.", "target": "A second text.", "steps": 32}),
]


def test_concurrent_different_requests_each_equal_a_fresh_servers_answer(client):
    def call(request):
        path, body = request
        r = client.post(path, json=body)
        assert r.status_code == 200, (path, r.text)
        return r.json()

    with ThreadPoolExecutor(max_workers=len(CONCURRENT)) as pool:
        answers = list(pool.map(call, CONCURRENT))
    with TestClient(create_app(Settings(allowed_hosts=["testserver"], cache_bytes=0))) as fresh:
        for (path, body), answer in zip(CONCURRENT, answers, strict=True):
            alone = fresh.post(path, json=body)
            assert alone.status_code == 200 and alone.json() == answer, path
    assert not any(math.isnan(v) for row in answers[0]["attention"][0][0] for v in row)


def test_tokens_carry_display_and_unknown(client):
    text = "注意力机制让模型学会聚焦于最相关的部分。"
    tokens = attention(client, text=text, text_pair="The Café.", layers=[0], heads=[0]).json()["tokens"]
    assert all({"display", "unknown"} <= set(t) for t in tokens)
    for t in tokens:
        if t["special"]:
            assert t["display"] == t["text"] and t["unknown"] is False
        elif t["text"] == "[UNK]":
            assert t["unknown"] is True and t["display"] == text[t["start"] : t["end"]]
        else:
            assert t["unknown"] is False and t["display"] == t["text"]
    assert "".join(t["display"] for t in tokens if t["segment"] == 0 and not t["special"]) == text
    assert [t["display"] for t in tokens if t["segment"] == 1 and not t["special"]] == ["the", "cafe", "."]
    header = client.post("/api/v1/attention?encoding=u16", json={"text": text, "layers": [0], "heads": [0]})
    assert b'"display":"\xe6\xb3\xa8","unknown":true' in header.content  # the compact header carries them too


@pytest.mark.parametrize(
    "path, body, status, loc, type_",
    [
        ("attention", {"text": "x", "layers": [1, 7]}, 422, ["body", "layers", "1"], "index_out_of_range"),
        ("attention", {"text": "x", "heads": [12]}, 422, ["body", "heads", "0"], "index_out_of_range"),
        ("attention/summary", {"text": "x", "layers": [6]}, 422, ["body", "layers", "0"], "index_out_of_range"),
        ("trace", {"text": "x", "layer": 6}, 422, ["body", "layer"], "index_out_of_range"),
        ("trace", {"text": "x", "layer": 0, "head": 12}, 422, ["body", "head"], "index_out_of_range"),
        ("attention", {"text": "x", "model": "gpt-9"}, 404, ["body", "model"], "unknown_model"),
        ("trace", {"text": "word " * 600, "layer": 0}, 413, ["body", "text"], "too_many_tokens"),
        ("attention", {"text": " "}, 422, ["body", "text"], "value_error"),
    ],
)
def test_model_rule_errors_name_the_field(client, path, body, status, loc, type_):
    r = client.post(f"/api/v1/{path}", json=body)
    assert r.status_code == status, r.text
    (error,) = r.json()["errors"]
    assert error["loc"] == loc and error["type"] == type_ and error["msg"]


def test_json_cap_answer_names_its_rule():
    with TestClient(create_app(Settings(max_json_values=1000, allowed_hosts=["testserver"]))) as small:
        body = attention(small, text="The cat sat on the mat.").json()
        assert body["errors"] == [{"loc": ["body"], "msg": body["detail"].removesuffix("."),
                                   "type": "answer_too_large"}]
