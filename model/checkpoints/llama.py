"""Decoders of the Llama family as causal pre-RMSNorm Transformers with RoPE (model/nets/transformer.py).

Llama (and the checkpoints laid out as it is: SmolLM, TinyLlama), Mistral (a sliding window), Qwen2 and
Qwen2.5 (biases on q, k and v only) and Qwen3 (an RMSNorm over each head's q and k) and Gemma 2 are one layout:
embed_tokens, then per layer input_layernorm, self_attn.{q,k,v,o}_proj, post_attention_layernorm and a
SwiGLU mlp.{gate,up,down}_proj, then norm and lm_head (or the word embeddings, tied). Grouped-query
attention: num_key_value_heads. RoPE is the half-split form with rope_theta and an optional "linear" or
"llama3" scaling (config.json's rope_parameters, or the older rope_theta and rope_scaling). Gemma 2 adds
a norm after the attention and after the MLP (its four norms scale by 1 + weight), scaled embeddings, its
own score scale, soft-capped scores and logits, and local (sliding-window) and global layers in turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
from model.nets.config import ACTIVATIONS, ROPE_SCALINGS, NetConfig, RopeScaling
from model.nets.transformer import Transformer

ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "gemma2")

# Buffers older checkpoints save with each layer (RoPE's frequencies): no weights.
BUFFERS = ("rotary_emb.inv_freq",)
BLOCK_NAMES: dict[tuple[str, ...], str] = {
    ("attention_norm",): "input_layernorm", ("ff_norm",): "post_attention_layernorm",
    ("attention", "query"): "self_attn.q_proj", ("attention", "key"): "self_attn.k_proj",
    ("attention", "value"): "self_attn.v_proj", ("attention", "output"): "self_attn.o_proj",
    ("attention", "query_norm"): "self_attn.q_norm", ("attention", "key_norm"): "self_attn.k_norm",
    ("ff_gate",): "mlp.gate_proj", ("ff_in",): "mlp.up_proj", ("ff_out",): "mlp.down_proj",
}


# Gemma 2's four norms a layer: before and after the attention, before and after the MLP.
GEMMA_NAMES: dict[tuple[str, ...], str] = {
    ("attention_post_norm",): "post_attention_layernorm", ("ff_norm",): "pre_feedforward_layernorm",
    ("ff_post_norm",): "post_feedforward_layernorm",
}


def llama_name(ours: str, names: dict[tuple[str, ...], str] = BLOCK_NAMES) -> str:
    """Map one of our parameter names to the checkpoint's (without the "model." prefix)."""
    parts = ours.split(".")
    if parts[0] == "embeddings":
        return "embed_tokens." + parts[-1]
    if parts[0] == "final_norm":
        return "norm." + parts[-1]
    if parts[0] == "lm_head":
        return ours
    i, rest = parts[1], parts[2:]
    return f"layers.{i}.{names[tuple(rest[:-1])]}.{rest[-1]}"


def gemma_name(ours: str) -> str:
    return llama_name(ours, {**BLOCK_NAMES, **GEMMA_NAMES})


def _rope(raw: dict[str, Any], path: Path) -> tuple[float, RopeScaling | None]:
    """rope_theta and the scaling, from rope_parameters (transformers 5) or rope_theta + rope_scaling."""
    params = raw.get("rope_parameters") or raw.get("rope_scaling") or {}
    if not isinstance(params, dict):
        raise checkpoint_error(path, f"rope_parameters {params!r} is not an object")
    theta = params.get("rope_theta", raw.get("rope_theta", 10000.0))
    kind = params.get("rope_type", params.get("type", "default"))
    if kind == "default":
        return theta, None
    if kind not in ROPE_SCALINGS:
        raise checkpoint_error(path, f"rope_type {kind!r} is not supported; use default, {', '.join(ROPE_SCALINGS)}")
    if "factor" not in params:
        raise checkpoint_error(path, f"rope_type {kind!r} lacks its factor")
    if kind == "linear":
        return theta, RopeScaling("linear", params["factor"])
    original = params.get("original_max_position_embeddings", setting(raw, path, "max_position_embeddings"))
    return theta, RopeScaling("llama3", params["factor"], low_freq_factor=params.get("low_freq_factor", 1.0),
                              high_freq_factor=params.get("high_freq_factor", 4.0), original_max_positions=original)


def _window(raw: dict[str, Any], path: Path, kind: str, n_layers: int) -> tuple[int | None, tuple[int, ...] | None]:
    """The sliding window and the layers that have it (None: every layer): Mistral's sliding_window in every
    layer; Qwen2's and Qwen3's from layer_types, or from use_sliding_window and max_window_layers (the
    layers from max_window_layers on)."""
    window = raw.get("sliding_window")
    if kind == "mistral":
        return window, None
    types = raw.get("layer_types")
    if types is None and kind == "gemma2":  # older configs: the even layers local
        types = ["full_attention" if i % 2 else "sliding_attention" for i in range(n_layers)]
    if types is None:
        on = bool(raw.get("use_sliding_window", False)) and window is not None
        start = raw.get("max_window_layers", n_layers)
        types = ["sliding_attention" if on and i >= start else "full_attention" for i in range(n_layers)]
    if not isinstance(types, list) or len(types) != n_layers:
        raise checkpoint_error(path, f"layer_types {types!r} does not name one type per layer ({n_layers})")
    unknown = sorted({str(t) for t in types} - {"sliding_attention", "full_attention"})
    if unknown:
        raise checkpoint_error(path, f"layer_types {unknown} are not supported; use full_attention, sliding_attention")
    local = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    if not local or window is None:
        return None, None
    return window, None if len(local) == n_layers else local


def _gemma(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """Gemma 2's settings beyond Llama's (NetConfig's docstring): scaled embeddings, a norm after each sublayer
    too, the scores scaled by query_pre_attn_scalar^−½ and soft-capped, the logits soft-capped."""
    scalar = setting(raw, path, "query_pre_attn_scalar")
    if isinstance(scalar, bool) or not isinstance(scalar, int | float) or not scalar > 0:
        raise checkpoint_error(path, f"query_pre_attn_scalar {scalar!r} is not a positive number")
    return {"embed_scale": setting(raw, path, "hidden_size") ** 0.5, "sandwich_norm": True,
            "score_scale": scalar ** -0.5, "attention_softcap": raw.get("attn_logit_softcapping"),
            "logit_softcap": raw.get("final_logit_softcapping")}


def _config(raw: dict[str, Any], path: Path, kind: str) -> NetConfig:
    activation = raw.get("hidden_activation") or raw.get("hidden_act", "silu")
    if activation not in ACTIVATIONS:
        raise checkpoint_error(path, f"hidden_act {activation!r} is not supported; use one of {', '.join(ACTIVATIONS)}")
    n_layers = setting(raw, path, "num_hidden_layers")
    n_heads = setting(raw, path, "num_attention_heads")
    window, local_layers = _window(raw, path, kind, n_layers)
    try:
        theta, scaling = _rope(raw, path)
    except (ValueError, TypeError) as exc:
        raise checkpoint_error(path, f"rope scaling: {exc}") from exc
    if kind == "qwen2":  # q, k and v have biases; the output and the MLP none
        biases = {"qkv_bias": True, "output_bias": False, "mlp_bias": False}
    else:
        attention_bias = bool(raw.get("attention_bias", False))
        biases = {"qkv_bias": attention_bias, "output_bias": attention_bias,
                  "mlp_bias": bool(raw.get("mlp_bias", False))}
    tied = bool(raw.get("tie_word_embeddings", False))
    try:
        return NetConfig(
            vocab_size=setting(raw, path, "vocab_size"), d_model=setting(raw, path, "hidden_size"), n_layers=n_layers,
            n_heads=n_heads, n_kv_heads=raw.get("num_key_value_heads") or n_heads,
            d_ff=setting(raw, path, "intermediate_size"), max_positions=setting(raw, path, "max_position_embeddings"),
            type_vocab_size=0, layer_norm_eps=raw.get("rms_norm_eps", 1e-6), norm="rms", norm_place="pre",
            causal=True, window=window, local_layers=local_layers, activation=activation, mlp="gated",
            bias=False, **biases, positions="rope", rope_theta=theta, rope_scaling=scaling,
            head_dim=raw.get("head_dim") or None, qk_norm=kind == "qwen3", tied_head=tied, own_head=not tied,
            **(_gemma(raw, path) if kind == "gemma2" else {}),
        )
    except (ValueError, TypeError) as exc:
        raise checkpoint_error(path, str(exc)) from exc


def load(directory: Path, raw: dict[str, Any]) -> Parts:
    """The network and tokenizer of a Llama-family directory (config.json already read)."""
    kind = str(raw.get("model_type"))
    cfg = _config(raw, directory / "config.json", kind)
    state, source = read_weights(directory)
    head = state.get("lm_head.weight")
    state = strip_prefix(state, "model.")
    if head is not None and cfg.own_head:
        state["lm_head.weight"] = head
    name = gemma_name if kind == "gemma2" else llama_name
    if kind == "gemma2":  # Gemma's RMSNorm scales by 1 + weight
        state = {k: v + 1 if k.endswith("norm.weight") else v for k, v in state.items()}
    decoder = Transformer(cfg)
    load_state(decoder, state, source, name)
    used = {name(k) for k in decoder.state_dict()}
    check_used(state, used, source, base=("embed_tokens.", "layers.", "norm."), ignored=BUFFERS)
    if not (directory / "tokenizer.json").is_file():
        raise checkpoint_error(directory / "tokenizer.json", f"missing file (a {kind} checkpoint needs it)")
    tokenizer = load_tokenizer(directory, kind, cfg.max_positions)
    return Parts(decoder, tokenizer, architecture=kind, causal=True, pairs=False, uses_segments=False)

