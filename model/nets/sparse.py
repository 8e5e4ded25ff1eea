"""Informer's ProbSparse choice (Zhou et al., AAAI 2021), computed as the course notes' source computes it
(Time-Series-Library's `ProbAttention`, the original Informer's), for L queries and S keys with the sampling
factor c:

    U = min(c·⌈ln S⌉, S) keys sampled with replacement for each query (one index matrix L × U, shared by the
        heads; torch.randint from torch.Generator().manual_seed(seed + SAMPLE_STREAM)), whatever the mask;
    M(q_i, K) = max_j q_i·k_j − (Σ_j q_i·k_j) / S over query i's sampled keys (unscaled q·k; the sum is
        divided by S, not by U, as that code does);
    the u = min(c·⌈ln L⌉, L) queries with the largest M in each head are "active" and keep their softmax over
        every key; the other ("lazy") queries get the mean of V (weights 1/S), or under a causal mask the
        cumulative SUM of V up to their own position (weights 1 on keys 0..i): that code's `V.cumsum`, not a mean.

The toy (model/lab/probsparse.py) and the what-if edit of a real model's layer (model/nets/edit.py,
model/nets/attention.py) both choose with these functions.
"""

from __future__ import annotations

import math

import torch

Tensor = torch.Tensor

SAMPLE_STREAM = 8  # the sampled keys come from torch.Generator().manual_seed(seed + SAMPLE_STREAM)


def sample_count(factor: int, n: int) -> int:
    """min(c·⌈ln n⌉, n): U for n keys, u for n queries (n ≥ 2: ⌈ln 1⌉ is 0)."""
    return min(factor * math.ceil(math.log(n)), n)


def sample_keys(queries: int, keys: int, factor: int, seed: int) -> Tensor:
    """(L, U) key indices drawn uniformly with replacement for each query, seeded (module docstring)."""
    generator = torch.Generator().manual_seed(seed + SAMPLE_STREAM)
    return torch.randint(keys, (queries, sample_count(factor, keys)), generator=generator)  # (L, U)


def sparsity_measure(q: Tensor, k: Tensor, sampled: Tensor) -> Tensor:
    """M (B, H, L): max minus (sum / S) of each query's unscaled scores q·k on its sampled keys.

    q: (B, H, L, Dk), k: (B, H, S, Dk), sampled: (L, U) key indices."""
    picked = k[:, :, sampled.to(k.device), :]  # (B, H, L, U, Dk)
    scores = torch.einsum("bhld,bhlud->bhlu", q, picked)  # (B, H, L, U)
    return scores.max(dim=-1).values - scores.sum(dim=-1) / k.shape[-2]  # (B, H, L)


def active_queries(measure: Tensor, factor: int) -> Tensor:
    """(..., u) the u queries of each head with the largest M, in ascending query order. Equal M go to the
    earlier query (a stable sort; the source's torch.topk leaves ties unspecified)."""
    u = sample_count(factor, measure.shape[-1])
    order = torch.sort(measure, dim=-1, descending=True, stable=True).indices  # (..., L)
    return order[..., :u].sort(dim=-1).values  # (..., u)


def lazy_weights(queries: int, keys: int, causal: bool, dtype: torch.dtype = torch.float64) -> Tensor:
    """(L, S): a lazy row's weights: 1/S everywhere (the mean of V), or with a causal mask 1 on keys 0..i
    (the cumulative sum of V up to the row, as the source computes it)."""
    if causal:
        return torch.ones(queries, keys, dtype=dtype).tril()  # (L, S)
    return torch.full((queries, keys), 1.0 / keys, dtype=dtype)  # (L, S)


def choose(q: Tensor, k: Tensor, factor: int, seed: int) -> tuple[Tensor, Tensor, Tensor]:
    """The keys sampled (L, U), every query's M (B, H, L) and the active queries (B, H, u) of the heads of q
    (B, H, L, Dk) and k (B, H, S, Dk), measured in float32 at least (a bfloat16 network's q and k widened)."""
    sampled = sample_keys(q.shape[-2], k.shape[-2], factor, seed)  # (L, U)
    wide = torch.promote_types(q.dtype, torch.float32)
    measure = sparsity_measure(q.to(wide), k.to(wide), sampled)  # (B, H, L)
    return sampled, measure, active_queries(measure, factor)


def sparsify(weights: Tensor, q: Tensor, k: Tensor, heads: list[int], factor: int, seed: int,
             causal: bool) -> Tensor:
    """ProbSparse in place of softmax attention for `heads` (a new tensor): their active queries keep their rows of
    `weights` (B, H, L, S), every other row becomes the lazy weights (1/S, or under a causal mask 1 on keys 0..i).
    q (B, H, L, Dk) and k (B, H, S, Dk) are what the scores were made of (after a rotation)."""
    index = torch.tensor(heads, device=weights.device)
    _, _, active = choose(q[:, index], k[:, index], factor, seed)  # (B, h, u)
    rows = torch.zeros(active.shape[:-1] + (q.shape[-2],), dtype=torch.bool, device=weights.device)
    rows.scatter_(-1, active, True)  # (B, h, L)
    lazy = lazy_weights(q.shape[-2], k.shape[-2], causal, weights.dtype).to(weights.device)  # (L, S)
    out = weights.clone()
    out[:, index] = torch.where(rows[..., None], weights[:, index], lazy)  # (B, h, L, S)
    return out
