"""Decoders of the Llama family (Llama, SmolLM's layout, Mistral, Qwen2, Qwen3) loaded into our one network,
against transformers.

The checkpoints are tiny random ones made once per session (tests/checkpoints.py LLAMA_SETTINGS: grouped-query
attention with 2 and 1 key-value heads, llama3 and linear RoPE scaling, a sliding window shorter than the
inputs, q/k/v biases, q/k norms and wider heads, a sharded and a bfloat16 checkpoint); the reference is
transformers' causal LM with eager attention on the same directory, in float32.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import torch
import transformers

from model.analysis.lens import residual_streams
from model.checkpoints import load
from model.errors import CheckpointError
from model.nets.config import NetConfig, RopeScaling
from model.nets.positions import rope_half, rope_inverse_frequencies

from ..checkpoints import LLAMA_KINDS, LLAMA_SETTINGS
from .test_architectures import off

TOLERANCE = 1e-5
TEXTS = {
    "english": "Hello world, attention is all you need.",
    "chinese": "注意力机制让模型关注输入。你好",  # 你好 is not in the training sentences: a fallback tokenizer's bytes
    "unseen": "Zebras quietly jump over 42 fences 🙂",
}


@pytest.fixture(scope="module", params=LLAMA_KINDS)
def checkpoint(request, llama_dirs) -> tuple[str, Path]:
    return request.param, llama_dirs[request.param]


@pytest.fixture(scope="module")
def reference(checkpoint):
    _, directory = checkpoint
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                              dtype=torch.float32)
    return tok, model.eval()


@pytest.fixture(scope="module")
def ours(checkpoint):
    return load(checkpoint[1])


def hf_forward(reference, text):
    tok, model = reference
    batch = tok(text, return_tensors="pt")
    with torch.no_grad():
        out = model(**batch, output_attentions=True, output_hidden_states=True)
    return batch["input_ids"][0].tolist(), torch.stack([a[0] for a in out.attentions]), out


def test_ids_maps_hidden_state_and_logits_equal_transformers(checkpoint, reference, ours):
    kind, _ = checkpoint
    settings = LLAMA_SETTINGS[kind]
    for case, text in TEXTS.items():
        ref_ids, ref_maps, out = hf_forward(reference, text)
        encoded = ours.tokenizer.encode(text)
        assert encoded.ids == ref_ids, case
        maps = torch.stack(ours.attention_maps(encoded).per_layer)  # (L, H, T, T)
        assert maps.shape == ref_maps.shape == (2, settings["num_attention_heads"], len(ref_ids), len(ref_ids))
        assert (maps - ref_maps).abs().max().item() <= TOLERANCE, case
        assert ref_maps[:, :, 3:].max().item() > 0.5, case  # far from uniform (past the first rows, which are 1s)
        hidden = ours.run(encoded)
        assert off(hidden, out.hidden_states[-1]) <= TOLERANCE, case
        streams = residual_streams(ours.decoder, torch.tensor([encoded.ids]))  # (L + 1, 1, T, D)
        logits = ours.decoder.unembed(streams[-1])  # (1, T, V): the final norm and the LM head
        assert off(logits, out.logits) <= TOLERANCE, case
        assert off(streams[1], out.hidden_states[1]) <= TOLERANCE, case


def test_the_network_is_configured_as_the_checkpoint_says(checkpoint, ours):
    kind, _ = checkpoint
    settings, cfg = LLAMA_SETTINGS[kind], ours.cfg
    assert ours.architecture == {"smollm": "llama"}.get(kind, kind)
    assert ours.causal and not ours.pairs and ours.lm_head
    activation = settings.get("hidden_activation", "silu")
    assert (cfg.norm, cfg.norm_place, cfg.positions, cfg.mlp, cfg.activation) == ("rms", "pre", "rope", "gated",
                                                                                 activation)
    assert cfg.kv_heads == settings["num_key_value_heads"]
    assert cfg.tied_head == settings["tie_word_embeddings"] and cfg.own_head != cfg.tied_head
    assert cfg.window == settings.get("sliding_window")
    assert cfg.qk_norm == (kind == "qwen3")
    assert cfg.d_head == settings.get("head_dim", settings["hidden_size"] // settings["num_attention_heads"])
    assert cfg.biases() == ((True, False, False) if kind == "qwen2" else (False, False, False))
    assert ours.net.embeddings.position is None
    gemma = kind == "gemma2"
    assert cfg.local_layers == ((0,) if gemma else None)  # Gemma 2: local and global layers in turn
    assert cfg.sandwich_norm == gemma
    assert cfg.attention_softcap == settings.get("attn_logit_softcapping")
    assert cfg.logit_softcap == settings.get("final_logit_softcapping")
    assert cfg.embed_scale == (settings["hidden_size"] ** 0.5 if gemma else None)
    scalar = settings.get("query_pre_attn_scalar", cfg.d_head)  # Gemma 2's, else the head width
    assert ours.attention_scale(0) == pytest.approx(scalar**-0.5, rel=1e-15)


def test_gemma_soft_caps_bind_and_the_window_is_local(llama_dirs):
    """The tiny Gemma 2's caps matter (its uncapped scores and logits go past them, so a cap in the wrong place
    shows in the comparison with transformers above), and only its local layer hides keys beyond the window."""
    ours = load(llama_dirs["gemma2"])
    cfg = ours.cfg
    encoded = ours.tokenizer.encode(TEXTS["english"])
    record = ours.trace_layer(encoded, 0)
    raw = record["scores"] * ours.attention_scale(0)  # (H, T, T) before the cap
    assert raw.abs().max().item() > cfg.attention_softcap
    assert record["scale"].abs().max().item() < cfg.attention_softcap
    assert torch.allclose(record["scale"], torch.tanh(raw / cfg.attention_softcap) * cfg.attention_softcap, atol=1e-6)
    hidden = ours.run(encoded)[0]  # (T, D)
    with torch.no_grad():
        uncapped = hidden @ ours.net.embeddings.word.weight.T  # the tied head, without the cap
        capped = ours.decoder.logits(hidden)
    assert uncapped.abs().max().item() > cfg.logit_softcap
    assert capped.abs().max().item() < cfg.logit_softcap
    n = len(encoded)
    maps = ours.attention_maps(encoded).per_layer
    assert n > cfg.window
    far = torch.ones(n, n, dtype=torch.bool).tril(diagonal=-cfg.window)  # keys at least `window` back
    assert maps[0][:, far].abs().max().item() == 0 and maps[1][:, far].min().item() > 0


def test_rope_frequencies_equal_transformers(checkpoint, reference, ours):
    """Our inverse frequencies (default, linear and llama3 scaling) are transformers' exactly."""
    kind, _ = checkpoint
    theirs = reference[1].model.rotary_emb.inv_freq
    assert torch.equal(ours.net.rope_inverse, theirs), kind


def test_the_sliding_window_hides_keys_further_back(llama_dirs):
    model = load(llama_dirs["mistral"])
    encoded = model.tokenizer.encode(TEXTS["english"])
    n, window = len(encoded), LLAMA_SETTINGS["mistral"]["sliding_window"]
    assert n > window + 2
    i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    hidden = (j > i) | (j <= i - window)
    for block in model.attention_maps(encoded).per_layer:  # (H, T, T)
        assert (block[:, hidden] == 0).all() and (block[:, ~hidden] > 0).all()


def test_a_perturbed_weight_breaks_the_comparison(llama_dirs):
    """Control: the comparison is able to fail (a q/k norm weight of Qwen3's second layer changed)."""
    directory = llama_dirs["qwen3"]
    reference = (transformers.AutoTokenizer.from_pretrained(str(directory)),
                 transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager").eval())
    model = load(directory)
    with torch.no_grad():
        model.net.block(1).attention.key_norm.weight[0] += 0.5
    _, ref_maps, out = hf_forward(reference, TEXTS["english"])
    encoded = model.tokenizer.encode(TEXTS["english"])
    maps = torch.stack(model.attention_maps(encoded).per_layer)
    assert (maps[0] - ref_maps[0]).abs().max().item() <= TOLERANCE  # the layer before the change still agrees
    assert (maps[1] - ref_maps[1]).abs().max().item() > TOLERANCE
    assert off(model.run(encoded), out.hidden_states[-1]) > TOLERANCE


@pytest.mark.parametrize("kind", ["mistral", "qwen3"])
def test_batched_inputs_get_the_maps_they_get_alone(kind, llama_dirs):
    """Right padding keeps every real token's RoPE position; the padding is hidden in windowed layers too."""
    from model.checkpoints.batch import attention_maps
    model = load(llama_dirs[kind])
    encodings = [model.tokenizer.encode(text) for text in TEXTS.values()]
    assert len({len(e) for e in encodings}) == len(encodings)  # lengths differ: the shorter ones are padded
    batched = attention_maps(model, encodings, batch_size=3)
    for encoded, maps in zip(encodings, batched, strict=True):
        alone = torch.stack(model.attention_maps(encoded).per_layer)  # (L, H, T, T)
        assert (maps - alone).abs().max().item() <= 1e-6


def test_rope_half_equals_transformers_rotation():
    """rope_half against transformers' own apply_rotary_pos_emb and rotary embedding on random q and k."""
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    cfg = transformers.LlamaConfig(hidden_size=64, num_attention_heads=4, max_position_embeddings=32,
                                   rope_parameters={"rope_type": "default", "rope_theta": 500.0})
    rotary = LlamaRotaryEmbedding(cfg)
    q, k = torch.randn(2, 4, 9, 16, generator=torch.Generator().manual_seed(3)).unbind(0)
    cos, sin = rotary(q, torch.arange(9)[None])
    ref_q, ref_k = apply_rotary_pos_emb(q[None], k[None], cos, sin)
    inverse = rope_inverse_frequencies(16, 500.0)
    assert torch.equal(inverse, rotary.inv_freq)
    assert (rope_half(q, inverse) - ref_q[0]).abs().max().item() <= 1e-6
    assert (rope_half(k, inverse) - ref_k[0]).abs().max().item() <= 1e-6


def test_rope_scaling_by_hand():
    """linear divides every frequency; llama3 keeps the short wavelengths, divides the long ones and mixes between."""
    plain = rope_inverse_frequencies(12).double()
    linear = rope_inverse_frequencies(12, scaling=RopeScaling("linear", 4.0)).double()
    torch.testing.assert_close(linear, plain / 4, rtol=1e-6, atol=0)
    scaled = rope_inverse_frequencies(12, scaling=RopeScaling("llama3", 8.0, 1.0, 4.0, 256)).double()
    wavelength = 2 * torch.pi / plain  # 6.3, 29, 135, 628, 2916, 13536
    assert torch.equal(scaled[wavelength < 64], plain[wavelength < 64].float().double())
    torch.testing.assert_close(scaled[wavelength > 256], plain[wavelength > 256] / 8, rtol=1e-6, atol=0)
    s = (256 / wavelength[2] - 1.0) / (4.0 - 1.0)
    torch.testing.assert_close(scaled[2], (1 - s) * plain[2] / 8 + s * plain[2], rtol=1e-6, atol=0)


def test_byte_fallback_tokens_display_the_characters_they_make(llama_dirs):
    model = load(llama_dirs["llama"])
    text = "你好 world"
    tokens = model.tokenizer.encode(text).tokens
    pieces = [t.text for t in tokens]
    assert pieces[0] == "<s>" and tokens[0].special
    assert "<0xE4>" in pieces  # 你 is spelt in bytes
    shown = [t.display for t in tokens if not t.special]
    assert pieces[1] == "\u2581" and shown[0] == ""  # the space the tokenizer put before the text shows nothing
    assert "".join(shown) == text  # every character once
    assert shown[1:7] == ["你", "", "", "好", "", ""]
    assert [t.display for t in model.tokenizer.encode("Hello world,").tokens] == ["<s>", "Hello", " world,"]
    assert not any(t.unknown for t in tokens)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_token_displays_join_into_the_text(kind, llama_dirs):
    model = load(llama_dirs[kind])
    for text in TEXTS.values():
        tokens = [t for t in model.tokenizer.encode(text).tokens if not t.special]
        assert "".join(t.display for t in tokens) == text


def test_no_socket_is_opened_while_loading(monkeypatch, llama_dirs):
    def refuse(self, address):
        raise AssertionError(f"network connection attempted to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    for directory in llama_dirs.values():
        model = load(directory)
        model.attention_maps(model.tokenizer.encode("hello world"))


def test_the_bf16_and_sharded_checkpoints_are_what_they_say(llama_dirs):
    assert json.loads((llama_dirs["qwen2"] / "config.json").read_text())["dtype"] == "bfloat16"
    index = json.loads((llama_dirs["smollm"] / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert not (llama_dirs["smollm"] / "model.safetensors").exists()


# ---- refusals: each names the file and the problem ----

def broken_copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "broken"
    shutil.copytree(source, target)
    return target


def edit_config(directory: Path, **changes) -> None:
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def refused(directory: Path) -> str:
    with pytest.raises(CheckpointError) as info:
        load(directory)
    return str(info.value)


def test_an_unsupported_model_type_names_the_supported_ones(llama_dirs, tmp_path):
    directory = broken_copy(llama_dirs["llama"], tmp_path)
    edit_config(directory, model_type="falcon")
    message = refused(directory)
    assert str(directory / "config.json") in message and "model_type 'falcon' is not supported" in message
    assert "llama, mistral, qwen2, qwen3" in message


def test_a_missing_shard_is_named(llama_dirs, tmp_path):
    directory = broken_copy(llama_dirs["smollm"], tmp_path)
    shard = sorted(directory.glob("model-0000*.safetensors"))[-1]
    shard.unlink()
    message = refused(directory)
    assert str(shard) in message and "missing file" in message


def test_a_shape_that_does_not_fit_the_config_is_named(llama_dirs, tmp_path):
    directory = broken_copy(llama_dirs["qwen3"], tmp_path)
    edit_config(directory, num_key_value_heads=4)
    message = refused(directory)
    assert str(directory / "model.safetensors") in message
    assert "layers.0.self_attn.k_proj.weight has shape (32, 32)" in message


def test_layers_with_and_without_a_window_equal_transformers(llama_dirs, tmp_path):
    """Qwen2 with a sliding window of 3 in its second layer only (layer_types): each layer's maps as transformers'."""
    directory = broken_copy(llama_dirs["qwen2"], tmp_path)
    edit_config(directory, layer_types=["full_attention", "sliding_attention"], sliding_window=3,
                use_sliding_window=True, max_window_layers=1)
    model = load(directory)
    assert (model.cfg.window, model.cfg.local_layers) == (3, (1,))
    reference = (transformers.AutoTokenizer.from_pretrained(str(directory)),
                 transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                                   dtype=torch.float32).eval())
    _, ref_maps, out = hf_forward(reference, TEXTS["english"])
    encoded = model.tokenizer.encode(TEXTS["english"])
    maps = torch.stack(model.attention_maps(encoded).per_layer)  # (L, H, T, T)
    assert (maps - ref_maps).abs().max().item() <= TOLERANCE
    assert off(model.run(encoded), out.hidden_states[-1]) <= TOLERANCE
    n = len(encoded)
    i, j = torch.meshgrid(torch.arange(n), torch.arange(n), indexing="ij")
    far = j <= i - 3  # keys the window hides
    assert (maps[1][:, far] == 0).all() and (maps[0][:, far] > 0).all()
    streams = residual_streams(model.decoder, torch.tensor([encoded.ids]))  # the lens runs the same masks
    assert off(model.decoder.final_norm(streams[-1]), out.hidden_states[-1]) <= TOLERANCE


def test_an_unknown_layer_type_is_refused(llama_dirs, tmp_path):
    directory = broken_copy(llama_dirs["qwen3"], tmp_path)
    edit_config(directory, layer_types=["full_attention", "chunked_attention"])
    assert "layer_types ['chunked_attention'] are not supported" in refused(directory)


def test_an_unsupported_rope_type_is_refused(llama_dirs, tmp_path):
    directory = broken_copy(llama_dirs["llama"], tmp_path)
    edit_config(directory, rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0})
    assert "rope_type 'yarn' is not supported" in refused(directory)


def test_an_untied_checkpoint_without_its_lm_head_is_refused(llama_dirs, tmp_path):
    from safetensors.torch import load_file, save_file
    directory = broken_copy(llama_dirs["mistral"], tmp_path)
    state = load_file(str(directory / "model.safetensors"))
    del state["lm_head.weight"]
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    assert "lacks tensor lm_head.weight" in refused(directory)


# ---- the config's new fields are validated ----

@pytest.mark.parametrize(("changes", "problem"), [
    ({"positions": "sinusoidal"}, "positions must be"),
    ({"positions": "rope", "head_dim": 7}, "head width must be even"),
    ({"positions": "rope", "rope_theta": 0.5}, "rope_theta must be"),
    ({"rope_scaling": RopeScaling("linear", 2.0)}, "rope_scaling is for positions 'rope'"),
    ({"qk_norm": True}, "qk_norm"),
    ({"tied_head": True, "own_head": True}, "either tied"),
    ({"qkv_bias": 1}, "qkv_bias must be"),
    ({"local_layers": (0,)}, "set window too"),
    ({"window": 2, "local_layers": (1,)}, "local_layers must be"),
])
def test_the_config_refuses_what_does_not_fit(changes, problem):
    base = {"vocab_size": 10, "d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 8, "max_positions": 8,
            "norm_place": "pre", "causal": True}
    with pytest.raises(ValueError, match=problem):
        NetConfig(**base | changes)


@pytest.mark.parametrize(("args", "problem"), [
    (("yarn", 2.0), "not supported"), (("linear", 0.0), "factor"), (("llama3", 8.0, 4.0, 1.0), "low_freq_factor"),
])
def test_rope_scaling_refuses_what_it_cannot_do(args, problem):
    with pytest.raises(ValueError, match=problem):
        RopeScaling(*args)
