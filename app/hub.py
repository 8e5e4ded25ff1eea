"""The loaded models and the lock that lets one forward run at a time."""

from __future__ import annotations

import threading

from model.maps import AttentionMaps
from model.pretrained import PretrainedEncoder
from model.registry import MODELS, ModelSpec
from model.tokenizer import Encoded

from .cache import ByteLRU
from .errors import ApiError
from .schemas import ModelInfo


class ModelHub:
    """Holds every registered model, loaded once at start-up.

    Forwards are serialized by `lock`: with two cores, one forward using both
    is faster than two competing for them.
    """

    def __init__(self, default_model: str, cache_bytes: int = 0) -> None:
        if default_model not in MODELS:
            raise ValueError(
                f"ATTNSCOPE_DEFAULT_MODEL={default_model!r} is not a known model; known: {', '.join(MODELS)}"
            )
        self.default = default_model
        self.loaded: dict[str, PretrainedEncoder] = {mid: spec.load() for mid, spec in MODELS.items()}
        self.lock = threading.Lock()
        self.cache: ByteLRU[AttentionMaps] = ByteLRU(cache_bytes)

    def get(self, model_id: str | None) -> tuple[ModelSpec, PretrainedEncoder]:
        """The model for an id from a request (None = default); 404 names the ids that exist."""
        mid = self.default if model_id is None else model_id
        if mid not in self.loaded:
            raise ApiError(404, f"Unknown model {mid!r}; use one of: {', '.join(sorted(self.loaded))}.")
        return MODELS[mid], self.loaded[mid]

    def attention(self, model_id: str, encoded: Encoded, text: str, pair: str | None) -> AttentionMaps:
        """All attention maps of one input, from the cache when this model has seen this text."""
        key = (model_id, text, pair)
        maps = self.cache.get(key)
        if maps is None:
            with self.lock:
                maps = self.cache.get(key)  # another request may have computed it meanwhile
                if maps is None:
                    maps = self.loaded[model_id].attention_maps(encoded)
                    self.cache.put(key, maps, maps.nbytes)
        return maps

    def infos(self) -> list[ModelInfo]:
        out = []
        for mid, model in self.loaded.items():
            spec, cfg = MODELS[mid], model.cfg
            out.append(
                ModelInfo(
                    id=mid, name=spec.name, architecture=spec.architecture,
                    n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_model=cfg.d_model, d_head=cfg.d_head,
                    max_tokens=model.tokenizer.max_tokens, causal=spec.causal, pairs=spec.pairs,
                    default=mid == self.default,
                )
            )
        return out
