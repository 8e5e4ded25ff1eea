"""Model configuration: frozen dataclasses that validate their numbers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EncoderConfig:
    """Shape of a BERT-style encoder."""

    vocab_size: int
    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    max_positions: int
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "n_layers", "n_heads", "d_ff", "max_positions", "type_vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if not self.layer_norm_eps > 0:
            raise ValueError(f"layer_norm_eps must be positive, got {self.layer_norm_eps!r}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @classmethod
    def from_hf_json(cls, path: Path) -> EncoderConfig:
        """Read a Hugging Face BERT `config.json`."""
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        if raw.get("model_type") != "bert":
            raise ValueError(f"{path}: model_type {raw.get('model_type')!r} is not supported, only 'bert'")
        if raw.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"{path}: hidden_act {raw.get('hidden_act')!r} is not supported, only 'gelu'")
        if raw.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: only absolute position embeddings are supported")
        return cls(
            vocab_size=raw["vocab_size"],
            d_model=raw["hidden_size"],
            n_layers=raw["num_hidden_layers"],
            n_heads=raw["num_attention_heads"],
            d_ff=raw["intermediate_size"],
            max_positions=raw["max_position_embeddings"],
            type_vocab_size=raw.get("type_vocab_size", 2),
            layer_norm_eps=raw.get("layer_norm_eps", 1e-12),
        )
