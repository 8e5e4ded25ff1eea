"""The Informer lab's encoder pieces (model/lab/informer.py): the two inner attentions, the encoder layer, the
self-attention distilling layer and the fixed position encoding.

* full attention: softmax(q kᵀ / √Dk) v over every key (no mask), the L × L weights computed;
* ProbSparse (model/nets/sparse.py's rules, Zhou et al., AAAI 2021): U = min(c·⌈ln L⌉, L) keys sampled with
  replacement per query (one (L, U) index matrix per call, shared by the batch and the heads), M(q_i, K) = max −
  sum / L of query i's unscaled scores on them; the u = min(c·⌈ln L⌉, L) queries of each head with the largest M
  ("active") get the softmax over every key, the others ("lazy") the mean of V. Only the active rows' scores are
  computed, (B, H, u, L); the mean of V is computed once per head and the active rows' outputs are scattered into
  it, so no L × L tensor is made. The choice of active queries is a constant to autograd (the gradient reaches the
  active rows' scores and every value).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
from torch import nn

from model.nets.attention import MultiHeadAttention, merge_heads, project, split_heads
from model.nets.sparse import active_queries, lazy_weights, sample_count, sparsity_measure

Tensor = torch.Tensor


def encoded_length(window: int, layers: int) -> int:
    """The last encoder layer's length: ⌈L / 2⌉ per distilling layer (layers − 1 of them)."""
    for _ in range(layers - 1):
        window = (window + 1) // 2
    return window


@functools.cache
def position_encoding(length: int, width: int) -> Tensor:
    """(L, D) the fixed sinusoidal encoding: sin(t / 10000^(2i/D)) at 2i, cos at 2i + 1."""
    position = torch.arange(length, dtype=torch.float64)[:, None]  # (L, 1)
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float64) * (-math.log(10000.0) / width))  # (⌈D/2⌉,)
    table = torch.zeros(length, width, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate[: width // 2])
    return table.float()


def full_attention(q: Tensor, k: Tensor, v: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ · scale) v and the weights. q, k: (B, H, L, Dk), v (B, H, L, Dv) -> (B, H, L, Dv), (B, H, L, L)."""
    weights = torch.softmax((q @ k.transpose(-2, -1)) * scale, dim=-1)  # (B, H, L, S)
    return weights @ v, weights


def draw_keys(queries: int, keys: int, factor: int, generator: torch.Generator) -> Tensor:
    """(L, U) key indices, U = min(c·⌈ln S⌉, S), uniform with replacement, one row per query."""
    return torch.randint(keys, (queries, sample_count(factor, keys)), generator=generator)  # (L, U)


def probsparse_attention(q: Tensor, k: Tensor, v: Tensor, scale: float, factor: int,
                         sampled: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """ProbSparse self-attention (no mask) on the sampled keys (L, U): the output (B, H, L, Dv), M (B, H, L), the
    active queries (B, H, u) ascending, and the active rows' weights (B, H, u, S). Lazy rows get the mean of v."""
    with torch.no_grad():  # the choice of queries is a constant to autograd
        measure = sparsity_measure(q, k, sampled)  # (B, H, L)
        active = active_queries(measure, factor)  # (B, H, u)
    picked = q.gather(2, active[..., None].expand(-1, -1, -1, q.shape[-1]))  # (B, H, u, Dk)
    weights = torch.softmax((picked @ k.transpose(-2, -1)) * scale, dim=-1)  # (B, H, u, S)
    mean = v.mean(dim=2, keepdim=True).expand(-1, -1, q.shape[2], -1)  # (B, H, L, Dv)
    out = mean.scatter(2, active[..., None].expand(-1, -1, -1, v.shape[-1]), weights @ v)  # (B, H, L, Dv)
    return out, measure, active, weights


@dataclass(frozen=True)
class LayerAttention:
    """One encoder layer's attention on one window: weights (heads, length, length) as used (a lazy row 1/length
    everywhere), M per query (heads, length) and the active queries (heads, u) ascending; None for full attention."""

    length: int
    weights: Tensor
    measure: Tensor | None
    active: Tensor | None


class EncoderLayer(nn.Module):
    """x = LN(x + attention(x)); x = LN(x + W₂ GELU(W₁ x))."""

    def __init__(self, d_model: int, heads: int, attention: str, factor: int) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(d_model, heads)
        self.kind, self.factor = attention, factor
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.expand, self.contract = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def attend(self, x: Tensor, generator: torch.Generator, trace: list[LayerAttention] | None) -> Tensor:
        """x (B, L, D) -> the attention's output (B, L, D); the first window's weights appended to `trace`."""
        layer = self.attention
        q = split_heads(project(x, layer.query), layer.n_heads)  # (B, H, L, Dk)
        k = split_heads(project(x, layer.key), layer.n_heads)  # (B, H, L, Dk)
        v = split_heads(project(x, layer.value), layer.n_heads)  # (B, H, L, Dv)
        length = x.shape[1]
        if self.kind == "full":
            mixed, weights = full_attention(q, k, v, layer.scale)  # (B, H, L, Dv), (B, H, L, L)
            if trace is not None:
                trace.append(LayerAttention(length, weights[0].detach(), None, None))
        else:
            sampled = draw_keys(length, length, self.factor, generator)  # (L, U)
            mixed, measure, active, rows = probsparse_attention(q, k, v, layer.scale, self.factor, sampled)
            if trace is not None:
                used = lazy_weights(length, length, False, rows.dtype).expand(layer.n_heads, -1, -1).clone()
                used.scatter_(1, active[0, :, :, None].expand(-1, -1, length), rows[0].detach())  # (H, L, L)
                trace.append(LayerAttention(length, used, measure[0], active[0]))
        out: Tensor = project(merge_heads(mixed), layer.output)  # (B, L, D)
        return out

    def forward(self, x: Tensor, generator: torch.Generator, trace: list[LayerAttention] | None = None) -> Tensor:
        x = self.norm1(x + self.attend(x, generator, trace))  # (B, L, D)
        out: Tensor = self.norm2(x + self.contract(nn.functional.gelu(self.expand(x))))  # (B, L, D)
        return out


class Distil(nn.Module):
    """Informer's self-attention distilling: Conv1d(k=3, circular) → BatchNorm1d → ELU → MaxPool1d(3, 2, 1)."""

    def __init__(self, d_model: int) -> None:
        super().__init__()
        self.conv = nn.Conv1d(d_model, d_model, 3, padding=1, padding_mode="circular")
        self.norm = nn.BatchNorm1d(d_model)
        self.pool = nn.MaxPool1d(3, stride=2, padding=1)

    def forward(self, x: Tensor) -> Tensor:
        """x (B, L, D) -> (B, ⌈L/2⌉, D)."""
        y: Tensor = self.pool(nn.functional.elu(self.norm(self.conv(x.transpose(1, 2)))))  # (B, D, ⌈L/2⌉)
        return y.transpose(1, 2)
