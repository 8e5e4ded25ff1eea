"""Positional encodings as pure functions: sinusoidal, RoPE, ALiBi, and a model's learned table.

RoPE comes in two forms: `rope` rotates interleaved pairs (RoFormer's, which /toy shows), `rope_half`
rotates x[i] with x[i + dim/2] (GPT-NeoX's and Llama's, which checkpoints of the Llama family use), with
their base and scaling (`rope_inverse_frequencies`). Every table is float64, except the Llama form's
frequencies and angles, which are float32 computed as transformers computes them, so that a checkpoint's
numbers equal theirs. Shape letters as in model/__init__.py, plus L (positions, or queries)
and S (keys) where a table relates two sequences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from model.errors import RuleError

if TYPE_CHECKING:
    from model.nets.config import RopeScaling
    from model.nets.transformer import Transformer

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


def rope_inverse_frequencies(dim: int, theta: float = BASE, scaling: RopeScaling | None = None) -> torch.Tensor:
    """The inverse frequencies (dim/2,) float32 of the Llama-family RoPE: θ^(−2i/dim), then scaled.

    Computed step by step as transformers' rope init functions do (in float32). "linear" scaling divides
    every frequency by the factor. "llama3" keeps the frequencies whose wavelength 2π/f is below
    original_max_positions / high_freq_factor, divides by the factor those above original_max_positions /
    low_freq_factor, and between the two mixes f/factor and f with the weight
    s = (original_max_positions / wavelength − low_freq_factor) / (high_freq_factor − low_freq_factor):
    (1 − s)·f/factor + s·f.
    """
    _check_positive(dim, "dim")
    _check_even(dim, "dim", "RoPE")
    inverse = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float32) / dim))  # (dim/2,)
    if scaling is None:
        return inverse
    if scaling.kind == "linear":
        return inverse / scaling.factor
    original = scaling.original_max_positions
    low_wavelength = original / scaling.low_freq_factor
    high_wavelength = original / scaling.high_freq_factor
    wavelength = 2 * math.pi / inverse  # (dim/2,)
    stretched = torch.where(wavelength > low_wavelength, inverse / scaling.factor, inverse)  # (dim/2,)
    smooth = (original / wavelength - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor)
    smoothed = (1 - smooth) * stretched / scaling.factor + smooth * stretched  # (dim/2,)
    medium = ~(wavelength < high_wavelength) * ~(wavelength > low_wavelength)  # (dim/2,) bool
    return torch.where(medium, smoothed, stretched)  # (dim/2,)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) → (−x2, x1), x1 and x2 the first and second half of the last axis."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def rope_half_tables(length: int, inverse: torch.Tensor, offset: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (length, dim) of the half-split form: angle p · f_i in columns i and i + dim/2, float32
    as transformers computes them."""
    p = torch.arange(offset, offset + length, dtype=torch.float32, device=inverse.device)  # (length,)
    freqs = p[:, None] * inverse.to(torch.float32)[None, :]  # (length, dim/2)
    angles = torch.cat((freqs, freqs), dim=-1)  # (length, dim)
    return angles.cos(), angles.sin()


def rope_half(x: torch.Tensor, inverse: torch.Tensor, offset: int = 0) -> torch.Tensor:
    """Rotate x (..., L, dim) by position, the half-split form (GPT-NeoX, Llama): the pair (x[i], x[i + dim/2])
    of the row at position p = offset + row is rotated by the angle p · inverse[i]:
    x · cos + rotate_half(x) · sin. `inverse`: (dim/2,), from rope_inverse_frequencies."""
    if x.dim() < 2:
        raise ValueError(f"x has {x.dim()} dimensions; RoPE needs (..., L, dim)")
    length, dim = x.shape[-2], x.shape[-1]
    _check_even(dim, "dim", "RoPE")
    if inverse.shape != (dim // 2,):
        raise ValueError(f"inverse has shape {tuple(inverse.shape)}; a width of {dim} needs ({dim // 2},)")
    if length == 0:
        return x.clone()
    cos, sin = rope_half_tables(length, inverse.to(x.device), offset)  # (L, dim) each
    return x * cos.to(x.dtype) + rotate_half(x) * sin.to(x.dtype)  # (..., L, dim)


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


def learned_rows(net: Transformer) -> tuple[torch.Tensor, int]:
    """The network's position-embedding weight (rows, E) and the row it adds to the token at position 0.

    The row is 0, except for RoBERTa, which counts positions from padding_idx + 1 (rows 0..padding_idx
    are never added to a real token). E is the embedding width: ELECTRA embeds narrower than d_model
    and projects up after the embeddings. A network without a learned table (RoPE: the Llama family)
    raises PositionsError (loc "model").
    """
    embeddings = net.embeddings
    if embeddings.position is None:
        raise PositionsError("positions_learned_none", "model",
                             f"this model has no learned position table (its positions are {net.cfg.positions}); "
                             "ask for kind rope, or name a model with learned positions", positions=net.cfg.positions)
    padding = getattr(embeddings, "padding_idx", None)  # set for RoBERTa (model/checkpoints/bert.py)
    return embeddings.position.weight, 0 if padding is None else padding + 1


def learned_size(net: Transformer) -> tuple[int, int]:
    """(positions, width) of the network's learned table: how many token positions it has rows for, and E."""
    table, first = learned_rows(net)
    return table.shape[0] - first, table.shape[1]


def learned(net: Transformer, length: int) -> torch.Tensor:
    """The rows the network adds to its tokens at positions 0..length−1 (length, E), as float64.

    Read from the loaded weights (the embeddings' `position` table, from learned_rows' first row on);
    length over the model's positions raises ValueError.
    """
    _check_positive(length, "length")
    table, first = learned_rows(net)  # (rows, E)
    limit = table.shape[0] - first
    if length > limit:
        raise ValueError(f"length is {length}; this model has {limit} learned positions (0..{limit - 1})")
    return table[first:first + length].detach().to(torch.float64).clone()  # (length, E)


# The tables GET /api/v1/positions serves, and their limits.
KINDS = ("sinusoidal", "rope", "alibi", "learned")
MAX_LENGTH = 512  # positions in a table
MAX_D_MODEL = 1024  # dimensions of a sinusoidal or RoPE table
MAX_HEADS = 64  # ALiBi heads

# Rules between a positions request's fields, or between it and a model: type -> (ctx keys, what breaks it).
POSITION_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "positions_odd_d_model": (("d_model", "kind"), "an odd d_model for sinusoidal or rope (they pair dimensions)"),
    "positions_learned_length": (("length", "max_positions"), "learned: a length over the model's learned positions"),
    "positions_learned_d_model": (("d_model", "model_d_model"), "learned: a d_model other than the model's"),
    "positions_learned_none": (("positions",), "learned: a model without a learned table (RoPE or none)"),
}


class PositionsError(RuleError):
    """A positions request the tables cannot take; `loc` names a query parameter, `type` is one of POSITION_RULES."""

    rules = POSITION_RULES


@dataclass(frozen=True)
class PositionTable:
    """One encoding's numbers for `length` positions; the fields a kind does not have are None.

    sinusoidal: matrix (L, D). learned: matrix (L, D), the rows the model adds at positions 0..L−1 (D its
    table's width). rope: angles (L, D/2) and matrix (L, D), the rotation of the unit pairs (1, 0):
    matrix[p, 2i] = cos θ[p, i], matrix[p, 2i+1] = sin θ[p, i]. alibi: bias (H, L, L) and slopes (H,), no matrix.
    """

    kind: str
    length: int
    d_model: int
    n_heads: int | None = None
    matrix: torch.Tensor | None = None
    angles: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    slopes: torch.Tensor | None = None


def position_numbers(kind: str, length: int, d_model: int, n_heads: int) -> int:
    """How many numbers a PositionTable holds, known before it is built (for answer size caps)."""
    if kind == "alibi":
        return n_heads * length * length + n_heads
    if kind == "rope":
        return length * d_model + length * (d_model // 2)
    return length * d_model


def rotated_units(length: int, dim: int) -> torch.Tensor:
    """RoPE applied to the vector whose every pair is the unit (1, 0), at positions 0..length−1: (length, dim)."""
    units = torch.zeros(length, dim, dtype=torch.float64)  # (length, dim)
    units[:, 0::2] = 1.0
    return rope(units)  # (length, dim)


def position_table(kind: str, length: int, d_model: int, n_heads: int,
                   net: Transformer | None = None) -> PositionTable:
    """The table of one kind (KINDS); a rule between the fields broken raises PositionsError naming the field.

    Limits each field has on its own (length 1..MAX_LENGTH, d_model 1..MAX_D_MODEL, n_heads
    1..MAX_HEADS) are the caller's to check. `learned` needs the network; its d_model is the width of
    the network's table (learned_size).
    """
    if kind in ("sinusoidal", "rope") and d_model % 2:
        raise PositionsError("positions_odd_d_model", "d_model",
                             f"d_model is {d_model}; {kind} pairs dimensions, so d_model must be even "
                             f"(send {f'{d_model - 1} or ' if d_model > 1 else ''}{d_model + 1})",
                             d_model=d_model, kind=kind)
    if kind == "sinusoidal":
        return PositionTable(kind, length, d_model, matrix=sinusoidal(length, d_model))
    if kind == "rope":
        return PositionTable(kind, length, d_model, matrix=rotated_units(length, d_model),
                             angles=rope_angles(length, d_model))
    if kind == "alibi":
        return PositionTable(kind, length, d_model, n_heads=n_heads, bias=alibi_bias(n_heads, length, length),
                             slopes=alibi_slopes(n_heads))
    if kind == "learned":
        if net is None:
            raise ValueError("the learned table needs a network")
        limit, width = learned_size(net)
        if length > limit:
            raise PositionsError("positions_learned_length", "length",
                                 f"length is {length}; this model has {limit} learned positions, send at most {limit}",
                                 length=length, max_positions=limit)
        if d_model != width:
            raise PositionsError("positions_learned_d_model", "d_model",
                                 f"d_model is {d_model}; this model's learned table is {width} wide, "
                                 f"send {width} or leave d_model out", d_model=d_model, model_d_model=width)
        return PositionTable(kind, length, d_model, matrix=learned(net, length))
    raise ValueError(f"unknown kind {kind!r}; use one of {', '.join(KINDS)}")
