"""How many numbers an answer holds, known before any forward runs (for answer size caps)."""

from __future__ import annotations

from model.nets.config import NetConfig


def attention_numbers(n_layers: int, n_heads: int, side: int) -> int:
    """Weights in a stack of attention maps: layers x heads x side x side."""
    return n_layers * n_heads * side * side


def pooled_side(n_tokens: int, size: int) -> int:
    """The side of a max-pooled summary of an n_tokens map (model/maps.py AttentionMaps.pooled)."""
    return min(n_tokens, size)


def block_numbers(cfg: NetConfig, layer: int, n_tokens: int) -> int:
    """Numbers in one traced block's steps besides its attention (model/steps.py BLOCK_STEPS): N x D for
    block_input, norm_1, add_1, norm_2, mlp_out, add_2 and mlp_alone (and Gemma 2's two sandwich norms, a
    pre-norm model's final norm in its last block), N x d_ff for mlp_hidden and mlp_act (and a gated MLP's gate
    before and after its activation)."""
    wide = 7 + (2 if cfg.sandwich_norm else 0) + (1 if cfg.norm_place == "pre" and layer == cfg.n_layers - 1 else 0)
    inner = 4 if cfg.mlp == "gated" else 2
    return n_tokens * (wide * cfg.d_model + inner * cfg.d_ff)


def trace_numbers(n_tokens: int, d_model: int, d_head: int, n_heads: int, rotated: bool = False) -> int:
    """Numbers in one traced layer (model/trace.py steps) with n_heads of its heads.

    Full-width steps (input, q/k/v projections, concat, output): 6 x N x D.
    Per-head steps of width d_head (split q/k/v, weighted_sum): 4 x h x N x Dh.
    Per-head N x N steps (scores, scale, mask, softmax): 4 x h x N x N.
    With `rotated` (RoPE: q and k after the rotation as well): 2 x h x N x Dh more.
    """
    n, h = n_tokens, n_heads
    return 6 * n * d_model + (6 if rotated else 4) * h * n * d_head + 4 * h * n * n
