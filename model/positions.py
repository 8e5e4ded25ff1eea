"""Positional encodings as pure functions: sinusoidal, RoPE, ALiBi, and a model's learned table.

Every table is float64. Shape letters as in model/__init__.py, plus L (positions, or queries)
and S (keys) where a table relates two sequences.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .pretrained import PretrainedEncoder

BASE = 10000.0  # the wavelength base of the sinusoidal table and of RoPE (Vaswani et al. 2017; Su et al. 2021)


def _check_positive(value: int, name: str) -> None:
    if value < 1:
        raise ValueError(f"{name} is {value}; it must be at least 1")


def _check_even(value: int, name: str, what: str) -> None:
    if value % 2:
        raise ValueError(f"{name} is {value}; {what} pairs dimensions, so {name} must be even (try {value + 1})")


def _frequencies(dim: int) -> torch.Tensor:
    """10000^(−2i/dim) for i = 0..dim/2−1."""
    i = torch.arange(dim // 2, dtype=torch.float64)  # (dim/2,)
    return BASE ** (-2.0 * i / dim)  # (dim/2,)


def sinusoidal(length: int, d_model: int) -> torch.Tensor:
    """The sinusoidal table (length, d_model): P[p, 2i] = sin(p / 10000^(2i/D)), P[p, 2i+1] = cos(same).

    An odd d_model raises ValueError: every frequency fills a sin column and a cos column.
    """
    _check_positive(length, "length")
    _check_positive(d_model, "d_model")
    _check_even(d_model, "d_model", "the sinusoidal table")
    angles = rope_angles(length, d_model)  # (length, D/2)
    table = torch.empty(length, d_model, dtype=torch.float64)  # (length, D)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles)
    return table


def rope_angles(length: int, dim: int, offset: int = 0) -> torch.Tensor:
    """RoPE's rotation angles (length, dim/2): θ[p, i] = (p + offset) · 10000^(−2i/dim)."""
    _check_positive(length, "length")
    _check_positive(dim, "dim")
    _check_even(dim, "dim", "RoPE")
    if offset < 0:
        raise ValueError(f"offset is {offset}; positions start at 0 or later")
    p = torch.arange(offset, offset + length, dtype=torch.float64)  # (length,)
    return p[:, None] * _frequencies(dim)[None, :]  # (length, dim/2)


def rope(x: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Rotate x (..., L, dim) by position, RoPE's interleaved-pairs form (RoFormer, Su et al. 2021).

    Each pair (x[2i], x[2i+1]) of the row at position p = offset + row is rotated by the angle
    θ[p, i] = p · 10000^(−2i/dim):  (a, b) → (a·cos θ − b·sin θ, a·sin θ + b·cos θ).
    This is the complex form the notes give (q_m · k_n depends on (m − n)θ): pair i read as the
    complex number a + ib is multiplied by e^(iθ). (The half-split form of GPT-NeoX/Llama pairs
    x[i] with x[i + dim/2] instead; it is the same rotation on permuted columns.)
    The angles are float64; the answer has x's dtype. An odd dim raises ValueError.
    """
    if x.dim() < 2:
        raise ValueError(f"x has {x.dim()} dimensions; RoPE needs (..., L, dim)")
    length, dim = x.shape[-2], x.shape[-1]
    _check_even(dim, "dim", "RoPE")
    if length == 0:
        return x.clone()
    angles = rope_angles(length, dim, offset)  # (L, dim/2)
    cos, sin = torch.cos(angles).to(x.dtype), torch.sin(angles).to(x.dtype)  # (L, dim/2) each
    a, b = x[..., 0::2], x[..., 1::2]  # (..., L, dim/2) each
    rotated = torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1)  # (..., L, dim/2, 2)
    return rotated.flatten(-2)  # (..., L, dim)


def alibi_slopes(n_heads: int) -> torch.Tensor:
    """ALiBi's per-head slopes (H,): m_h = 2^(−8(h+1)/H) (Press et al. 2022; H = 8 gives 1/2 … 1/256).

    The paper gives this geometric sequence for every H; for an H that is not a power of two it
    interleaves two such sequences instead, which this function does not do.
    """
    _check_positive(n_heads, "n_heads")
    h = torch.arange(1, n_heads + 1, dtype=torch.float64)  # (H,)
    return 2.0 ** (-8.0 * h / n_heads)  # (H,)


def alibi_bias(n_heads: int, queries: int, keys: int) -> torch.Tensor:
    """ALiBi's additive score bias (H, L, S): bias[h, i, j] = −m_h · |i − j|."""
    _check_positive(queries, "queries")
    _check_positive(keys, "keys")
    i = torch.arange(queries, dtype=torch.float64)  # (L,)
    j = torch.arange(keys, dtype=torch.float64)  # (S,)
    distance = (i[:, None] - j[None, :]).abs()  # (L, S)
    # 0 − x, not −x: the diagonal stays +0.0 rather than −0.0
    return 0.0 - alibi_slopes(n_heads)[:, None, None] * distance[None, :, :]  # (H, L, S)


def learned(model: PretrainedEncoder, length: int) -> torch.Tensor:
    """The model's own position-embedding rows 0..length−1 (length, D), as float64.

    Read from the loaded weights (the encoder's `embeddings.position` table); length over the
    model's max_positions raises ValueError.
    """
    _check_positive(length, "length")
    table = model.encoder.embeddings.position.weight  # (max_positions, D)
    if length > table.shape[0]:
        raise ValueError(f"length is {length}; this model has {table.shape[0]} learned positions "
                         f"(0..{table.shape[0] - 1})")
    return table[:length].detach().to(torch.float64).clone()  # (length, D)
