"""POST /api/v1/generate on a real uvicorn server (tiny GPT-2 and Qwen3 checkpoints beside MiniLM): the event
stream, its numbers against transformers (greedy tokens, each new token's attention row and probability), the
sampling's seed, and every refusal before the stream starts."""

from __future__ import annotations

import json
import os

import httpx
import pytest
import torch
import transformers

from bench.common import Server

PROMPT = "Hello world, attention is"


@pytest.fixture(scope="module")
def dirs(checkpoint_dirs, llama_dirs):
    return {"tiny-gpt2": checkpoint_dirs["gpt2"], "tiny-qwen3": llama_dirs["qwen3"]}


@pytest.fixture(scope="module")
def api(dirs):
    with Server(ATTNSCOPE_MODEL_PATHS=os.pathsep.join(str(d) for d in dirs.values())) as server, \
            httpx.Client(base_url=server.base, trust_env=False, timeout=120) as client:
        yield client


def stream(api, **body) -> list[tuple[str, dict]]:
    """The answer's server-sent events as [(name, data)]."""
    found, block = [], {}
    with api.stream("POST", "/api/v1/generate", json=body) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line == "":
                if "event" in block:
                    found.append((block["event"], json.loads(block["data"])))
                block = {}
            elif not line.startswith(":"):
                key, _, value = line.partition(": ")
                block[key] = value
    return found


@pytest.mark.parametrize("model", ["tiny-gpt2", "tiny-qwen3"])
def test_the_stream_equals_transformers(api, dirs, model):
    tok = transformers.AutoTokenizer.from_pretrained(str(dirs[model]))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(dirs[model]), attn_implementation="eager",
                                                                  dtype=torch.float32).eval()
    prompt = tok(PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        greedy = reference.generate(prompt, max_new_tokens=12, do_sample=False)[0, prompt.shape[1]:].tolist()
    events = stream(api, text=PROMPT, model=model, max_new_tokens=12)
    names = [name for name, _ in events]
    assert names == ["prompt"] + ["token"] * len(greedy) + ["done"]
    first, tokens, done = events[0][1], [data for _, data in events[1:-1]], events[-1][1]
    cfg = reference.config
    assert [t["text"] for t in first["tokens"]] == tok.convert_ids_to_tokens(prompt[0].tolist())
    assert (first["n_layers"], first["n_heads"], first["n_kv_heads"]) == (
        cfg.num_hidden_layers if model == "tiny-qwen3" else cfg.n_layer,
        cfg.num_attention_heads if model == "tiny-qwen3" else cfg.n_head,
        cfg.num_key_value_heads if model == "tiny-qwen3" else cfg.n_head)
    assert [t["token"]["id"] for t in tokens] == greedy

    sequence = prompt[0].tolist() + greedy
    with torch.no_grad():
        out = reference(torch.tensor([sequence]), output_attentions=True)
    probs = torch.softmax(out.logits[0], dim=-1)  # (T, V)
    for t in tokens:
        i = t["index"]
        expected = torch.stack([layer[0, :, i, : i + 1] for layer in out.attentions])  # (L, H, i + 1)
        assert (torch.tensor(t["attention"]) - expected).abs().max().item() <= 1e-5
        assert abs(t["probability"] - probs[i - 1, t["token"]["id"]].item()) <= 1e-5
        assert [a["id"] for a in t["top"]] == torch.topk(probs[i - 1], 5).indices.tolist()
        assert t["token"]["text"] == tok.convert_ids_to_tokens(t["token"]["id"])
        d_head, kv = first["d_head"], first["n_kv_heads"]
        assert t["cache_bytes"] == 2 * first["n_layers"] * (i + 1) * kv * d_head * 4
    assert done["tokens"] == len(greedy)
    assert done["text"] == "".join(t["token"]["display"] for t in tokens)
    assert done["stopped"] == ("length" if len(greedy) == 12 else "end")
    assert done["tokens_per_second"] > 0


def test_sampling_with_a_seed_repeats_and_the_default_model_has_an_lm_head(api):
    body = {"text": PROMPT, "max_new_tokens": 10, "temperature": 1.5, "top_k": 20, "top_p": 0.9, "seed": 11,
            "attention": False}
    runs = [[(name, data) for name, data in stream(api, **body) if name == "token"] for _ in range(2)]
    assert runs[0] == runs[1] and all(data["attention"] is None for _, data in runs[0])
    other = [data for name, data in stream(api, **{**body, "seed": 12}) if name == "token"]
    assert [d["token"]["id"] for d in other] != [d["token"]["id"] for _, d in runs[0]]
    # no model named: the first with an LM head (minilm, the default, has none)
    assert stream(api, text=PROMPT, max_new_tokens=1)[0][1]["n_kv_heads"] == 4


@pytest.mark.parametrize(("body", "status", "kind", "loc"), [
    ({"model": "minilm"}, 422, "no_lm_head", ["body", "model"]),
    ({"model": "nope"}, 404, "unknown_model", ["body", "model"]),
    ({"max_new_tokens": 0}, 422, "greater_than_equal", ["body", "max_new_tokens"]),
    ({"max_new_tokens": 257}, 422, "less_than_equal", ["body", "max_new_tokens"]),
    ({"top_p": 0}, 422, "greater_than", ["body", "top_p"]),
    ({"top_p": 1.5}, 422, "less_than_equal", ["body", "top_p"]),
    ({"temperature": -1}, 422, "greater_than_equal", ["body", "temperature"]),
    ({"top_k": -1}, 422, "greater_than_equal", ["body", "top_k"]),
    ({"max_new_tokens": 60}, 422, "generate_too_long", ["body", "max_new_tokens"]),
])
def test_bad_requests_are_refused_before_the_stream(api, body, status, kind, loc):
    r = api.post("/api/v1/generate", json={"text": PROMPT, "model": "tiny-gpt2", **body})
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/json")
    error = r.json()["errors"][0]
    assert error["type"] == kind and error["loc"] == loc
    if kind == "no_lm_head":
        assert "tiny-gpt2" in error["msg"] and "tiny-qwen3" in error["msg"]
    if kind == "generate_too_long":
        assert error["ctx"]["limit"] == 64 and error["ctx"]["max_new_tokens"] == 60
        assert f"at most {64 - error['ctx']['tokens']} new tokens" in error["msg"]
