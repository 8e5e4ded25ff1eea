"""Model ids and how to load them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .pretrained import minilm_dir


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    architecture: str
    pairs: bool  # accepts a second segment
    causal: bool
    locate: Callable[[], Path]  # the checkpoint directory used unless settings name another


MODELS: dict[str, ModelSpec] = {
    "minilm": ModelSpec(
        id="minilm",
        name="all-MiniLM-L6-v2 (sentence-transformers, 6 layers x 12 heads)",
        architecture="bert",
        pairs=True,
        causal=False,
        locate=minilm_dir,
    ),
}

DEFAULT_MODEL = "minilm"
