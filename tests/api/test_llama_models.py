"""Decoders of the Llama family served from their directories (as `attnscope serve --model DIR`): the model
list's new fields, and every model route, with the maps and the lens equal to transformers'."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.api.test_compact import decode_f32_trace

TEXT = "Hello world, attention is all you need."
SERVED = ("llama", "mistral", "qwen3", "gemma2")  # GQA with llama3 RoPE, a sliding window, q/k norms, soft-caps


@pytest.fixture(scope="module")
def llama_client(llama_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=[llama_dirs[kind] for kind in SERVED])
    with TestClient(create_app(settings)) as c:
        yield c


@pytest.fixture(scope="module")
def reference(llama_dirs):
    directory = str(llama_dirs["mistral"])
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation="eager",
                                                              dtype=torch.float32)
    return tok, model.eval()


def test_the_model_list_says_heads_positions_window_and_lm_head(llama_client):
    models = {m["id"]: m for m in llama_client.get("/api/v1/models").json()["models"]}
    assert set(models) == {"minilm", "tiny-llama", "tiny-mistral", "tiny-qwen3", "tiny-gemma2"}
    facts = {mid: (m["architecture"], m["n_heads"], m["n_kv_heads"], m["positions"], m["window"], m["lm_head"],
                   m["d_head"], m["causal"], m["pairs"]) for mid, m in models.items()}
    assert models["tiny-gemma2"]["window_layers"] == [0] and models["tiny-mistral"]["window_layers"] is None
    assert facts == {
        "minilm": ("bert", 12, 12, "learned", None, False, 32, False, True),
        "tiny-llama": ("llama", 4, 2, "rope", None, True, 12, True, False),
        "tiny-mistral": ("mistral", 4, 2, "rope", 4, True, 8, True, False),
        "tiny-qwen3": ("qwen3", 4, 2, "rope", None, True, 16, True, False),
        "tiny-gemma2": ("gemma2", 4, 2, "rope", 4, True, 16, True, False),
    }


def test_maps_over_http_equal_transformers(llama_client, reference):
    tok, model = reference
    batch = tok(TEXT, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    ref = np.stack([a[0].numpy() for a in out.attentions])  # (L, H, T, T)
    answer = llama_client.post("/api/v1/attention", json={"text": TEXT, "model": "tiny-mistral"}).json()
    assert [t["text"] for t in answer["tokens"]] == tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    assert "".join(t["display"] for t in answer["tokens"] if not t["special"]) == TEXT
    maps = np.array(answer["attention"], dtype=np.float32)
    assert maps.shape == ref.shape
    assert np.abs(maps - ref).max() <= 1e-5
    n = ref.shape[-1]
    i, j = np.indices((n, n))
    assert (maps[..., (j > i) | (j <= i - 4)] == 0).all()  # the causal mask and the window of 4


def test_the_lens_reads_the_own_lm_head(llama_client, reference, llama_dirs):
    tok, model = reference
    ids = tok(TEXT)["input_ids"]
    with torch.no_grad():
        states = model(torch.tensor([ids]), output_hidden_states=True).hidden_states
        logits = [model.lm_head(model.model.norm(h[0, -1])) for h in states[:-1]] + [model.lm_head(states[-1][0, -1])]
    answer = llama_client.post("/api/v1/lens", json={"text": TEXT, "model": "tiny-mistral", "top_k": 3})
    assert answer.status_code == 200, answer.text
    layers = answer.json()["layers"]
    assert [layer["layer"] for layer in layers] == ["embeddings", 0, 1]
    for layer, row in zip(layers, logits, strict=True):
        top = torch.softmax(row, -1).topk(3)
        assert [p["id"] for p in layer["predictions"]] == top.indices.tolist()
        assert np.allclose([p["probability"] for p in layer["predictions"]], top.values.numpy(), atol=1e-5)


@pytest.mark.parametrize("model", ["tiny-llama", "tiny-mistral", "tiny-qwen3", "tiny-gemma2"])
def test_every_route_answers_for_a_llama_family_model(llama_client, model):
    for route, extra in [("/api/v1/attention/summary", {}), ("/api/v1/aggregate", {"kind": "rollout"}),
                         ("/api/v1/metrics", {}), ("/api/v1/contributions", {"layers": [1], "heads": [0]}),
                         ("/api/v1/trace", {"layer": 1}), ("/api/v1/lens", {}),
                         ("/api/v1/logit-attribution", {"answer": [5, 7]})]:
        answer = llama_client.post(route, json={"text": TEXT, "model": model} | extra)
        assert answer.status_code == 200, (route, answer.text)
    trace = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": model, "layer": 0}).json()
    softmax = np.array(trace["steps"]["softmax"], dtype=np.float64)  # (H, T, T)
    assert softmax.shape[0] == 4 and np.allclose(softmax.sum(-1), 1.0, atol=1e-5)
    edited = llama_client.post("/api/v1/attention", json={
        "text": TEXT, "model": model, "edit": {"layer": 0, "heads": [1], "ablate": True}}).json()
    plain = llama_client.post("/api/v1/attention", json={"text": TEXT, "model": model}).json()
    assert np.allclose(edited["attention"][0], plain["attention"][0])
    assert not np.allclose(edited["attention"][1], plain["attention"][1])


def test_the_trace_names_the_key_value_head_of_each_query_head(llama_client):
    answer = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": "tiny-llama", "layer": 1}).json()
    assert (answer["heads"], answer["kv_head"]) == ([0, 1, 2, 3], [0, 0, 1, 1])
    k = np.array(answer["steps"]["split"]["k"], dtype=np.float64)  # (H, T, d_head)
    assert np.array_equal(k[0], k[1]) and np.array_equal(k[2], k[3]) and not np.allclose(k[1], k[2])
    one = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": "tiny-llama", "layer": 1,
                                                   "head": 3}).json()
    assert (one["heads"], one["kv_head"]) == ([3], [1])
    assert np.array_equal(np.array(one["steps"]["split"]["k"], dtype=np.float64)[0], k[3])
    minilm = llama_client.post("/api/v1/trace", json={"text": TEXT, "layer": 0, "head": 0}).json()
    assert "kv_head" not in minilm  # multi-head attention: every query head has its own keys


def test_a_learned_position_table_is_refused_for_rope(llama_client):
    answer = llama_client.get("/api/v1/positions", params={"kind": "learned", "model": "tiny-llama", "length": 8})
    assert answer.status_code == 422, answer.text
    error = answer.json()["errors"][0]
    assert (error["type"], error["loc"][-1], error["ctx"]) == ("positions_learned_none", "model", {"positions": "rope"})


def test_the_trace_gives_gemmas_own_scale_and_soft_cap(llama_client):
    """The scale step of Gemma 2 is cap·tanh(scores × scale / cap) with its own scale, recomputed here from the
    answer's scores; a model without a cap has no `softcap`."""
    answer = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": "tiny-gemma2", "layer": 0}).json()
    assert answer["scale"] == pytest.approx(12**-0.5) and answer["softcap"] == 3.0
    scores = np.array(answer["steps"]["scores"], dtype=np.float64)  # (H, T, T)
    scaled = np.array(answer["steps"]["scale"], dtype=np.float64)
    assert np.abs(scores * answer["scale"]).max() > 3.0 and np.abs(scaled).max() < 3.0  # the cap binds
    assert np.allclose(scaled, 3.0 * np.tanh(scores * answer["scale"] / 3.0), atol=1e-5)
    plain = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": "tiny-qwen3", "layer": 0}).json()
    assert "softcap" not in plain and plain["scale"] == pytest.approx(16**-0.5)


def _rope_numpy(x: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """RoPE's half-split form written out: row p of x (..., N, d) turned by the angle p·f_i in the pair
    (x[i], x[i + d/2]): x·cos + rotate_half(x)·sin, rotate_half(x1, x2) = (−x2, x1)."""
    n, d = x.shape[-2], x.shape[-1]
    angles = np.arange(n, dtype=np.float64)[:, None] * frequencies.astype(np.float64)[None, :]  # (N, d/2)
    cos, sin = np.cos(np.concatenate([angles, angles], -1)), np.sin(np.concatenate([angles, angles], -1))  # (N, d)
    half = d // 2
    turned = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + turned * sin


@pytest.mark.parametrize("kind", ["llama", "qwen3"])  # llama3 scaling; q/k norms before the rotation
def test_a_rope_trace_shows_q_and_k_before_and_after_the_rotation(llama_client, llama_dirs, kind):
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    directory = str(llama_dirs[kind])
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.AutoModelForCausalLM.from_pretrained(directory, attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    answer = llama_client.post("/api/v1/trace", json={"text": TEXT, "model": f"tiny-{kind}", "layer": 1}).json()
    config = model.config
    rope = answer["rope"]
    assert rope["theta"] == config.rope_parameters["rope_theta"]
    if kind == "llama":
        assert rope["scaling"] == {"kind": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                   "original_max_positions": 32}
    else:
        assert rope["scaling"] is None
    frequencies = np.array(rope["frequencies"], dtype=np.float32)
    assert np.array_equal(frequencies, model.model.rotary_emb.inv_freq.numpy())  # the same float32 numbers
    # transformers' own q and k of layer 1, before and after its rotation
    ids = tok(TEXT, return_tensors="pt")["input_ids"]
    heads, n, d = config.num_attention_heads, ids.shape[1], answer["d_head"]
    with torch.no_grad():
        hidden = model(ids, output_hidden_states=True).hidden_states[1]
        attention = model.model.layers[1].self_attn
        x = model.model.layers[1].input_layernorm(hidden)
        q = attention.q_proj(x).view(1, n, heads, d).transpose(1, 2)
        k = attention.k_proj(x).view(1, n, -1, d).transpose(1, 2)
        if kind == "qwen3":
            q, k = attention.q_norm(q), attention.k_norm(k)
        cos, sin = model.model.rotary_emb(x, torch.arange(n)[None])
        q_turned, k_turned = apply_rotary_pos_emb(q, k, cos, sin)
    group = heads // config.num_key_value_heads
    split = {m: np.array(answer["steps"]["split"][m], dtype=np.float64) for m in "qk"}
    rotated = {m: np.array(answer["rotated"][m], dtype=np.float64) for m in "qk"}
    assert split["q"].shape == rotated["q"].shape == rotated["k"].shape == (heads, n, d)
    assert np.abs(split["q"] - q[0].numpy()).max() <= 1e-5
    assert np.abs(split["k"] - k[0].repeat_interleave(group, 0).numpy()).max() <= 1e-5
    assert np.abs(rotated["q"] - q_turned[0].numpy()).max() <= 1e-5
    assert np.abs(rotated["k"] - k_turned[0].repeat_interleave(group, 0).numpy()).max() <= 1e-5
    for m in "qk":  # the formula of the notes on the answer's own numbers
        assert np.abs(_rope_numpy(split[m], frequencies) - rotated[m]).max() <= 1e-5
        assert not np.allclose(split[m][:, 1:], rotated[m][:, 1:], atol=1e-3)  # every later position turned
        assert np.abs(split[m][:, 0] - rotated[m][:, 0]).max() <= 1e-6  # position 0 is not turned
    scores = np.array(answer["steps"]["scores"], dtype=np.float64)
    assert np.abs(scores - rotated["q"] @ rotated["k"].transpose(0, 2, 1)).max() <= 1e-5
    assert np.abs(scores - split["q"] @ split["k"].transpose(0, 2, 1)).max() > 1e-3  # the rotation matters


def test_the_compact_trace_carries_the_rotation_after_the_split(llama_client):
    body = {"text": TEXT, "model": "tiny-llama", "layer": 0, "head": 3}
    js = llama_client.post("/api/v1/trace", json=body).json()
    raw = llama_client.post("/api/v1/trace?encoding=f32", json=body).content
    header, steps = decode_f32_trace(raw)
    order = [(a["step"], a["key"]) for a in header["arrays"]]
    at = order.index(("split", "v"))
    assert order[at + 1: at + 3] == [("rotated", "q"), ("rotated", "k")] and order[at + 3] == ("scores", None)
    assert header["rope"] == js["rope"] and header["kv_head"] == js["kv_head"] == [1]
    for m in "qk":
        assert np.array_equal(steps["rotated"][m].astype(np.float64), np.array(js["rotated"][m], dtype=np.float64))
        assert np.array_equal(steps["split"][m].astype(np.float64), np.array(js["steps"]["split"][m], dtype=np.float64))
    minilm = llama_client.post("/api/v1/trace", json={"text": TEXT, "layer": 0, "head": 0}).json()
    assert "rotated" not in minilm and "rope" not in minilm  # learned positions: nothing is rotated
    header, steps = decode_f32_trace(llama_client.post("/api/v1/trace?encoding=f32",
                                                       json={"text": TEXT, "layer": 0, "head": 0}).content)
    assert "rotated" not in steps and "rope" not in header
