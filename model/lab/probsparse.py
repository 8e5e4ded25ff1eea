"""Informer's ProbSparse self-attention (Zhou et al., AAAI 2021) as a weighting of the toy's layer.

The choice (sampled keys, the sparsity measure M, the active queries, the lazy rows' weights) is
model/nets/sparse.py's, as the course notes' source computes it.

The choice of active queries is a discrete function of q and k: the weighting takes it as a constant
(`probsparse_weights(active=..., lazy=...)`), so autograd and model/lab/backward.py pass the softmax's
gradient to the active rows' scores only; the lazy rows' weights are constants (their scores get zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from model.errors import ToyShapeError
from model.nets.attention import MultiHeadAttention, project, softmax_rows, split_heads
from model.nets.sparse import active_queries, lazy_weights, sample_keys, sparsity_measure

Tensor = torch.Tensor

DEFAULT_FACTOR = 5
MAX_FACTOR = 64  # c·⌈ln n⌉ is capped at n anyway; a larger c changes nothing on the toy's ≤ 64 rows


def probsparse_weights(masked: Tensor, any_hidden: bool = True, *, active: Tensor, lazy: Tensor) -> Tensor:
    """The weights used: the softmax of the masked scores on active rows, the constant lazy weights elsewhere.

    active: (H, L) bool; lazy: (L, S)."""
    return torch.where(active[..., None], softmax_rows(masked, any_hidden), lazy.to(masked.dtype))  # (B, H, L, S)


@dataclass(frozen=True)
class ProbSparseChoice:
    """What ProbSparse chose for a toy: sampled_keys (L, U), measure (H, L), active (H, u) query indices
    (ascending), active_rows (H, L) bool, lazy (L, S) the lazy rows' weights, and the factor c."""

    factor: int
    sampled_keys: Tensor
    measure: Tensor
    active: Tensor
    active_rows: Tensor
    lazy: Tensor


def check(queries: int, keys: int, causal: bool, hidden_keys: tuple[int, ...] | list[int], factor: int) -> None:
    """ProbSparse's own rules on the toy (ToyShapeError naming the field)."""
    if not 1 <= factor <= MAX_FACTOR:
        raise ToyShapeError("toy_factor_range", ("factor",),
                            f"factor {factor} is out of range; send a factor c from 1 to {MAX_FACTOR}",
                            factor=factor, max=MAX_FACTOR)
    if min(queries, keys) < 2:
        raise ToyShapeError("toy_probsparse_short", ("queries",) if queries < 2 else ("keys",),
                            f"ProbSparse samples c·⌈ln n⌉ keys and queries, and ⌈ln 1⌉ = 0: with {queries} "
                            f"queries and {keys} keys send at least 2 of each", queries=queries, keys=keys)
    if hidden_keys:
        raise ToyShapeError("toy_probsparse_hidden", ("hidden_keys",),
                            "ProbSparse's lazy rows take every value (the source has no key mask); remove "
                            "hidden_keys or pick another variant")
    if causal and queries != keys:
        raise ToyShapeError("toy_probsparse_causal", ("keys",),
                            f"causal ProbSparse gives a lazy row the cumulative sum of V up to its own position, "
                            f"so it needs as many keys as queries, not {keys} keys for {queries} queries",
                            queries=queries, keys=keys)


def choose(layer: MultiHeadAttention, x_q: Tensor, x_k: Tensor, causal: bool, factor: int,
           seed: int) -> ProbSparseChoice:
    """Sample the keys, measure every query of every head and pick the active ones, from the layer's own
    q and k (after the rotation, if any: what the scores are made of). x_q (L, D), x_k (S, D)."""
    with torch.no_grad():
        q = split_heads(project(x_q[None], layer.query), layer.n_heads)  # (1, H, L, Dk)
        k = split_heads(project(x_k[None], layer.key), layer.n_heads)  # (1, H, S, Dk)
        if layer.rotate is not None:
            q, k = layer.rotate(q), layer.rotate(k)
        sampled = sample_keys(x_q.shape[0], x_k.shape[0], factor, seed)  # (L, U)
        measure = sparsity_measure(q, k, sampled)[0]  # (H, L)
        active = active_queries(measure, factor)  # (H, u)
    rows = torch.zeros_like(measure, dtype=torch.bool).scatter_(-1, active, True)  # (H, L)
    lazy = lazy_weights(x_q.shape[0], x_k.shape[0], causal)  # (L, S)
    return ProbSparseChoice(factor=factor, sampled_keys=sampled, measure=measure, active=active,
                            active_rows=rows, lazy=lazy)


def output_difference(layer: MultiHeadAttention, out: Tensor, x_q: Tensor, x_k: Tensor, x_v: Tensor,
                      mask: Tensor | None) -> Tensor:
    """(L,): ‖ProbSparse's output − full softmax attention's output‖₂ per query, the same layer otherwise.

    out: ProbSparse's output (L, D)."""
    weigh = layer.weigh
    try:
        layer.weigh = softmax_rows
        with torch.no_grad():
            full = layer(x_q[None], keys=x_k[None], values=x_v[None], mask=mask)[0]  # (L, D)
    finally:
        layer.weigh = weigh
    difference: Tensor = torch.linalg.vector_norm(out - full, dim=-1)  # (L,)
    return difference
