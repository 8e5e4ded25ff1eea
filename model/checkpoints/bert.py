"""BERT, RoBERTa, DistilBERT and ELECTRA checkpoints as post-LayerNorm Transformers (model/nets/transformer.py).

All four are the same post-LayerNorm encoder with exact-erf GELU; they differ in their tensor names and
in their embeddings: RoBERTa counts positions from padding_idx + 1 and has no token types in use,
DistilBERT has no token-type table, ELECTRA may embed narrower than its hidden width and project up.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from model.checkpoints.files import (
    Parts,
    check_used,
    checkpoint_error,
    load_state,
    load_tokenizer,
    read_weights,
    setting,
    strip_prefix,
)
from model.nets.config import NetConfig
from model.nets.transformer import Embeddings, Transformer

ARCHITECTURES = ("bert", "roberta", "distilbert", "electra")

# The task model's prefix in front of the base model's tensors (BertForMaskedLM saves "bert.embeddings...").
PREFIXES = {"bert": "bert.", "roberta": "roberta.", "distilbert": "distilbert.", "electra": "electra."}
# Buffers saved with some checkpoints that hold no weights.
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


class CheckpointEmbeddings(Embeddings):
    """Word + position + token-type embeddings, LayerNorm, and, for ELECTRA, a projection to d_model.

    `padding_idx` set: positions are counted as RoBERTa does, padding_idx + 1 for the first real token
    and padding_idx for padding tokens (transformers' create_position_ids_from_input_ids).
    """

    def __init__(self, cfg: NetConfig, embedding_size: int | None = None, padding_idx: int | None = None) -> None:
        nn.Module.__init__(self)
        width = cfg.d_model if embedding_size is None else embedding_size
        self.word = nn.Embedding(cfg.vocab_size, width)
        self.position = nn.Embedding(cfg.max_positions, width)
        self.token_type = nn.Embedding(cfg.type_vocab_size, width)
        self.norm = nn.LayerNorm(width, eps=cfg.layer_norm_eps)
        self.project = nn.Linear(width, cfg.d_model) if width != cfg.d_model else None
        self.padding_idx = padding_idx

    def positions(self, ids: torch.Tensor) -> torch.Tensor:
        if self.padding_idx is None:
            return torch.arange(ids.shape[1], device=ids.device)  # (T,)
        real = ids.ne(self.padding_idx).long()  # (B, T)
        return torch.cumsum(real, dim=1) * real + self.padding_idx  # (B, T)

    def forward(self, ids: torch.Tensor, segments: torch.Tensor, offset: int = 0) -> torch.Tensor:
        # offset is always 0: an encoder runs without a KV cache. Every family of this module has all three
        assert self.position is not None and self.token_type is not None and self.norm is not None
        x = self.word(ids) + self.position(self.positions(ids)) + self.token_type(segments)  # (B, T, E)
        out: torch.Tensor = self.norm(x)
        if self.project is not None:
            out = self.project(out)  # (B, T, D)
        return out


def hf_bert_name(ours: str) -> str:
    """Map one of our parameter names to the Hugging Face BERT checkpoint name."""
    parts = ours.split(".")
    if parts[0] == "embeddings":
        embeddings = {"word": "word_embeddings", "position": "position_embeddings",
                      "token_type": "token_type_embeddings", "norm": "LayerNorm"}
        return ".".join(["embeddings", embeddings[parts[1]], *parts[2:]])
    # blocks.{i}.<module>[.<sub>].{weight|bias}
    i, rest = parts[1], parts[2:]
    table: dict[tuple[str, ...], str] = {
        ("attention", "query"): "attention.self.query",
        ("attention", "key"): "attention.self.key",
        ("attention", "value"): "attention.self.value",
        ("attention", "output"): "attention.output.dense",
        ("attention_norm",): "attention.output.LayerNorm",
        ("ff_in",): "intermediate.dense",
        ("ff_out",): "output.dense",
        ("ff_norm",): "output.LayerNorm",
    }
    return f"encoder.layer.{i}.{table[tuple(rest[:-1])]}.{rest[-1]}"


def _config(raw: dict[str, Any], path: Path) -> tuple[NetConfig, int | None, int | None]:
    """Our NetConfig, ELECTRA's embedding width and RoBERTa's padding index, from config.json."""
    kind = raw["model_type"]
    distil = kind == "distilbert"
    activation = raw.get("activation" if distil else "hidden_act", "gelu")
    if activation != "gelu":
        raise checkpoint_error(path, f"activation {activation!r} is not supported, only 'gelu'")
    if raw.get("position_embedding_type", "absolute") != "absolute":
        raise checkpoint_error(path, f"position_embedding_type {raw['position_embedding_type']!r} is not "
                                     "supported, only 'absolute'")
    if raw.get("is_decoder") or raw.get("add_cross_attention"):
        raise checkpoint_error(path, "is a decoder configuration; only the encoder is supported")
    keys = (("dim", "n_layers", "n_heads", "hidden_dim") if distil
            else ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size"))
    d_model, n_layers, n_heads, d_ff = (setting(raw, path, k) for k in keys)
    try:
        cfg = NetConfig(
            vocab_size=setting(raw, path, "vocab_size"), d_model=d_model, n_layers=n_layers, n_heads=n_heads,
            d_ff=d_ff, max_positions=setting(raw, path, "max_position_embeddings"),
            type_vocab_size=1 if distil else raw.get("type_vocab_size", 2),
            layer_norm_eps=1e-12 if distil else raw.get("layer_norm_eps", 1e-12),
        )
    except ValueError as exc:
        raise checkpoint_error(path, str(exc)) from exc
    embedding_size = raw.get("embedding_size", d_model) if kind == "electra" else None
    padding_idx = raw.get("pad_token_id", 1) if kind == "roberta" else None
    return cfg, embedding_size, padding_idx


def distilbert_name(ours: str) -> str:
    """Map one of our parameter names to the DistilBERT checkpoint name."""
    parts = ours.split(".")
    if parts[0] == "embeddings":
        return ".".join(["embeddings", {"word": "word_embeddings", "position": "position_embeddings",
                                        "token_type": "token_type_embeddings", "norm": "LayerNorm"}[parts[1]],
                         *parts[2:]])
    i, rest = parts[1], parts[2:]
    table: dict[tuple[str, ...], str] = {
        ("attention", "query"): "attention.q_lin", ("attention", "key"): "attention.k_lin",
        ("attention", "value"): "attention.v_lin", ("attention", "output"): "attention.out_lin",
        ("attention_norm",): "sa_layer_norm", ("ff_in",): "ffn.lin1", ("ff_out",): "ffn.lin2",
        ("ff_norm",): "output_layer_norm",
    }
    return f"transformer.layer.{i}.{table[tuple(rest[:-1])]}.{rest[-1]}"


def electra_name(ours: str) -> str:
    if ours.startswith("embeddings.project."):
        return "embeddings_project." + ours.rsplit(".", 1)[1]
    return hf_bert_name(ours)


def load(directory: Path, raw: dict[str, Any]) -> Parts:
    """The network and tokenizer of a BERT, RoBERTa, DistilBERT or ELECTRA directory (config.json already read)."""
    kind = raw["model_type"]
    cfg, embedding_size, padding_idx = _config(raw, directory / "config.json")
    state, source = read_weights(directory)
    state = strip_prefix(state, PREFIXES[kind])
    encoder = Transformer(cfg)
    encoder.embeddings = CheckpointEmbeddings(cfg, embedding_size, padding_idx)
    if kind == "distilbert":
        # DistilBERT has no token types; a zero table of one row adds exactly nothing.
        state["embeddings.token_type_embeddings.weight"] = torch.zeros(1, encoder.embeddings.word.embedding_dim)
    name_of = {"distilbert": distilbert_name, "electra": electra_name}.get(kind, hf_bert_name)
    load_state(encoder, state, source, name_of)
    used = {name_of(k) for k in encoder.state_dict()}
    base = ("embeddings.", "transformer.") if kind == "distilbert" else ("embeddings.", "encoder.",
                                                                          "embeddings_project.")
    check_used(state, used, source, base, ignored=BUFFERS)
    max_tokens = cfg.max_positions - (padding_idx + 1 if padding_idx is not None else 0)
    tokenizer = load_tokenizer(directory, "roberta" if kind == "roberta" else "wordpiece", max_tokens)
    return Parts(encoder, tokenizer, architecture=kind, causal=False, pairs=True,
                 uses_segments=kind in ("bert", "electra"))
