"""The key-value cache of generation: each layer's keys and values of the tokens seen so far.

A decoder that has run on T tokens needs, to run on token T + 1, that token's query against the keys and
values of all T + 1 tokens. The keys and values of the first T do not change (a causal network: no token sees
a later one), so they are kept instead of recomputed: one forward over the prompt fills the cache, and each
new token runs alone, appending its own key and value to every layer's. The cache holds them as the scores
use them: per key-value head (G of them; G < H under grouped-query attention, which is what makes its cache
smaller), after the q/k norm and RoPE's rotation, so a cached key keeps the rotation of its own position.
"""

from __future__ import annotations

import torch


class LayerCache:
    """One layer's cached keys and values, (B, G, S, Dk) and (B, G, S, Dv); empty until the first forward."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[-2]

    def extend(self, keys: torch.Tensor, values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new tokens' keys and values (B, G, T, D·); returns every token's, cached first."""
        if self.keys is not None and self.values is not None:
            keys = torch.cat((self.keys, keys), dim=-2)  # (B, G, S + T, Dk)
            values = torch.cat((self.values, values), dim=-2)  # (B, G, S + T, Dv)
        self.keys, self.values = keys, values
        return keys, values


class KVCache:
    """Every layer's LayerCache. `length`: the tokens cached so far, which is also the position of the next
    token. `nbytes`: the memory the cache holds, 2 · layers · tokens · G · d_head · bytes per number."""

    def __init__(self, n_layers: int) -> None:
        self.layers = [LayerCache() for _ in range(n_layers)]

    @property
    def length(self) -> int:
        return self.layers[0].length

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for layer in self.layers for t in (layer.keys, layer.values) if t is not None)
