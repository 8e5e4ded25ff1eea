"""How many numbers an answer holds, known before any forward runs (for answer size caps)."""

from __future__ import annotations


def attention_numbers(n_layers: int, n_heads: int, side: int) -> int:
    """Weights in a stack of attention maps: layers x heads x side x side."""
    return n_layers * n_heads * side * side


def pooled_side(n_tokens: int, size: int) -> int:
    """The side of a max-pooled summary of an n_tokens map (model/maps.py AttentionMaps.pooled)."""
    return min(n_tokens, size)


def trace_numbers(n_tokens: int, d_model: int, d_head: int, n_heads: int, rotated: bool = False) -> int:
    """Numbers in one traced layer (model/trace.py steps) with n_heads of its heads.

    Full-width steps (input, q/k/v projections, concat, output): 6 x N x D.
    Per-head steps of width d_head (split q/k/v, weighted_sum): 4 x h x N x Dh.
    Per-head N x N steps (scores, scale, mask, softmax): 4 x h x N x N.
    With `rotated` (RoPE: q and k after the rotation as well): 2 x h x N x Dh more.
    """
    n, h = n_tokens, n_heads
    return 6 * n * d_model + (6 if rotated else 4) * h * n * d_head + 4 * h * n * n
