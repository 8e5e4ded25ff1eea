"""Model ids and how to load them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .pretrained import PretrainedEncoder, minilm_dir


@dataclass(frozen=True)
class ModelSpec:
    id: str
    name: str
    architecture: str
    pairs: bool  # accepts a second segment
    causal: bool
    load: Callable[[], PretrainedEncoder]


MODELS: dict[str, ModelSpec] = {
    "minilm": ModelSpec(
        id="minilm",
        name="all-MiniLM-L6-v2 (sentence-transformers, 6 layers x 12 heads)",
        architecture="bert",
        pairs=True,
        causal=False,
        load=lambda: PretrainedEncoder.from_dir(minilm_dir()),
    ),
}

DEFAULT_MODEL = "minilm"
