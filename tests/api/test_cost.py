"""GET /api/v1/cost against numbers worked out by hand here, and every refusal naming the parameter to change."""

from __future__ import annotations

import json

import pytest

MAX_EXACT = 2**53 - 1


def get(client, **params):
    return client.get("/api/v1/cost", params=params)


def values(layer: dict) -> dict:
    return {name: q["value"] for name, q in layer.items()}


def test_the_notes_example(client):
    r = get(client, d_model=1024, n_heads=64, seq_len=100000, batch=1, bytes=2)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["sizes"] == {"model": None, "d_model": 1024, "n_heads": 64, "n_kv_heads": 64, "d_head": 16,
                             "n_layers": 1, "seq_len": 100000, "batch": 1, "bytes": 2, "bias": True}
    matrix = body["per_layer"]["attention_matrix_bytes"]
    assert matrix == {"value": 1_280_000_000_000, "formula": "B·H·S²·b", "filled": "1·64·100000²·2"}
    assert 100000**2 * 64 * 2 == 1_280_000_000_000 and round(1_280_000_000_000 / 2**30, 2) == 1192.09
    # written as a plain integer, not 1.28e12
    assert '"value":1280000000000,' in r.text.replace(" ", "")
    assert body["total"]["attention_matrix_bytes"] == 1_280_000_000_000
    assert body["max_exact"] == MAX_EXACT


def test_the_iris_layer(client):
    body = get(client, d_model=8, n_heads=2, seq_len=4, batch=16, bytes=8).json()
    assert values(body["per_layer"]) == {
        "parameters": 4 * 64 + 4 * 8,  # 288
        "parameter_bytes": 288 * 8,
        "attention_matrix_bytes": 16 * 2 * 4**2 * 8,  # 4096
        "cache_bytes": (5 * 16 * 4 * 8 + 16 * 2 * 4**2) * 8,  # (2560 + 512) x 8
        "flops": 8 * 16 * 4 * 8**2 + 4 * 16 * 4**2 * 8,  # 32768 + 8192
        "flash_attention_bytes": (16 * 2 * 4 * 4 + 2 * 16 * 2 * 4) * 8,  # (512 + 256) x 8
        "kv_cache_bytes": 2 * 16 * 4 * 2 * 4 * 8,  # K and V: 16 x 4 tokens x 2 heads x 4 wide, fp64
    }
    assert body["per_layer"]["parameters"]["formula"] == "4·E² + 4·E"
    assert body["per_layer"]["parameters"]["filled"] == "4·8² + 4·8"


def test_minilm_uses_its_sizes_and_all_its_layers(client):
    models = {m["id"]: m for m in client.get("/api/v1/models").json()["models"]}
    minilm = models["minilm"]
    body = get(client, model="minilm").json()
    assert body["sizes"] == {"model": "minilm", "d_model": 384, "n_heads": 12, "n_kv_heads": 12, "d_head": 32,
                             "n_layers": 6,
                             "seq_len": 512, "batch": 1, "bytes": 4, "bias": True}
    assert (minilm["d_model"], minilm["n_heads"], minilm["n_layers"], minilm["max_tokens"]) == (384, 12, 6, 512)
    assert body["total"] == {
        "parameters": 6 * (4 * 384**2 + 4 * 384),  # 3548160
        "parameter_bytes": 6 * 591_360 * 4,
        "attention_matrix_bytes": 6 * 12 * 512**2 * 4,  # 75497472
        "cache_bytes": 6 * (5 * 512 * 384 + 12 * 512**2) * 4,
        "flops": 6 * (8 * 512 * 384**2 + 4 * 512**2 * 384),
        "flash_attention_bytes": 6 * (12 * 512 * 32 + 2 * 12 * 512) * 4,
        "kv_cache_bytes": 6 * 2 * 512 * 384 * 4,
    }
    assert body["total"]["parameters"] == 3_548_160
    shorter = get(client, model="minilm", seq_len=128, bias="false", bytes=2).json()
    assert shorter["sizes"]["seq_len"] == 128 and shorter["total"]["parameters"] == 6 * 4 * 384**2


def test_defaults(client):
    body = get(client).json()
    assert body["sizes"] == {"model": None, "d_model": 512, "n_heads": 8, "n_kv_heads": 8, "d_head": 64,
                             "n_layers": 1, "seq_len": 1024, "batch": 1, "bytes": 4, "bias": True}
    assert body["per_layer"]["parameters"]["value"] == 4 * 512**2 + 4 * 512


def test_layers_multiply_every_number(client):
    one = get(client, d_model=64, n_heads=4, seq_len=300, batch=2).json()
    many = get(client, d_model=64, n_heads=4, seq_len=300, batch=2, n_layers=12).json()
    assert values(one["per_layer"]) == values(many["per_layer"])
    assert many["total"] == {name: 12 * v for name, v in values(one["per_layer"]).items()}


def test_the_curve(client):
    body = get(client, d_model=64, n_heads=4, seq_len=300, batch=2, bytes=2).json()
    curve = body["curve"]
    assert curve["seq_len"] == [1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 1000, 2000, 5000]
    assert curve["attention_matrix_bytes"] == [2 * 4 * s * s * 2 for s in curve["seq_len"]]
    assert curve["flash_attention_bytes"] == [(2 * 4 * s * 16 + 2 * 2 * 4 * s) * 2 for s in curve["seq_len"]]
    at = curve["seq_len"].index(300)
    assert curve["attention_matrix_bytes"][at] == body["per_layer"]["attention_matrix_bytes"]["value"]


def test_the_largest_allowed_answer_is_exact(client):
    # 10^7 tokens, one head, fp64: 10^14 x 8 = 8e14 bytes; FLOPs 8·10^7·1 + 4·10^14 = 4.00000008e14
    r = get(client, d_model=1, n_heads=1, seq_len=10_000_000, bytes=8)
    assert r.status_code == 200, r.text
    body = json.loads(r.text)
    assert body["per_layer"]["attention_matrix_bytes"]["value"] == 800_000_000_000_000
    assert body["per_layer"]["flops"]["value"] == 400_000_080_000_000
    numbers = [q["value"] for q in body["per_layer"].values()] + list(body["total"].values())
    numbers += body["curve"]["attention_matrix_bytes"] + body["curve"]["flash_attention_bytes"]
    numbers += body["curve"]["kv_cache_bytes"]
    assert all(type(n) is int and 0 < n <= MAX_EXACT for n in numbers)


def error(r, status=422):
    assert r.status_code == status, r.text
    body = r.json()
    assert body["detail"] and len(body["errors"]) == 1
    return body["errors"][0]


def test_heads_must_divide_d_model(client):
    e = error(get(client, d_model=384, n_heads=7))
    assert (e["loc"], e["type"], e["ctx"]) == (["query", "n_heads"], "cost_heads_divide",
                                               {"n_heads": 7, "d_model": 384})
    assert "send 6 or 8" in e["msg"]


def test_bytes_per_number(client):
    e = error(get(client, bytes=3))
    assert (e["loc"], e["type"], e["ctx"]) == (["query", "bytes"], "cost_bytes", {"bytes": 3})
    assert "2 (fp16, bf16)" in e["msg"]


def test_an_answer_that_would_not_be_exact(client):
    e = error(get(client, d_model=64, n_heads=64, seq_len=10_000_000, bytes=2))
    assert (e["loc"], e["type"]) == (["query", "seq_len"], "cost_not_exact")
    assert e["ctx"] == {"quantity": "attention_matrix_bytes", "value": 64 * 10**14 * 2, "max": MAX_EXACT}


def test_model_fixes_its_sizes(client):
    for name, v in (("d_model", 384), ("n_heads", 12), ("n_layers", 6)):
        e = error(get(client, model="minilm", **{name: v}))
        assert (e["loc"], e["type"], e["ctx"]) == (["query", name], "cost_model_sizes",
                                                   {"parameter": name, "model": "minilm"})
    e = error(get(client, model="minilm", seq_len=513))
    assert (e["loc"], e["type"], e["ctx"]) == (["query", "seq_len"], "cost_model_seq_len",
                                               {"seq_len": 513, "max_tokens": 512, "model": "minilm"})
    e = error(get(client, model="nope"), 404)
    assert e["type"] == "unknown_model" and "minilm" in e["msg"]


@pytest.mark.parametrize(("params", "loc", "type_"), [
    ({"d_model": 65537}, "d_model", "less_than_equal"),
    ({"d_model": 0}, "d_model", "greater_than_equal"),
    ({"seq_len": 10_000_001}, "seq_len", "less_than_equal"),
    ({"batch": 4097}, "batch", "less_than_equal"),
    ({"n_layers": 1025}, "n_layers", "less_than_equal"),
    ({"seq_len": "1e6"}, "seq_len", "int_parsing"),
    ({"seq_len": "100.0"}, "seq_len", "int_parsing"),
    ({"bytes": "fp16"}, "bytes", "int_parsing"),
    ({"bias": "maybe"}, "bias", "bool_parsing"),
    ({"bias": "1"}, "bias", "bool_parsing"),  # the schema says boolean: true or false only
    ({"bytes_per_number": 2}, "bytes_per_number", "extra_forbidden"),
    ({"heads": 2}, "heads", "extra_forbidden"),
    ({"n_kv_heads": 0}, "n_kv_heads", "greater_than_equal"),
    ({"n_kv_heads": "2.0"}, "n_kv_heads", "int_parsing"),
])
def test_each_field_on_its_own(client, params, loc, type_):
    e = error(get(client, **params))
    assert (e["loc"], e["type"]) == (["query", loc], type_)


def test_the_limits_are_in_the_openapi_schema(client):
    spec = client.get("/openapi.json").json()
    parameters = {p["name"]: p["schema"] for p in spec["paths"]["/api/v1/cost"]["get"]["parameters"]}
    assert parameters["bytes"]["enum"] == [1, 2, 4, 8]
    assert parameters["seq_len"]["anyOf"][0]["maximum"] == 10_000_000
    assert parameters["batch"]["maximum"] == 4096
    operation = spec["paths"]["/api/v1/cost"]["get"]
    assert "cost_heads_divide" in operation["description"] and "cost_not_exact" in operation["description"]
    assert "cost_kv_heads_divide" in operation["description"]
    assert parameters["n_kv_heads"]["anyOf"][0]["minimum"] == 1
    assert set(operation["responses"]) >= {"200", "404", "422"}


# ---- grouped-query attention and the KV cache ------------------------------------------------------


def test_grouped_query_attention(client):
    """E = 4096, H = 32, G = 8 (D = 128), 8192 tokens in bf16, no biases, 32 layers: a Llama-3-8B-shaped layer."""
    body = get(client, d_model=4096, n_heads=32, n_kv_heads=8, seq_len=8192, bytes=2, bias="false", n_layers=32).json()
    assert body["sizes"]["n_kv_heads"] == 8 and body["sizes"]["d_head"] == 128
    kv = body["per_layer"]["kv_cache_bytes"]
    assert kv == {"value": 2 * 8192 * 8 * 128 * 2, "formula": "2·B·S·G·D·b", "filled": "2·1·8192·8·128·2"}
    assert body["total"]["kv_cache_bytes"] == 2**30  # 1 GiB of keys and values for 8192 tokens
    params = body["per_layer"]["parameters"]
    assert params == {"value": 2 * 4096**2 + 2 * 4096 * 8 * 128, "formula": "2·E² + 2·E·G·D",
                      "filled": "2·4096² + 2·4096·8·128"}
    mha = get(client, d_model=4096, n_heads=32, seq_len=8192, bytes=2, bias="false", n_layers=32).json()
    assert mha["per_layer"]["kv_cache_bytes"]["value"] == 4 * kv["value"]  # H / G = 4
    assert mha["per_layer"]["parameters"]["formula"] == "4·E²"
    assert mha["per_layer"]["attention_matrix_bytes"] == body["per_layer"]["attention_matrix_bytes"]
    # G = H sent explicitly is multi-head attention, written as before
    assert get(client, d_model=4096, n_heads=32, n_kv_heads=32, seq_len=8192, bytes=2, bias="false",
               n_layers=32).json() == mha
    curve = body["curve"]
    assert curve["kv_cache_bytes"] == [2 * s * 8 * 128 * 2 for s in curve["seq_len"]]


def test_kv_heads_must_divide_heads(client):
    e = error(get(client, n_heads=8, n_kv_heads=3))
    assert (e["loc"], e["type"], e["ctx"]) == (["query", "n_kv_heads"], "cost_kv_heads_divide",
                                               {"n_kv_heads": 3, "n_heads": 8})
    assert "send 2 or 4" in e["msg"]
    e = error(get(client, n_heads=8, n_kv_heads=16))
    assert (e["type"], e["ctx"]) == ("cost_kv_heads_divide", {"n_kv_heads": 16, "n_heads": 8})
    assert "send 8" in e["msg"]
    e = error(get(client, model="minilm", n_kv_heads=4))
    assert (e["loc"], e["type"], e["ctx"]) == (["query", "n_kv_heads"], "cost_model_sizes",
                                               {"parameter": "n_kv_heads", "model": "minilm"})


@pytest.fixture(scope="module")
def llama_client(llama_dirs):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    settings = Settings(allowed_hosts=["testserver"], model_paths=[llama_dirs[k] for k in ("mistral", "qwen3")])
    with TestClient(create_app(settings)) as c:
        yield c


def test_a_served_model_gives_its_kv_heads_and_head_width(llama_client, llama_dirs):
    """tiny-mistral: E = 32, H = 4, G = 2 (D = 8); tiny-qwen3: E = 32, H = 4, G = 2 and head_dim D = 16, so
    H·D = 64 is not E. Their config.json, read here, says so; the numbers are counted here."""
    configs = {k: json.loads((llama_dirs[k] / "config.json").read_text()) for k in ("mistral", "qwen3")}
    models = {m["id"]: m for m in llama_client.get("/api/v1/models").json()["models"]}
    for kind, head in (("mistral", 8), ("qwen3", 16)):
        cfg = configs[kind]
        e, h, g, layers = (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                           cfg["num_hidden_layers"])
        assert (e, h, g) == (32, 4, 2) and cfg.get("head_dim", e // h) == head
        mid = f"tiny-{kind}"
        r = get(llama_client, model=mid, seq_len=10)
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["sizes"] == {"model": mid, "d_model": e, "n_heads": h, "n_kv_heads": g, "d_head": head,
                                 "n_layers": layers, "seq_len": 10, "batch": 1, "bytes": 4, "bias": True}
        assert models[mid]["n_kv_heads"] == g and models[mid]["d_head"] == head
        layer = values(body["per_layer"])
        assert layer["kv_cache_bytes"] == 2 * 10 * g * head * 4
        assert body["total"]["kv_cache_bytes"] == layers * 2 * 10 * g * head * 4
        # W_q (E x H·D), W_k, W_v (E x G·D), W_o (H·D x E) and their biases (bias counted: the query's default)
        assert layer["parameters"] == 2 * e * h * head + 2 * e * g * head + h * head + e + 2 * g * head
        assert layer["flash_attention_bytes"] == (h * 10 * head + 2 * h * 10) * 4
        # Q·Kᵀ and A·V: 2 x 2·H·S²·D; projections 2·S·E·(2·H·D + 2·G·D)
        assert layer["flops"] == 4 * h * 10 * 10 * head + 2 * 10 * e * (2 * h * head + 2 * g * head)
    qwen3 = get(llama_client, model="tiny-qwen3", seq_len=10).json()["per_layer"]
    assert qwen3["parameters"]["formula"] == "2·E·H·D + 2·E·G·D + H·D + E + 2·G·D"
    assert qwen3["parameters"]["filled"] == "2·32·4·16 + 2·32·2·16 + 4·16 + 32 + 2·2·16"
    mistral = get(llama_client, model="tiny-mistral", seq_len=10).json()["per_layer"]
    assert mistral["parameters"]["formula"] == "2·E² + 2·E·G·D + 2·E + 2·G·D"
