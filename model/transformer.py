"""A BERT-style encoder built on MultiHeadAttention (post-LayerNorm blocks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from torch import nn
from torch.nn import functional as F

from .attention import MultiHeadAttention, key_padding_mask
from .config import EncoderConfig
from .trace import LayerRecorder, Trace

if TYPE_CHECKING:
    from .analysis import Edit


class Embeddings(nn.Module):
    """Word + position + token-type embeddings, then LayerNorm."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position = nn.Embedding(cfg.max_positions, cfg.d_model)
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.d_model)
        self.norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(self, ids: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)  # (T,)
        x = self.word(ids) + self.position(positions) + self.token_type(segments)  # (B, T, D)
        out: torch.Tensor = self.norm(x)
        return out


class EncoderBlock(nn.Module):
    """Self-attention and a GELU MLP, each followed by residual add and LayerNorm."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.attention = MultiHeadAttention(cfg.d_model, cfg.n_heads)
        self.attention_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)
        self.ff_in = nn.Linear(cfg.d_model, cfg.d_ff)
        self.ff_out = nn.Linear(cfg.d_ff, cfg.d_model)
        self.ff_norm = nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, record: LayerRecorder | None = None,
        edit: Edit | None = None,
    ) -> torch.Tensor:
        x = self.attention_norm(x + self.attention(x, mask=mask, record=record, edit=edit))  # (B, T, D)
        hidden = F.gelu(self.ff_in(x))  # (B, T, d_ff)
        out: torch.Tensor = self.ff_norm(x + self.ff_out(hidden))  # (B, T, D)
        return out


class Encoder(nn.Module):
    """Token ids and segment ids in, last hidden state out."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embeddings = Embeddings(cfg)
        self.blocks = nn.ModuleList(EncoderBlock(cfg) for _ in range(cfg.n_layers))

    @torch.inference_mode()
    def forward(
        self, ids: torch.Tensor, segments: torch.Tensor | None = None, trace: Trace | None = None,
        edit: Edit | None = None, padding: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """ids, segments: (B, T) int64. Records into `trace` when one is given.

        `edit` (model/analysis.py) changes heads of its layer; every later layer runs on the edited
        hidden state, and the layers before it are computed exactly as without an edit. Its indices are
        checked against this model and input first (domain errors, loc under "edit").

        `padding`: (B, T) bool, True at the padding of a batch of inputs of different lengths. Those keys
        are hidden from every query (-inf before the softmax, the `mask` step shows it), so each input's
        real tokens get the numbers they get alone; the padding's own rows mean nothing. None: no mask."""
        if ids.shape[1] > self.cfg.max_positions:
            raise ValueError(f"{ids.shape[1]} tokens exceed the model's limit of {self.cfg.max_positions}")
        if edit is not None:
            edit.check(self.cfg.n_layers, self.cfg.n_heads, ids.shape[1])
        segments = torch.zeros_like(ids) if segments is None else segments
        mask = None if padding is None else key_padding_mask(padding)  # (B, 1, 1, T)
        x: torch.Tensor = self.embeddings(ids, segments)  # (B, T, D)
        for i, block in enumerate(self.blocks):
            x = block(x, mask=mask, record=trace.recorder(i) if trace is not None else None,
                      edit=edit if edit is not None and edit.layer == i else None)
        return x

    def block(self, layer: int) -> EncoderBlock:
        return cast(EncoderBlock, self.blocks[layer])
