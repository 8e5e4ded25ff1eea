"""Scoring and weighting variants of attention, plugged into MultiHeadAttention's steps.

Scoring (the `scores` step, then the `scale` step): `scaled_dot` (q·kᵀ, scale 1/√d_keys), `dot`
(Luong: q·kᵀ, scale 1), `general` (Luong: q W_s kᵀ per head, scale 1), `cosine` (q·k / (|q||k|), scale √d_keys
or the one given), `additive` (Bahdanau: vᵀ tanh(q W + k U) per head, scale 1) and `linear`
(Katharopoulos et al. 2020: the kernel φ(q)·φ(k), φ(x) = elu(x) + 1 > 0, scale 1). `Destationary` wraps any
of them with τ and δ (scores · τ + δ). `probsparse` scores as `scaled_dot` (model/lab/probsparse.py).
Weighting (the `softmax` step, which holds the weights actually used): `softmax`; `hard` (one-hot
argmax of each row of the masked scores, ties to the lowest index); `sample` (one-hot drawn from
the softmax row); `gumbel` (softmax of the masked scores plus Gumbel noise over τ) and its
straight-through form (forward: the one-hot argmax of that Gumbel-softmax); `linear` (each row of the
masked kernel scores divided by its sum: no exponential, so φ(Q)·(φ(K)ᵀV) can be summed first and
attention costs O(N) instead of O(N²)).

The temperature τ divides the scaled scores in the `scale` step (factor = scale / τ), for every
variant. For `gumbel` the noise is divided by τ too, so the weights are softmax((s + g) / τ) with s
the scaled, masked scores before τ. A row whose keys are all hidden is zeros for every variant.

Seed convention: every random draw uses its own `torch.Generator().manual_seed(seed + stream)`,
uniform float64 numbers from `torch.rand(shape, generator=..., dtype=torch.float64)`, shape the
masked scores' (B, H, T, S) for `gumbel` and (B, H, T, 1) for `sample`. Streams: NOISE_STREAM here,
and the toy's default weights use the streams named in model/lab/toy.py.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import torch

from model.nets.attention import Score, Weigh, attention_scores, softmax_rows

SCORINGS = ("scaled_dot", "dot", "additive", "linear", "general", "cosine")
VARIANTS = ("scaled_dot", "dot", "additive", "hard", "sample", "gumbel", "linear", "probsparse", "general", "cosine")
COSINE_EPS = 1e-12  # |q| and |k| are clamped to at least this before dividing (torch.nn.functional.normalize's)
HARD_VARIANTS = ("hard", "sample")  # and gumbel with straight_through
NOISE_STREAM = 0  # the generator of sample's and gumbel's draws is seeded with seed + NOISE_STREAM
MAX_SEED = 2**32 - 1
MIN_TEMPERATURE = 1e-6  # keeps scores / temperature finite for every toy input (|scores| <= 2.7e29)


def uniform(shape: tuple[int, ...], seed: int, stream: int = NOISE_STREAM) -> torch.Tensor:
    """Uniform [0, 1) float64 numbers from the documented generator (seed + stream)."""
    generator = torch.Generator().manual_seed(seed + stream)
    return torch.rand(shape, generator=generator, dtype=torch.float64)


def gumbel_noise(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    """g = −log(−log u), u uniform (clamped away from 0 so g stays finite): Gumbel(0, 1)."""
    u = uniform(shape, seed).clamp_min(torch.finfo(torch.float64).tiny)
    return -torch.log(-torch.log(u))


def _hidden_rows(masked: torch.Tensor) -> torch.Tensor:
    return torch.isneginf(masked).all(dim=-1, keepdim=True)  # (B, H, T, 1)


def one_hot_rows(index: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """One-hot rows shaped like `like` (B, H, T, S) from an index (B, H, T, 1); all-hidden rows zeros."""
    hot = torch.zeros_like(like).scatter_(-1, index, 1.0)  # (B, H, T, S)
    return hot.masked_fill(_hidden_rows(like), 0.0)


def hard_weights(masked: torch.Tensor, any_hidden: bool = True) -> torch.Tensor:
    """One-hot argmax of each row of the masked scores; ties go to the lowest index (torch.argmax's rule)."""
    return one_hot_rows(masked.argmax(dim=-1, keepdim=True), masked)  # (B, H, T, S)


def sample_weights(masked: torch.Tensor, any_hidden: bool = True, *, seed: int = 0) -> torch.Tensor:
    """One-hot key drawn from each softmax row: the first j whose cumulative weight exceeds u ~ U[0, 1)."""
    soft = softmax_rows(masked, any_hidden)  # (B, H, T, S)
    u = uniform((*soft.shape[:-1], 1), seed).to(soft.dtype)  # (B, H, T, 1)
    index = (soft.cumsum(dim=-1) <= u).sum(dim=-1, keepdim=True)  # (B, H, T, 1)
    return one_hot_rows(index.clamp_max(soft.shape[-1] - 1), masked)


def gumbel_softmax(masked: torch.Tensor, any_hidden: bool = True, *, seed: int = 0,
                   temperature: float = 1.0) -> torch.Tensor:
    """softmax(masked + g / τ): with the masked scores already divided by τ, this is softmax((s + g) / τ)."""
    noisy = masked + gumbel_noise(tuple(masked.shape), seed).to(masked.dtype) / temperature  # (B, H, T, S)
    return softmax_rows(noisy, any_hidden)


def gumbel_weights(masked: torch.Tensor, any_hidden: bool = True, *, seed: int = 0, temperature: float = 1.0,
                   straight_through: bool = False) -> torch.Tensor:
    """The Gumbel-softmax; with straight_through its forward is the one-hot argmax of it (the backward
    through the soft weights is the backward pass's business)."""
    soft = gumbel_softmax(masked, any_hidden, seed=seed, temperature=temperature)
    if not straight_through:
        return soft
    return one_hot_rows(soft.argmax(dim=-1, keepdim=True), masked)


def feature_map(x: torch.Tensor) -> torch.Tensor:
    """Linear attention's φ(x) = elu(x) + 1: x + 1 for x > 0, exp(x) otherwise; always positive."""
    return torch.nn.functional.elu(x) + 1.0


def kernel_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Linear attention's scores φ(q)·φ(k)ᵀ (B, H, T, S): positive, so a row's sum normalises it."""
    return feature_map(q) @ feature_map(k).transpose(-2, -1)


def linear_weights(masked: torch.Tensor, any_hidden: bool = True) -> torch.Tensor:
    """Each row of the masked kernel scores divided by its sum over the visible keys (a hidden key adds
    nothing); a row with every key hidden is zeros."""
    kept = masked.masked_fill(torch.isneginf(masked), 0.0)  # (B, H, T, S)
    sums = kept.sum(dim=-1, keepdim=True)  # (B, H, T, 1)
    return kept / torch.where(sums > 0, sums, torch.ones_like(sums))


@dataclass(frozen=True)
class AdditiveScore:
    """Bahdanau scoring per head: scores[h, i, j] = v[h]ᵀ tanh(q_i W[h] + k_j U[h]), with the scorer's own
    parameters W (w_q), U (w_k) and v, not the layer's projections W_q, W_k.

    w_q, w_k: (H, Dk, A); v: (H, A), A the width of the additive layer (d_attn).
    """

    w_q: torch.Tensor
    w_k: torch.Tensor
    v: torch.Tensor

    def __call__(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        qa = torch.einsum("bhtd,hda->bhta", q, self.w_q)  # (B, H, T, A)
        ka = torch.einsum("bhsd,hda->bhsa", k, self.w_k)  # (B, H, S, A)
        hidden = torch.tanh(qa[:, :, :, None, :] + ka[:, :, None, :, :])  # (B, H, T, S, A)
        return torch.einsum("bhtsa,ha->bhts", hidden, self.v)  # (B, H, T, S)


@dataclass(frozen=True)
class GeneralScore:
    """Luong's "general" score per head: scores[h, i, j] = q_i W_s[h] k_jᵀ, a bilinear form with the scorer's
    own W_s (H, Dk, Dk) between query and key (scale 1, as Luong et al. 2015)."""

    w: torch.Tensor

    def __call__(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        qw = torch.einsum("bhtd,hde->bhte", q, self.w)  # (B, H, T, Dk)
        return qw @ k.transpose(-2, -1)  # (B, H, T, S)


def unit_rows(x: torch.Tensor) -> torch.Tensor:
    """x / max(|x|, COSINE_EPS) over the last axis (torch.nn.functional.normalize)."""
    return torch.nn.functional.normalize(x, dim=-1, eps=COSINE_EPS)


def cosine_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Cosine similarity q·k / (|q||k|) of every query with every key (B, H, T, S), each in [−1, 1]."""
    return unit_rows(q) @ unit_rows(k).transpose(-2, -1)


@dataclass(frozen=True)
class Destationary:
    """Non-stationary Transformers' de-stationary factors on a scoring: scores · τ + δ, δ per key (S,) or
    one number for every key, before the scale, the mask and the weighting (as their DSAttention does)."""

    inner: Score
    tau: float
    delta: torch.Tensor  # (S,) or ()

    def __call__(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return self.inner(q, k) * self.tau + self.delta.to(q.dtype)  # (B, H, T, S)


def scoring(variant: str, d_keys: int, additive: AdditiveScore | None = None, general: GeneralScore | None = None,
            cosine_scale: float | None = None) -> tuple[Score, float]:
    """The scoring function of a variant and its scale factor before the temperature."""
    if variant == "general":
        if general is None:
            raise ValueError("the general variant needs its W_s (GeneralScore)")
        return general, 1.0
    if variant == "cosine":
        return cosine_scores, math.sqrt(d_keys) if cosine_scale is None else cosine_scale
    if variant == "additive":
        if additive is None:
            raise ValueError("the additive variant needs its parameters (AdditiveScore)")
        return additive, 1.0
    if variant == "dot":
        return attention_scores, 1.0
    if variant == "linear":
        return kernel_scores, 1.0
    return attention_scores, 1.0 / math.sqrt(d_keys)


def weighting(variant: str, seed: int = 0, temperature: float = 1.0, straight_through: bool = False) -> Weigh:
    """The weighting function of a variant: (masked scores, any_hidden) -> the weights used."""
    if straight_through and variant != "gumbel":
        raise ValueError(f"straight_through is for the gumbel variant, not {variant!r}")
    chosen: Callable[..., torch.Tensor]
    if variant == "hard":
        chosen = hard_weights
    elif variant == "sample":
        chosen = partial(sample_weights, seed=seed)
    elif variant == "gumbel":
        chosen = partial(gumbel_weights, seed=seed, temperature=temperature, straight_through=straight_through)
    elif variant == "linear":
        chosen = linear_weights
    else:
        chosen = softmax_rows
    return chosen


def is_hard(variant: str, straight_through: bool = False) -> bool:
    """Whether the weights are one-hot rows drawn from a softmax (the answer then carries `soft`)."""
    return variant in HARD_VARIANTS or (variant == "gumbel" and straight_through)


def soft_weights(masked: torch.Tensor, variant: str, seed: int = 0, temperature: float = 1.0,
                 any_hidden: bool = True) -> torch.Tensor:
    """The softmax a hard variant's one-hot rows came from: the plain softmax of the masked scores
    for hard and sample, the Gumbel-softmax (same seed) for straight-through gumbel."""
    if variant == "gumbel":
        return gumbel_softmax(masked, any_hidden, seed=seed, temperature=temperature)
    return softmax_rows(masked, any_hidden)
