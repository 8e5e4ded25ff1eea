"""The loaded models and the single worker thread that runs their forwards."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

import torch

from model.errors import UnknownModel
from model.maps import AttentionMaps
from model.pretrained import CheckpointError, PretrainedEncoder
from model.registry import MODELS, ModelSpec
from model.tokenizer import Encoded

from .cache import ByteLRU
from .errors import ClientGone
from .memory import release_free_memory
from .schemas import ModelInfo

T = TypeVar("T")
TRIM_AFTER_EVICTING = 16 * 1024 * 1024  # bytes of evicted maps after which free heap pages go back to the OS


class StartupError(RuntimeError):
    """The server cannot start; the message names the setting or file to fix."""


class ModelHub:
    """Holds every registered model, loaded once at start-up.

    All model work runs on one dedicated thread, one job at a time, and
    requests queue for it: with two cores, one forward using both is faster
    than two competing for them, and a single calling thread keeps one
    OpenMP thread team instead of one per request thread.
    """

    def __init__(self, default_model: str, cache_bytes: int = 0, torch_threads: int = 1,
                 model_dirs: Mapping[str, Path] | None = None) -> None:
        if default_model not in MODELS:
            raise StartupError(
                f"ATTNSCOPE_DEFAULT_MODEL={default_model!r} is not a known model; known: {', '.join(MODELS)}"
            )
        dirs = dict(model_dirs or {})
        unknown = sorted(set(dirs) - set(MODELS))
        if unknown:
            raise StartupError(f"ATTNSCOPE_MODEL_DIRS names unknown models {unknown}; known: {', '.join(MODELS)}")
        self.default = default_model
        self._worker = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="attnscope-model", initializer=torch.set_num_threads,
            initargs=(torch_threads,),
        )
        self.cache: ByteLRU[AttentionMaps] = ByteLRU(cache_bytes)
        self.stats = {"queued": 0, "dropped": 0}  # jobs waiting or running now; jobs dropped for clients gone
        self._stats_lock = threading.Lock()

        def load_all() -> dict[str, PretrainedEncoder]:
            return {mid: PretrainedEncoder.from_dir(dirs.get(mid) or spec.locate()) for mid, spec in MODELS.items()}

        # Loaded on the worker thread too: when another thread's OpenMP team has touched the
        # weights first, every forward on the worker was measured 30% slower (9.0 vs 6.9 ms at 32 tokens).
        try:
            self.loaded: dict[str, PretrainedEncoder] = self.run(load_all)
        except CheckpointError as exc:
            self.close()
            raise StartupError(str(exc)) from exc

    def run(self, fn: Callable[..., T], *args: Any, gone: Callable[[], bool] | None = None) -> T:
        """Run model work on the worker thread and wait for its result.

        `gone` tells whether the client has left; work queued for a client that
        left before it started is dropped (ClientGone) instead of computed.
        """
        job = self._worker.submit(fn, *args)
        with self._stats_lock:
            self.stats["queued"] += 1
        try:
            while True:
                try:
                    return job.result(timeout=0.1 if gone else None)
                except FutureTimeout:
                    if gone is not None and gone() and job.cancel():
                        with self._stats_lock:
                            self.stats["dropped"] += 1
                        raise ClientGone() from None
        finally:
            with self._stats_lock:
                self.stats["queued"] -= 1

    def close(self) -> None:
        self._worker.shutdown(wait=True, cancel_futures=True)

    def get(self, model_id: str | None) -> tuple[ModelSpec, PretrainedEncoder]:
        """The model for an id from a request (None = default); UnknownModel names the ids that exist."""
        mid = self.default if model_id is None else model_id
        if mid not in self.loaded:
            raise UnknownModel(mid, list(self.loaded))
        return MODELS[mid], self.loaded[mid]

    def attention(self, model_id: str, encoded: Encoded, text: str, pair: str | None,
                  gone: Callable[[], bool] | None = None) -> AttentionMaps:
        """All attention maps of one input, from the cache when this model has seen this text."""
        key = (model_id, text, pair)

        def compute() -> AttentionMaps:
            maps = self.cache.get(key)  # a request queued before this one may have computed it
            if maps is None:
                maps = self.loaded[model_id].attention_maps(encoded)
                if self.cache.put(key, maps, maps.nbytes) >= TRIM_AFTER_EVICTING:
                    release_free_memory()  # evicted maps of short inputs leave holes in the heap
            return maps

        return self.cache.get(key) or self.run(compute, gone=gone)

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
