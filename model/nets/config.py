"""The numbers a network is built from: NetConfig, a frozen dataclass that validates them.

One config for every family (model/nets/transformer.py builds the network it describes): the shape
(vocabulary, width, layers, query and key-value heads, MLP width, positions), the norm (LayerNorm or
RMSNorm) and where it sits, causal or not and a sliding window, the MLP (plain or gated) and its
activation, biases (all, or per part: Qwen2's q/k/v only), how the scores are scaled, token types, the
positions (a learned table, rotary: RoPE with its base and scaling, or none), per-head q/k RMSNorm (Qwen3)
and an LM head (tied to the word embeddings, or a matrix of its own).
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


ROPE_SCALINGS = ("linear", "llama3")


@dataclass(frozen=True)
class RopeScaling:
    """How a long-context checkpoint stretches RoPE's frequencies (transformers' rope_parameters).

    "linear": every inverse frequency divided by `factor` (positions read as p / factor). "llama3" (Llama
    3.1): wavelengths shorter than original_max_positions / high_freq_factor kept, longer than
    original_max_positions / low_freq_factor divided by `factor`, and the ones between interpolated
    smoothly (model/nets/positions.py rope_inverse_frequencies)."""

    kind: Literal["linear", "llama3"]
    factor: float
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_positions: int = 8192

    def __post_init__(self) -> None:
        if self.kind not in ROPE_SCALINGS:
            raise ValueError(f"rope scaling {self.kind!r} is not supported; use one of {', '.join(ROPE_SCALINGS)}")
        if isinstance(self.factor, bool) or not isinstance(self.factor, int | float) or not self.factor > 0:
            raise ValueError(f"rope scaling factor must be a positive number, got {self.factor!r}")
        if self.kind == "llama3":
            if not 0 < self.low_freq_factor < self.high_freq_factor:
                raise ValueError(f"llama3 rope scaling needs 0 < low_freq_factor < high_freq_factor, got "
                                 f"{self.low_freq_factor!r} and {self.high_freq_factor!r}")
            original = self.original_max_positions
            if isinstance(original, bool) or not isinstance(original, int) or original < 1:
                raise ValueError(f"original_max_positions must be a positive integer, got {original!r}")


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
    keys i − window + 1 .. i only, in every layer or in the local_layers only (Qwen2's max_window_layers,
    Gemma 2's alternating layers). bias False: no linear layer has a bias; qkv_bias, output_bias and
    mlp_bias (None: as `bias`) set the query/key/value projections', the attention output's and the MLP's
    apart (Qwen2: q/k/v biases only).

    positions "learned": a table of max_positions rows added to the word embeddings; "rope": q and k of
    every head rotated by position after the split (the half-split form of GPT-NeoX and Llama, with base
    rope_theta and an optional rope_scaling); "none": no position information. head_dim: each head's width
    when it is not d_model / n_heads (Qwen3). qk_norm: an RMSNorm over each head's q and k (weights of
    head_dim) before the rotation (Qwen3). own_head: an LM head of its own (lm_head.weight, V x D) instead
    of the tied word embeddings.

    Gemma 2's: embed_scale multiplies the word embeddings (by √d_model); sandwich_norm puts a norm after the
    attention and after the MLP as well as before them, x = x + norm(sublayer(norm(x))); score_scale replaces
    1/√d_head (query_pre_attn_scalar^−½); attention_softcap bounds the scaled scores smoothly to (−cap, cap) by
    cap·tanh(score / cap) before the mask, and logit_softcap bounds the next-token logits the same way.
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
    local_layers: tuple[int, ...] | None = None  # the layers with the window; None: every layer
    bias: bool = True
    qkv_bias: bool | None = None  # None: bias
    output_bias: bool | None = None
    mlp_bias: bool | None = None
    positions: Literal["learned", "rope", "none"] = "learned"
    rope_theta: float = 10000.0
    rope_scaling: RopeScaling | None = None
    head_dim: int | None = None  # None: d_model / n_heads
    qk_norm: bool = False
    own_head: bool = False
    embed_scale: float | None = None  # the word embeddings times this (Gemma 2: √d_model)
    sandwich_norm: bool = False  # a norm after each sublayer as well, before its residual sum (Gemma 2)
    score_scale: float | None = None  # the factor the scores are multiplied by; None: 1/√d_head
    attention_softcap: float | None = None  # scores ← cap·tanh(scores / cap) after the scale (Gemma 2)
    logit_softcap: float | None = None  # next-token logits ← cap·tanh(logits / cap) (Gemma 2)

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        types = self.type_vocab_size
        if not isinstance(types, int) or isinstance(types, bool) or types < 0:
            raise ValueError(f"type_vocab_size must be an integer of at least 0, got {types!r}")
        if self.head_dim is not None:
            if isinstance(self.head_dim, bool) or not isinstance(self.head_dim, int) or self.head_dim < 1:
                raise ValueError(f"head_dim must be a positive integer or None, got {self.head_dim!r}")
        elif self.d_model % self.n_heads:
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
        if self.local_layers is not None:
            layers = self.local_layers
            if self.window is None:
                raise ValueError("local_layers name the layers with a sliding window: set window too")
            if (not isinstance(layers, tuple) or any(isinstance(i, bool) or not isinstance(i, int) for i in layers)
                    or list(layers) != sorted(set(layers)) or not all(0 <= i < self.n_layers for i in layers)):
                raise ValueError(f"local_layers must be a sorted tuple of distinct layers 0..{self.n_layers - 1}, "
                                 f"got {layers!r}")
        if self.lm_head and self.norm_place != "pre":
            kind = "a tied LM head" if self.tied_head else "an LM head of its own"
            raise ValueError(f"{kind} reads the final LayerNorm of a pre-norm network (norm_place 'pre')")
        if self.tied_head and self.own_head:
            raise ValueError("an LM head is either tied (tied_head) or its own (own_head), not both")
        for name in ("qkv_bias", "output_bias", "mlp_bias"):
            if not (getattr(self, name) is None or isinstance(getattr(self, name), bool)):
                raise ValueError(f"{name} must be True, False or None, got {getattr(self, name)!r}")
        if self.positions not in ("learned", "rope", "none"):
            raise ValueError(f"positions must be 'learned', 'rope' or 'none', got {self.positions!r}")
        if self.positions == "rope":
            if self.d_head % 2:
                raise ValueError(f"RoPE rotates pairs of dimensions, so the head width must be even, got {self.d_head}")
            theta = self.rope_theta
            if isinstance(theta, bool) or not isinstance(theta, int | float) or not theta > 1:
                raise ValueError(f"rope_theta must be a number over 1, got {theta!r}")
            if self.rope_scaling is not None and not isinstance(self.rope_scaling, RopeScaling):
                raise ValueError(f"rope_scaling must be a RopeScaling or None, got {self.rope_scaling!r}")
        elif self.rope_scaling is not None:
            raise ValueError("rope_scaling is for positions 'rope'")
        for name in ("embed_scale", "score_scale", "attention_softcap", "logit_softcap"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                      or not 0 < value < math.inf):
                raise ValueError(f"{name} must be a positive number or None, got {value!r}")
        if self.sandwich_norm and self.norm_place != "pre":
            raise ValueError("sandwich_norm adds a norm after each sublayer of a pre-norm network (norm_place 'pre')")
        if self.logit_softcap is not None and not self.lm_head:
            raise ValueError("logit_softcap caps the LM head's logits: the network needs an LM head")
        if self.qk_norm and self.norm != "rms":
            raise ValueError("qk_norm is an RMSNorm over each head's q and k: it needs norm 'rms'")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads if self.head_dim is None else self.head_dim

    def layer_window(self, layer: int) -> int | None:
        """The sliding window of layer `layer`: `window` for a local layer (every layer unless local_layers
        names some), None for the others."""
        if self.window is None or (self.local_layers is not None and layer not in self.local_layers):
            return None
        return self.window

    @property
    def lm_head(self) -> bool:
        """Whether the network predicts next tokens: a tied LM head or one of its own."""
        return self.tied_head or self.own_head

    def biases(self) -> tuple[bool, bool, bool]:
        """(q/k/v projections, attention output, MLP): whether each has a bias."""
        pick = [self.bias if value is None else value for value in (self.qkv_bias, self.output_bias, self.mlp_bias)]
        return pick[0], pick[1], pick[2]

    @property
    def kv_heads(self) -> int:
        """G, the key-value heads (n_heads unless n_kv_heads says fewer)."""
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    def attention_scale(self, layer: int) -> float:
        """The factor layer `layer`'s scores are multiplied by: 1/√d_head or score_scale (1 unscaled), over
        layer + 1 when scale_by_layer."""
        base = (1.0 / math.sqrt(self.d_head) if self.score_scale is None else self.score_scale) if self.scaled else 1.0
        return base / (layer + 1) if self.scale_by_layer else base
