"""All attention maps of one input, and views of them: chosen layers/heads, max-pooled summaries."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.nn import functional as F


@dataclass(frozen=True)
class AttentionMaps:
    """Softmax weights of every head of every layer: one (H, T, T) float32 tensor per layer."""

    per_layer: tuple[torch.Tensor, ...]

    @property
    def n_tokens(self) -> int:
        return self.per_layer[0].shape[-1]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.per_layer)

    def select(self, layers: list[int], heads: list[int]) -> list[torch.Tensor]:
        """The chosen heads of each chosen layer, in the order given: one (len(heads), T, T) per layer."""
        every_head = heads == list(range(self.per_layer[0].shape[0]))
        index = torch.tensor(heads)
        return [self.per_layer[i] if every_head else self.per_layer[i][index] for i in layers]

    def pooled(
        self, layers: list[int], heads: list[int], size: int
    ) -> tuple[list[torch.Tensor], list[tuple[int, int]]]:
        """Max-pooled summaries at most size x size, so that no strong weight vanishes.

        Returns one (len(heads), M, M) tensor per layer, M = min(T, size), and the
        token range [start, end) that each pooled row (and column) covers. Rows
        of a summary no longer sum to 1: it is for display, not for arithmetic.
        """
        t = self.n_tokens
        m = min(t, size)
        bins = [(math.floor(i * t / m), math.ceil((i + 1) * t / m)) for i in range(m)]
        if m == t:
            return self.select(layers, heads), bins
        return [F.adaptive_max_pool2d(x, m) for x in self.select(layers, heads)], bins  # (H, M, M)
