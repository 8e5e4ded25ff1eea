"""Aggregates of a model's attention maps over heads and layers.

Maps are given per layer, one (H, N, N) tensor of softmax weights (query, key) per layer, as
AttentionMaps.per_layer holds them (a 4-D (L, H, N, N) tensor works too). Results are float32.

* `mean_over_heads`: per layer the mean of its heads' maps.
* `rollout`: attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

Maps = Sequence[torch.Tensor] | torch.Tensor  # per layer (H, N, N), or one (L, H, N, N) tensor


def per_layer(maps: Maps) -> list[torch.Tensor]:
    layers = list(maps)
    if not layers:
        raise ValueError("no layers: pass at least one (H, N, N) map stack")
    for i, m in enumerate(layers):
        if m.dim() != 3 or m.shape[-1] != m.shape[-2]:
            raise ValueError(f"layer {i}: expected an (H, N, N) stack of square maps, got shape {tuple(m.shape)}")
    return layers


def mean_over_heads(maps: Maps) -> torch.Tensor:
    """(L, N, N): for each layer the mean over its heads of the attention weights."""
    return torch.stack([m.double().mean(dim=0) for m in per_layer(maps)]).float()


def rollout(maps: Maps, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): (L, N, N), entry l the rollout up to and including layer l.

    Â_l = residual·I + (1 − residual)·mean_h A_l, each row divided by its sum (keeping the row axis, so
    row i is divided by row i's sum — the vit-explain #16 bug divided column i instead), R_0 = Â_0 and
    R_l = Â_l · R_(l−1). A row of Â that sums to 0 (residual 0 and a row without weight) stays 0.
    Computed in float64.
    """
    if not (isinstance(residual, int | float) and math.isfinite(residual) and 0.0 <= residual <= 1.0):
        raise ValueError(f"residual must be a number from 0 to 1, got {residual!r}")
    out = []
    product: torch.Tensor | None = None
    for m in per_layer(maps):
        n = m.shape[-1]
        mixed = residual * torch.eye(n, dtype=torch.float64) + (1.0 - residual) * m.double().mean(dim=0)  # (N, N)
        sums = mixed.sum(dim=-1, keepdim=True)  # (N, 1): row sums
        mixed = torch.where(sums > 0, mixed / torch.where(sums > 0, sums, 1.0), 0.0)
        product = mixed if product is None else mixed @ product
        out.append(product)
    return torch.stack(out).float()
