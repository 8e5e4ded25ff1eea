"""The numbers a network is built from: NetConfig, a frozen dataclass that validates them.

One config for every family (model/nets/transformer.py builds the network it describes): the shape
(vocabulary, width, layers, query and key-value heads, MLP width, positions), the norm (LayerNorm or
RMSNorm) and where it sits, causal or not and a sliding window, the MLP (plain or gated) and its
activation, biases, how the scores are scaled, token types and a tied LM head.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
from torch.nn import functional as F

# The MLP activations a network can use: GPT-2's "gelu_new" is GELU's tanh approximation.
ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
    "relu": F.relu,
    "silu": F.silu,  # SwiGLU's, in a gated MLP
}


@dataclass(frozen=True)
class NetConfig:
    """What a transformer network is.

    norm_place "post": x = LayerNorm(x + sublayer(x)) and a LayerNorm on the embeddings (BERT); "pre":
    x = x + sublayer(LayerNorm(x)) and a final LayerNorm (GPT-2). causal: query i sees keys 0..i only.
    scaled False leaves the scores unscaled; scale_by_layer divides layer i's scores by i + 1 as well
    (GPT-2's scale_attn_by_inverse_layer_idx). type_vocab_size 0: no token-type embeddings. tied_head:
    the word embeddings read the final hidden state back as next-token logits. norm "rms": RMSNorm
    (x / √(mean(x²) + eps) · w, no mean, no bias) in place of every LayerNorm. n_kv_heads G < n_heads:
    grouped-query attention (G = 1: multi-query). mlp "gated": down(act(gate(x)) ⊙ up(x)) (SwiGLU with
    activation "silu", GeGLU with a GELU) in place of out(act(in(x))). window: a causal query i sees
    keys i − window + 1 .. i only. bias False: no linear layer has a bias.
    """

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_positions: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    norm_place: Literal["post", "pre"] = "post"
    causal: bool = False
    activation: str = "gelu"
    scaled: bool = True
    scale_by_layer: bool = False
    tied_head: bool = False
    norm: Literal["layer", "rms"] = "layer"
    n_kv_heads: int | None = None  # None: n_heads
    mlp: Literal["plain", "gated"] = "plain"
    window: int | None = None
    bias: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        types = self.type_vocab_size
        if not isinstance(types, int) or isinstance(types, bool) or types < 0:
            raise ValueError(f"type_vocab_size must be an integer of at least 0, got {types!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"layer_norm_eps must be positive, got {self.layer_norm_eps!r}")
        if self.norm_place not in ("post", "pre"):
            raise ValueError(f"norm_place must be 'post' or 'pre', got {self.norm_place!r}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"activation {self.activation!r} is not supported; use one of {', '.join(ACTIVATIONS)}")
        if self.norm not in ("layer", "rms"):
            raise ValueError(f"norm must be 'layer' or 'rms', got {self.norm!r}")
        if self.mlp not in ("plain", "gated"):
            raise ValueError(f"mlp must be 'plain' or 'gated', got {self.mlp!r}")
        kv = self.kv_heads
        if isinstance(kv, bool) or not isinstance(kv, int) or kv < 1 or self.n_heads % kv:
            raise ValueError(f"n_kv_heads {kv!r} must be a positive integer that divides n_heads {self.n_heads}")
        if self.window is not None:
            if isinstance(self.window, bool) or not isinstance(self.window, int) or self.window < 1:
                raise ValueError(f"window must be a positive integer or None, got {self.window!r}")
            if not self.causal:
                raise ValueError("a sliding window is a causal network's (causal True)")
        if self.tied_head and self.norm_place != "pre":
            raise ValueError("a tied LM head reads the final LayerNorm of a pre-norm network (norm_place 'pre')")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def kv_heads(self) -> int:
        """G, the key-value heads (n_heads unless n_kv_heads says fewer)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    def attention_scale(self, layer: int) -> float:
        """The factor layer `layer`'s scores are multiplied by: 1/√d_head (1 unscaled), over layer + 1 when
        scale_by_layer."""
        base = 1.0 / math.sqrt(self.d_head) if self.scaled else 1.0
        return base / (layer + 1) if self.scale_by_layer else base
