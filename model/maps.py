"""All attention maps of one input, and views of them: chosen layers/heads, max-pooled summaries.

Maps are float32 weights, or their uint16 fixed-point form (`quantize_u16`): value = round(weight ·
65535), half the bytes, absolute error at most 1/131070 = 7.7e-6. Both forms pool and select alike;
max pooling commutes with rounding (rounding is monotone), so the pooled uint16 map is exactly the
quantized pooled float map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F

U16_SCALE = 65535


def quantize_u16(weights: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Weights in [0, 1] as uint16 fixed point, round(w · 65535), into `out` (same shape) or a new tensor."""
    scaled = weights.mul(U16_SCALE).round_()
    return scaled.to(torch.uint16) if out is None else out.copy_(scaled)


def pick_heads(block: torch.Tensor, heads: list[int]) -> torch.Tensor:
    """The chosen heads of one layer's (H, T, T) maps, in the order given (the block itself for every head)."""
    if heads == list(range(block.shape[0])):
        return block
    return block[torch.tensor(heads)]  # (len(heads), T, T)


def pool_bins(n_tokens: int, size: int) -> list[tuple[int, int]]:
    """The token range [start, end) that each row (and column) of a summary at most size x size covers."""
    m = min(n_tokens, size)
    return [(math.floor(i * n_tokens / m), math.ceil((i + 1) * n_tokens / m)) for i in range(m)]


def pool(block: torch.Tensor, size: int) -> torch.Tensor:
    """One layer's (H, T, T) maps max-pooled to at most size x size, in the block's own dtype."""
    if block.shape[-1] <= size:
        return block
    # uint16 values are integers below 2^24, exact in float32 (max pooling has no uint16 kernel)
    return F.adaptive_max_pool2d(block.float(), size).to(block.dtype)  # (H, M, M)


@dataclass(frozen=True)
class AttentionMaps:
    """Softmax weights of every head of every layer: one (H, T, T) tensor per layer, float32 or uint16."""

    per_layer: tuple[torch.Tensor, ...]

    @property
    def n_tokens(self) -> int:
        return self.per_layer[0].shape[-1]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.per_layer)

    def select(self, layers: list[int], heads: list[int]) -> list[torch.Tensor]:
        """The chosen heads of each chosen layer, in the order given: one (len(heads), T, T) per layer."""
        return [pick_heads(self.per_layer[i], heads) for i in layers]

    def pooled(
        self, layers: list[int], heads: list[int], size: int
    ) -> tuple[list[torch.Tensor], list[tuple[int, int]]]:
        """Max-pooled summaries at most size x size, so that no strong weight vanishes.

        Returns one (len(heads), M, M) tensor per layer, M = min(T, size), and the
        token range [start, end) that each pooled row (and column) covers. Rows
        of a summary no longer sum to 1: it is for display, not for arithmetic.
        """
        return [pool(x, size) for x in self.select(layers, heads)], pool_bins(self.n_tokens, size)
