"""A GPT-2-style decoder built on MultiHeadAttention: causal, pre-LayerNorm blocks, learned positions."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from torch import nn
from torch.nn import functional as F

from .attention import MultiHeadAttention, causal_mask, key_padding_mask
from .config import EncoderConfig
from .trace import LayerRecorder, Trace

if TYPE_CHECKING:
    from .analysis import Edit

# The MLP activations a decoder can use: GPT-2's "gelu_new" is GELU's tanh approximation.
ACTIVATIONS = {
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu": F.gelu,
    "relu": F.relu,
}


class DecoderEmbeddings(nn.Module):
    """Word + learned position embeddings (no LayerNorm: each block normalizes its own input)."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position = nn.Embedding(cfg.max_positions, cfg.d_model)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        out: torch.Tensor = self.word(ids) + self.position(positions)  # (B, T, D)
        return out


class DecoderBlock(nn.Module):
    """LayerNorm then causal self-attention, LayerNorm then MLP, each added to the residual stream."""

    def __init__(self, cfg: EncoderConfig, activation: str = "gelu_new", scale: float | None = None) -> None:
        super().__init__()
        self.attention_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.attention = MultiHeadAttention(cfg.d_model, cfg.n_heads, scale=scale)
        self.ff_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ff_in = nn.Linear(cfg.d_model, cfg.d_ff)
        self.ff_out = nn.Linear(cfg.d_ff, cfg.d_model)
        self.activation = ACTIVATIONS[activation]

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, record: LayerRecorder | None = None,
        edit: Edit | None = None,
    ) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), mask=mask, record=record, edit=edit)  # (B, T, D)
        hidden = self.activation(self.ff_in(self.ff_norm(x)))  # (B, T, d_ff)
        out: torch.Tensor = x + self.ff_out(hidden)  # (B, T, D)
        return out


class Decoder(nn.Module):
    """Token ids in, the final-LayerNorm hidden state out; query i sees keys 0..i only.

    `scale_by_layer` divides layer i's scores by i + 1 as well (GPT-2's scale_attn_by_inverse_layer_idx);
    `scaled=False` leaves the scores unscaled (scale_attn_weights=False).
    """

    def __init__(self, cfg: EncoderConfig, activation: str = "gelu_new", scaled: bool = True,
                 scale_by_layer: bool = False) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation {activation!r} is not supported; use one of {', '.join(ACTIVATIONS)}")
        self.cfg = cfg
        self.embeddings = DecoderEmbeddings(cfg)
        base = cfg.d_head ** -0.5 if scaled else 1.0
        self.blocks = nn.ModuleList(
            DecoderBlock(cfg, activation, base / (i + 1) if scale_by_layer else base) for i in range(cfg.n_layers))
        self.final_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    @torch.inference_mode()
    def forward(
        self, ids: torch.Tensor, segments: torch.Tensor | None = None, trace: Trace | None = None,
        edit: Edit | None = None, padding: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids: (B, T) int64; `segments` is accepted for the Encoder's signature and not used.

        Records into `trace` when one is given; the `mask` step shows the hidden upper triangle as -inf.
        `edit` works as in the Encoder. `padding` (B, T) bool, True at a batch's padding, hides those keys
        as well, as in the Encoder; pad on the right, so that every real token keeps its position."""
        t = ids.shape[1]
        if t > self.cfg.max_positions:
            raise ValueError(f"{t} tokens exceed the model's limit of {self.cfg.max_positions}")
        if edit is not None:
            edit.check(self.cfg.n_layers, self.cfg.n_heads, t)
        mask = causal_mask(t).to(ids.device)  # (T, T)
        if padding is not None:
            mask = mask + key_padding_mask(padding)  # (B, 1, T, T)
        x: torch.Tensor = self.embeddings(ids)  # (B, T, D)
        for i, block in enumerate(self.blocks):
            x = block(x, mask=mask, record=trace.recorder(i) if trace is not None else None,
                      edit=edit if edit is not None and edit.layer == i else None)
        out: torch.Tensor = self.final_norm(x)
        return out

    def block(self, layer: int) -> DecoderBlock:
        return cast(DecoderBlock, self.blocks[layer])

    def unembed(self, residual: torch.Tensor) -> torch.Tensor:
        """Next-token logits of a residual stream (…, D): the final LayerNorm, then the tied word embeddings
        (GPT-2's LM head); for the last layer's stream these are the model's own logits."""
        logits: torch.Tensor = self.final_norm(residual) @ self.embeddings.word.weight.T  # (…, V)
        return logits
