"""Multi-head attention, one small pure function per step.

`MultiHeadAttention.forward` only composes the steps, in the order of STEPS,
and hands each intermediate result to a recorder when one is given.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .trace import LayerRecorder


def project(x: torch.Tensor, linear: nn.Linear) -> torch.Tensor:
    """x W^T + b: the full-width projection of every token."""
    out: torch.Tensor = linear(x)  # (B, T, D)
    return out


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Cut the last axis into n_heads slices of equal width, heads first."""
    b, t, d = x.shape
    if d % n_heads:
        raise ValueError(f"width {d} is not divisible by n_heads {n_heads}")
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of split_heads: heads side by side again (concat)."""
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)  # (B, T, D)


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw similarity of every query with every key: Q_h K_h^T."""
    return q @ k.transpose(-2, -1)  # (B, H, T, S)


def scale_scores(scores: torch.Tensor, factor: float, in_place: bool = False) -> torch.Tensor:
    """Multiply by the scale factor, normally 1/sqrt(Dh); in place when the raw scores are not needed."""
    return scores.mul_(factor) if in_place else scores * factor  # (B, H, T, S)


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Add an additive mask (0 where visible, -inf where hidden) or a bias."""
    if mask is None:
        return scores
    return scores + mask  # (B, H, T, S), mask broadcasts from (T, S) or (B, 1, T, S)


def softmax_rows(scores: torch.Tensor, any_hidden: bool = True) -> torch.Tensor:
    """Softmax over keys; a row whose keys are all hidden becomes zeros, not NaN.

    `any_hidden=False` says no mask was added, so no row can be all -inf and the
    check (three more passes over a (B, H, T, S) tensor) is skipped.
    """
    weights = torch.softmax(scores, dim=-1)  # (B, H, T, S)
    if not any_hidden:
        return weights
    hidden_row = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (B, H, T, 1)
    return weights.masked_fill(hidden_row, 0.0)


def weighted_sum(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each query's mix of value vectors."""
    return weights @ v  # (B, H, T, Dh)


def causal_mask(t: int, s: int | None = None) -> torch.Tensor:
    """Additive mask hiding key j from query i when j > i (top-left aligned)."""
    s = t if s is None else s
    hidden = torch.ones(t, s, dtype=torch.bool).triu(diagonal=1)  # (T, S)
    return torch.zeros(t, s).masked_fill(hidden, float("-inf"))


class MultiHeadAttention(nn.Module):
    """Multi-head attention whose forward is the composition of the step functions."""

    def __init__(self, d_model: int, n_heads: int, scale: float | None = None) -> None:
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.scale = 1.0 / math.sqrt(self.d_head) if scale is None else scale
        self.query = nn.Linear(d_model, d_model)
        self.key = nn.Linear(d_model, d_model)
        self.value = nn.Linear(d_model, d_model)
        self.output = nn.Linear(d_model, d_model)

    def forward(
        self,
        x: torch.Tensor,
        keys: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        record: LayerRecorder | None = None,
    ) -> torch.Tensor:
        """x: (B, T, D) inputs of the queries; keys, values: (B, S, D) inputs of the
        keys and values. keys default to x (self-attention), values to keys."""
        keys = x if keys is None else keys
        values = keys if values is None else values
        rec = record or NO_RECORD
        rec("input", x)
        q = project(x, self.query)  # (B, T, D)
        k = project(keys, self.key)  # (B, S, D)
        v = project(values, self.value)  # (B, S, D)
        rec("project", {"q": q, "k": k, "v": v})
        qh = split_heads(q, self.n_heads)  # (B, H, T, Dh)
        kh = split_heads(k, self.n_heads)  # (B, H, S, Dh)
        vh = split_heads(v, self.n_heads)  # (B, H, S, Dh)
        rec("split", {"q": qh, "k": kh, "v": vh})
        scores = attention_scores(qh, kh)  # (B, H, T, S)
        rec("scores", scores)
        scaled = scale_scores(scores, self.scale, in_place=not rec.wants("scores"))
        rec("scale", scaled)
        masked = apply_mask(scaled, mask)
        rec("mask", masked)
        weights = softmax_rows(masked, any_hidden=mask is not None)  # (B, H, T, S)
        rec("softmax", weights)
        mixed = weighted_sum(weights, vh)  # (B, H, T, Dh)
        rec("weighted_sum", mixed)
        joined = merge_heads(mixed)  # (B, T, D)
        rec("concat", joined)
        out = project(joined, self.output)  # (B, T, D)
        rec("output", out)
        return out


class _NoRecord:
    """Recorder used when nothing is traced."""

    def wants(self, step: str) -> bool:
        return False

    def __call__(self, step: str, value: object) -> None:
        pass


NO_RECORD = _NoRecord()
