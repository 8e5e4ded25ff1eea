"""GPT-2 checkpoints as causal pre-LayerNorm Transformers with a tied LM head (model/nets/transformer.py).

GPT-2 stores its projections as Conv1D weights, in x out, and fuses query, key and value into one
c_attn of width 3·D; each is split and transposed into our named nn.Linear projections (out x in).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from model.checkpoints.files import (
    Parts,
    check_used,
    checkpoint_error,
    load_state,
    load_tokenizer,
    read_weights,
    setting,
    strip_prefix,
)
from model.nets.config import ACTIVATIONS, NetConfig
from model.nets.transformer import Transformer

ARCHITECTURES = ("gpt2",)

# Buffers older GPT-2 checkpoints save with each block (the causal mask as a tensor): no weights.
BUFFERS = (".attn.bias", ".attn.masked_bias")
QKV = {"query": 0, "key": 1, "value": 2}


def gpt2_name(ours: str) -> str:
    """Map one of our parameter names to the GPT-2 checkpoint name (before the c_attn split)."""
    parts = ours.split(".")
    if parts[0] == "embeddings":
        return {"word": "wte", "position": "wpe"}[parts[1]] + "." + parts[-1]
    if parts[0] == "final_norm":
        return "ln_f." + parts[-1]
    i, rest = parts[1], parts[2:]
    table: dict[tuple[str, ...], str] = {
        ("attention_norm",): "ln_1", ("ff_norm",): "ln_2",
        ("attention", "query"): "attn.c_attn", ("attention", "key"): "attn.c_attn",
        ("attention", "value"): "attn.c_attn", ("attention", "output"): "attn.c_proj",
        ("ff_in",): "mlp.c_fc", ("ff_out",): "mlp.c_proj",
    }
    return f"h.{i}.{table[tuple(rest[:-1])]}.{rest[-1]}"


def conv1d_to_linear(ours: str, tensor: torch.Tensor) -> torch.Tensor:
    """A Conv1D tensor (in x out; c_attn's out is query|key|value side by side) as our Linear's (out x in)."""
    parts = ours.split(".")
    if parts[0] != "blocks" or "norm" in parts[2]:
        return tensor
    if parts[2] == "attention" and parts[3] in QKV:
        if tensor.shape[-1] % 3:
            return tensor  # does not split: the shape check names it
        tensor = tensor.chunk(3, dim=-1)[QKV[parts[3]]]  # (D, D) or (D,)
    return tensor.T.contiguous() if tensor.dim() == 2 else tensor


def _config(raw: dict[str, Any], path: Path) -> NetConfig:
    activation = raw.get("activation_function", "gelu_new")
    if activation not in ACTIVATIONS:
        raise checkpoint_error(path, f"activation_function {activation!r} is not supported; "
                                     f"use one of {', '.join(ACTIVATIONS)}")
    if raw.get("add_cross_attention"):
        raise checkpoint_error(path, "add_cross_attention is not supported")
    d_model = setting(raw, path, "n_embd")
    try:
        return NetConfig(
            vocab_size=setting(raw, path, "vocab_size"), d_model=d_model, n_layers=setting(raw, path, "n_layer"),
            n_heads=setting(raw, path, "n_head"), d_ff=raw.get("n_inner") or 4 * d_model,
            max_positions=setting(raw, path, "n_positions"), type_vocab_size=0,
            layer_norm_eps=raw.get("layer_norm_epsilon", 1e-5), norm_place="pre", causal=True,
            activation=activation, scaled=bool(raw.get("scale_attn_weights", True)),
            scale_by_layer=bool(raw.get("scale_attn_by_inverse_layer_idx", False)), tied_head=True,
        )
    except (ValueError, TypeError) as exc:
        raise checkpoint_error(path, str(exc)) from exc


def load(directory: Path, raw: dict[str, Any]) -> Parts:
    """The network and tokenizer of a GPT-2 directory (config.json already read)."""
    cfg = _config(raw, directory / "config.json")
    state, source = read_weights(directory)
    state = strip_prefix(state, "transformer.")
    decoder = Transformer(cfg)
    load_state(decoder, state, source, gpt2_name, conv1d_to_linear)
    used = {gpt2_name(k) for k in decoder.state_dict()}
    check_used(state, used, source, base=("wte.", "wpe.", "h.", "ln_f."), ignored=BUFFERS)
    tokenizer = load_tokenizer(directory, "gpt2", cfg.max_positions)
    return Parts(decoder, tokenizer, architecture="gpt2", causal=True, pairs=False, uses_segments=False)
