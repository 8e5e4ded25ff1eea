"""Generation with the KV cache (model/analysis/generate.py), against transformers.

On the tiny random decoders of every family with an LM head (GPT-2 and the Llama family): greedy generation
equals transformers' `generate(do_sample=False)` token for token (stops included); every number a cached step
gives (the new token's attention row in each layer and head, its probability and the top alternatives) equals
transformers' full forward over the whole sequence, eager attention, float32; sampling follows transformers'
temperature, top-k and top-p warpers and is reproducible with a seed.
"""

from __future__ import annotations

import json
import shutil

import pytest
import torch
import transformers

from model.analysis.generate import GenerateError, Generation, Sampling, sampling_distribution
from model.checkpoints import load
from model.nets.cache import KVCache

from ..checkpoints import LLAMA_KINDS

KINDS = ("gpt2", *LLAMA_KINDS)
TOLERANCE = 1e-5
PROMPT = "Hello world, attention is"


@pytest.fixture(scope="module", params=KINDS)
def family(request, checkpoint_dirs, llama_dirs):
    kind = request.param
    directory = checkpoint_dirs["gpt2"] if kind == "gpt2" else llama_dirs[kind]
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                              dtype=torch.float32).eval()
    return kind, directory, tok, model, load(directory)


def generate(ours, ids, n, attention=True, **sampling) -> Generation:
    run = Generation(ours, ids, n, Sampling(**sampling), attention)
    while not run.finished:
        run.step()
    return run


def test_greedy_equals_transformers_generate(family):
    kind, _, tok, model, ours = family
    for prompt in (PROMPT, "注意力"):
        ids = tok(prompt, return_tensors="pt").input_ids  # (1, T)
        with torch.no_grad():
            expected = model.generate(ids, max_new_tokens=24, do_sample=False)[0, ids.shape[1]:].tolist()
        run = generate(ours, ids[0].tolist(), 24)
        assert [t.id for t in run.tokens] == expected, (kind, prompt)
        assert [t.index for t in run.tokens] == list(range(ids.shape[1], ids.shape[1] + len(expected)))


@pytest.mark.parametrize("sampling", [{}, {"temperature": 1.5, "seed": 3}], ids=["greedy", "sampled"])
def test_every_cached_step_equals_a_full_forward(family, sampling):
    """Each new token's attention row (layer, head) and its distribution, computed with the cache, against
    transformers' forward over the prompt and every generated token at once."""
    kind, _, tok, model, ours = family
    prompt = tok(PROMPT).input_ids
    run = generate(ours, prompt, 16, **sampling)
    sequence = prompt + [t.id for t in run.tokens]
    with torch.no_grad():
        out = model(torch.tensor([sequence]), output_attentions=True)
    probs = torch.softmax(out.logits[0], dim=-1)  # (T, V)
    cfg = ours.cfg
    for token in run.tokens:
        i = token.index
        expected = torch.stack([layer[0, :, i, : i + 1] for layer in out.attentions])  # (L, H, i + 1)
        got = torch.stack(token.attention or [])
        assert got.shape == (cfg.n_layers, cfg.n_heads, i + 1)
        assert (got - expected).abs().max().item() <= TOLERANCE, (kind, i)
        assert abs(token.probability - probs[i - 1, token.id].item()) <= TOLERANCE
        top = torch.topk(probs[i - 1], 5)
        assert token.top_ids == top.indices.tolist()
        assert torch.allclose(torch.tensor(token.top_probabilities), top.values, rtol=0, atol=TOLERANCE)
        # 2 (keys and values) · layers · tokens · key-value heads · d_head · 4 bytes
        assert token.cache_bytes == 2 * cfg.n_layers * (i + 1) * cfg.kv_heads * cfg.d_head * 4


def test_the_cache_gives_a_full_forwards_hidden_state(family):
    """The network fed in pieces through one cache (the prompt, then one token at a time) against transformers'
    full forward: the sliding window (Mistral), learned positions (GPT-2) and RoPE offsets all line up."""
    kind, _, tok, model, ours = family
    ids = tok("Zebras quietly jump over 42 fences, said the attention head.").input_ids
    cache = KVCache(ours.cfg.n_layers)
    pieces = [ours.net(torch.tensor([ids[:5]]), cache=cache)]
    pieces += [ours.net(torch.tensor([[i]]), cache=cache) for i in ids[5:]]
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True)
    assert len(ids) > 8 and cache.length == len(ids)
    # float32 sums in another order (one row at a time instead of all at once): the difference is a few
    # units of float32's precision (1.2e-7) of the largest number, which for these random networks reaches
    # about 10 in the states and 30 in the logits; the bound is 1e-5 of that largest number.
    hidden = torch.cat(pieces, dim=1)  # (1, T, D)
    for got, expected in ((hidden, out.hidden_states[-1]), (ours.net.logits(hidden), out.logits)):
        bound = TOLERANCE * max(1.0, expected.abs().max().item())
        assert (got - expected).abs().max().item() <= bound, kind


def test_sampling_follows_transformers_warpers():
    from transformers.generation import logits_process as lp

    torch.manual_seed(0)
    for temperature, top_k, top_p in [(1.0, 0, 1.0), (0.7, 5, 1.0), (1.3, 0, 0.8), (0.5, 20, 0.3), (2.0, 1, 0.9)]:
        logits = torch.randn(50) * 3
        warped = logits[None].clone()
        for warper in (lp.TemperatureLogitsWarper(temperature), lp.TopKLogitsWarper(top_k) if top_k else None,
                       lp.TopPLogitsWarper(top_p) if top_p < 1 else None):
            if warper is not None:
                warped = warper(None, warped)
        expected = torch.softmax(warped[0], dim=-1)
        got = sampling_distribution(logits, Sampling(temperature, top_k, top_p))
        assert torch.allclose(got, expected, rtol=0, atol=1e-6), (temperature, top_k, top_p)


def test_a_tiny_temperature_is_greedy_not_nan():
    """The smallest positive temperature (a denormal) draws the most probable token, as the limit T → 0 does."""
    logits = torch.tensor([1.0, 3.0, -2.0, 2.5])
    for temperature in (5e-324, 1e-300, 1e-6):
        probs = sampling_distribution(logits, Sampling(temperature=temperature))
        assert torch.isfinite(probs).all() and probs.tolist() == [0.0, 1.0, 0.0, 0.0]


def test_sampling_is_reproducible_and_top_k_1_is_greedy(checkpoint_dirs):
    ours = load(checkpoint_dirs["gpt2"])
    prompt = ours.tokenizer.encode(PROMPT).ids
    ids = {seed: [t.id for t in generate(ours, prompt, 12, temperature=2.0, seed=seed).tokens] for seed in range(4)}
    assert ids[1] == [t.id for t in generate(ours, prompt, 12, temperature=2.0, seed=1).tokens]
    assert len({tuple(v) for v in ids.values()}) > 1
    greedy = [t.id for t in generate(ours, prompt, 12).tokens]
    assert [t.id for t in generate(ours, prompt, 12, temperature=3.0, top_k=1, seed=5).tokens] == greedy
    assert [t.id for t in generate(ours, prompt, 12, temperature=3.0, top_p=1e-6, seed=5).tokens] == greedy
    assert generate(ours, prompt, 12, attention=False).tokens[0].attention is None


def test_generation_stops_at_the_checkpoints_end_token(checkpoint_dirs, tmp_path):
    """eos_token_id of generation_config.json (a list too), else of config.json, ends a generation after it."""
    directory = shutil.copytree(checkpoint_dirs["gpt2"], tmp_path / "gpt2")
    ours = load(directory)
    prompt = ours.tokenizer.encode(PROMPT).ids
    greedy = [t.id for t in generate(ours, prompt, 8).tokens]
    assert ours.stop_ids == (0,) and 0 not in greedy[:3]
    (directory / "generation_config.json").write_text(json.dumps({"eos_token_id": [999, greedy[2]]}))
    stopped = load(directory)
    assert stopped.stop_ids == (999, greedy[2])
    assert [t.id for t in generate(stopped, prompt, 8).tokens] == greedy[:3]


def test_bad_generations_are_refused(checkpoint_dirs):
    ours = load(checkpoint_dirs["gpt2"])
    prompt = ours.tokenizer.encode(PROMPT).ids
    limit = ours.cfg.max_positions
    with pytest.raises(GenerateError) as info:
        Generation(ours, prompt, limit - len(prompt) + 1, Sampling())
    assert info.value.type == "generate_too_long" and info.value.loc == ("max_new_tokens",)
    assert info.value.ctx == {"tokens": len(prompt), "max_new_tokens": limit - len(prompt) + 1, "limit": limit}
    assert f"at most {limit - len(prompt)} new tokens" in info.value.message
    assert len(generate(ours, prompt, limit - len(prompt)).tokens) == limit - len(prompt)  # exactly the limit
    with pytest.raises(TypeError, match="no LM head"):
        Generation(load(checkpoint_dirs["bert"]), [1, 2], 1, Sampling())
    for bad in ({"temperature": -1.0}, {"top_k": -1}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(ValueError):
            Sampling(**bad)


@pytest.mark.parametrize("kind", ["gpt2", "llama", "qwen2"])
def test_a_stream_shows_each_character_at_the_token_that_completes_it(kind, checkpoint_dirs, llama_dirs):
    """Byte-level (GPT-2, Qwen) and byte-fallback (Llama) tokens of characters the vocabulary lacks: the ones
    holding a character's first bytes show nothing, the one with its last byte shows it; the displays join
    to the text as transformers' tokenizer decodes it."""
    directory = checkpoint_dirs["gpt2"] if kind == "gpt2" else llama_dirs[kind]
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    ours = load(directory)
    text = "Hello 你好 🙂 world"
    ids = tok(text, add_special_tokens=False).input_ids
    stream = ours.tokenizer.stream()
    shown = [stream.add(i) for i in ids]
    assert "".join(shown).strip() == tok.decode(ids).strip() == text
    assert "" in shown  # a token holding part of a character
    for character in "你好🙂":
        assert any(character in s for s in shown)
