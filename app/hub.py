"""The loaded models and the two threads that run their work: the interactive lane and the background lane."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, TypeVar

import anyio
import torch

from model.checkpoints import LoadedModel, ModelSpec, load
from model.checkpoints.registry import MODELS
from model.checkpoints.tokenizer import Encoded
from model.errors import CheckpointError, DeviceError, Stopped, UnknownModel
from model.maps import AttentionMaps, pick_heads, pool
from model.nets.edit import Edit

from .cache import ByteLRU
from .errors import AnalysesBusy, ClientGone
from .jobs import lm_store
from .jobs.threads import ViewsFirst, light_thread, one_intra_op_thread
from .lanes import Lane
from .memory import release_free_memory
from .schemas.api import ModelInfo
from .schemas.service import LaneReport

T = TypeVar("T")
log = logging.getLogger("attnscope.hub")
TRIM_AFTER_EVICTING = 16 * 1024 * 1024  # bytes of evicted maps after which free heap pages go back to the OS
MAX_BACKGROUND_WAITING = 4  # long analyses queued behind the running one; the next is answered 503 (AnalysesBusy)
# Work estimated above this (model/analysis/work.py) runs on the background lane even when the route did not ask:
# about 1 s alone on 2 cores (a MiniLM forward at 512 tokens is 25 GFLOP, GPT-2's lens at 1024 tokens 260).
LONG_WORK_FLOPS = 100e9


class LayerFeed:
    """One forward's per-layer maps, handed from the model worker to the event loop as each layer is done."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._arrived: asyncio.Queue[tuple[int, torch.Tensor] | BaseException | None] = asyncio.Queue()
        self.abandoned = False  # set on the loop when no one waits for the answer any more

    def publish(self, layer: int, block: torch.Tensor) -> None:
        """On the worker: layer `layer` is done. Raises ClientGone (ending the forward) once abandoned."""
        if self.abandoned:
            raise ClientGone()
        self._loop.call_soon_threadsafe(self._arrived.put_nowait, (layer, block))

    def close(self, error: BaseException | None = None) -> None:
        """On the worker: the forward has ended, normally (None) or with an error."""
        if not self.abandoned and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._arrived.put_nowait, error)

    async def layers(self, wanted: list[int]) -> AsyncIterator[torch.Tensor]:
        """The wanted layers in the order given, each as soon as it has arrived."""
        arrived: dict[int, torch.Tensor] = {}
        for layer in wanted:
            while layer not in arrived:
                item = await self._arrived.get()
                if isinstance(item, BaseException):
                    raise item
                if item is None:
                    raise RuntimeError(f"the forward ended without layer {layer}")
                arrived[item[0]] = item[1]
            yield arrived.pop(layer)


class Housekeeper:
    """Gives freed heap pages back to the OS between jobs, never while a request waits for the worker.

    Evicted maps and the scratch buffers of long inputs leave free pages inside glibc's heap that it keeps
    (RSS rose to 600+ MB after twenty 512-token answers); malloc_trim returns them but walks the heap
    (measured: 1.5-7.7 ms with a full cache of 512-token maps). After a job whose answer has been handed
    over, it runs at once on the worker when no other job waits; otherwise on a timer thread once the
    worker has been idle for `idle_s`. A long analysis (patching, attribution) leaves its scratch buffers
    in the background lane's arena (1.5-2.5 GB while integrated gradients runs on 500 tokens, bench/soak.py):
    after one, the timer trims once both lanes have been idle for `idle_s`.
    """

    def __init__(self, queued: Callable[[], int], idle_s: float = 0.5) -> None:
        self._queued = queued  # model jobs waiting or running now
        self._idle_s = idle_s
        self._pending = 0
        self._analysed = False  # an analysis ended since the last trim
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    def evicted(self, nbytes: int) -> None:
        with self._lock:
            self._pending += nbytes

    def after_job(self) -> None:
        """On the worker, once a job's answer is complete."""
        with self._lock:
            if self._pending < TRIM_AFTER_EVICTING:
                return
            if self._queued() > 1:  # another job waits behind this one
                self._arm()
                return
            self._pending = 0
        release_free_memory()

    def after_analysis(self) -> None:
        """Once a long analysis has ended: trim after the next idle spell."""
        with self._lock:
            self._analysed = True
            self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self._idle_s, self._on_timer)
        self._timer.daemon = True
        self._timer.start()

    def _on_timer(self) -> None:
        with self._lock:
            self._timer = None
            if self._pending < TRIM_AFTER_EVICTING and not self._analysed:
                return
            if self._queued() > 0:  # a job is running or waiting: try again after the next idle spell
                self._arm()
                return
            self._pending = 0
            self._analysed = False
        release_free_memory(collect=True)  # idle: the collection (startup objects frozen) holds nobody up

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()


class StartupError(RuntimeError):
    """The server cannot start; the message names the setting or file to fix."""


class ModelHub:
    """Holds every registered model, loaded once at start-up, and the two lanes that run their work.

    The interactive lane runs every view's forward (attention maps, traces, metrics, the lens, a generated
    token), one job at a time, with `torch_threads` threads: with two cores, one forward using both is faster
    than two competing for them, and a single calling thread keeps one OpenMP thread team instead of one per
    request thread. The background lane runs the long analyses (patching, attribution: `background=True`) on
    a thread of its own with one intra-op thread, in slices (the analysis asks `stop` between two pieces of
    its work); between two slices it gives way while a view's forward waits or runs (`views_first`, which
    the labs' training threads share between their batches). So a view never waits for a whole analysis:
    at worst it shares the cores with one slice. The long analyses wait for each other in their lane;
    MAX_BACKGROUND_WAITING of them may wait, the next is answered 503.

    Models trained on the server (app/jobs/lm.py) come and go while it runs: `add` and `remove` replace `loaded`
    with a new dict under a lock (copy on write), so a request that holds its model keeps it to the end of its
    work. Those kept in `trained_dir` (app/jobs/lm_store.py) load at start-up; one that fails is logged, left out.
    """

    def __init__(self, default_model: str, cache_bytes: int = 0, torch_threads: int = 1,
                 model_dirs: Mapping[str, Path] | None = None, model_paths: Sequence[Path] = (),
                 device: str = "cpu", dtype: str = "float32", trained_dir: Path | None = None) -> None:
        dirs = dict(model_dirs or {})
        unknown = sorted(set(dirs) - set(MODELS))
        if unknown:
            raise StartupError(f"ATTNSCOPE_MODEL_DIRS names unknown models {unknown}; known: {', '.join(MODELS)}")
        self.views_first = ViewsFirst()
        self._worker = Lane("model", torch.set_num_threads, (torch_threads,), views=self.views_first)
        self._background = Lane("background", one_intra_op_thread)
        self.cache: ByteLRU[AttentionMaps] = ByteLRU(cache_bytes)
        self.stats = {"queued": 0, "dropped": 0}  # jobs waiting or running now; jobs dropped for clients gone
        self._stats_lock = threading.Lock()
        self._housekeeper = Housekeeper(queued=lambda: self.stats["queued"])
        self.device, self.dtype = device, dtype
        self.trained: frozenset[str] = frozenset()  # the ids of the models trained on the server
        self._models_lock = threading.Lock()

        def load_all() -> dict[str, LoadedModel]:
            loaded = {mid: load(mid, device, dtype=dtype, directory=dirs.get(mid)) for mid in MODELS}
            for path in model_paths:
                model = load(path, device, dtype=dtype, taken=loaded)
                loaded[model.spec.id] = model
            for path in lm_store.kept(trained_dir) if trained_dir is not None else []:
                try:
                    model = load(path, device, dtype=dtype, taken=loaded)
                except (CheckpointError, OSError, ValueError) as exc:
                    log.warning("the trained model in %s is left out: %s", path, exc)
                    continue
                loaded[model.spec.id] = model
                self.trained |= {model.spec.id}
            return loaded

        # Loaded on the worker thread too: when another thread's OpenMP team has touched the
        # weights first, every forward on the worker was measured 30% slower (9.0 vs 6.9 ms at 32 tokens).
        try:
            self.loaded = self.run(load_all)
        except CheckpointError as exc:
            self.close()
            raise StartupError(f"{exc}; check ATTNSCOPE_MODEL_PATHS / --model") from exc
        except DeviceError as exc:
            self.close()
            raise StartupError(f"ATTNSCOPE_DEVICE={device} ATTNSCOPE_DTYPE={dtype} "
                               f"(--device {device} --dtype {dtype}): {exc}") from exc
        if default_model not in self.loaded:
            self.close()
            raise StartupError(
                f"ATTNSCOPE_DEFAULT_MODEL={default_model!r} is not a known model; known: {', '.join(self.loaded)}"
            )
        self.default = default_model

    def run(self, fn: Callable[..., T], *args: Any, gone: Callable[[], bool] | None = None,
            stoppable: bool = False, background: bool = False, flops: float = 0.0) -> T:
        """Run model work on a lane's thread (the interactive one, or the background one) and wait for its result.

        `gone` tells whether the client has left; work queued for a client that
        left before it started is dropped (ClientGone) instead of computed. With
        `stoppable`, fn also gets `stop=` a callable that turns True once the client
        has left while fn runs; fn checks it between its pieces of work (its slices)
        and raises model.errors.Stopped, and the job counts as dropped too. AnalysesBusy
        when the background lane already has MAX_BACKGROUND_WAITING jobs waiting. `flops`, the work's estimate,
        over LONG_WORK_FLOPS sends it to the background lane too: a view's forward never waits behind it.
        """
        background = background or flops > LONG_WORK_FLOPS
        lane = self._background if background else self._worker
        if background and lane.waiting >= MAX_BACKGROUND_WAITING:
            raise AnalysesBusy(lane.waiting, lane.expected_wait())
        stop = threading.Event() if stoppable else None

        def go_on() -> bool:  # fn asks between two slices: stop now? (the views' forwards go first)
            lane.slice_done()
            if background:
                self.views_first.give_way()
            return stop is not None and stop.is_set()

        job = lane.submit(fn, *args, **({"stop": go_on} if stop is not None else {}))
        with self._stats_lock:
            self.stats["queued"] += 1
        try:
            while True:
                try:
                    return job.result(timeout=0.1 if gone else None)
                except FutureTimeout:
                    if gone is not None and gone():
                        if job.cancel():
                            with self._stats_lock:
                                self.stats["dropped"] += 1
                            raise ClientGone() from None
                        if stop is not None:
                            stop.set()
                except Stopped:
                    with self._stats_lock:
                        self.stats["dropped"] += 1
                    raise ClientGone() from None
        finally:
            with self._stats_lock:
                self.stats["queued"] -= 1
            if background:
                self._housekeeper.after_analysis()

    def close(self) -> None:
        self._worker.shutdown()
        self._background.shutdown()
        self._housekeeper.close()

    def lanes(self) -> dict[str, LaneReport]:
        """What each lane is doing now (for /healthz)."""
        return {"interactive": self._worker.report(), "background": self._background.report()}

    def get(self, model_id: str | None) -> tuple[ModelSpec, LoadedModel]:
        """The model for an id from a request (None = default); UnknownModel names the ids that exist."""
        mid = self.default if model_id is None else model_id
        loaded = self.loaded  # one snapshot: a model removed meanwhile is still whole in it
        if mid not in loaded:
            raise UnknownModel(mid, list(loaded))
        return loaded[mid].spec, loaded[mid]

    def add(self, path: Path) -> LoadedModel:
        """Load a model trained on the server from its checkpoint directory (on the model worker, where the others
        were loaded) and list it at once; its id is the directory's name unless another model has it."""

        def load_one() -> LoadedModel:
            return load(path, self.device, dtype=self.dtype, taken=self.loaded)

        model = self.run(load_one)
        with self._models_lock:
            self.loaded = {**self.loaded, model.spec.id: model}
            self.trained = self.trained | {model.spec.id}
        return model

    def remove(self, model_id: str) -> bool:
        """Unlist a model trained on the server; False when it is not one. Requests that already hold it finish
        with it; its cached maps age out of the cache like any others."""
        with self._models_lock:
            if model_id not in self.trained or model_id not in self.loaded:
                return False
            self.loaded = {mid: model for mid, model in self.loaded.items() if mid != model_id}
            self.trained = self.trained - {model_id}
        return True

    def attention(self, model_id: str, encoded: Encoded, text: str, pair: str | None, compact: bool = False,
                  edit: Edit | None = None, gone: Callable[[], bool] | None = None) -> AttentionMaps:
        """All attention maps of one input (float32, or uint16 when compact), from the cache when it has them."""
        key = (model_id, text, pair, compact, edit)
        model = self.get(model_id)[1]
        return self.cache.get(key) or self.run(self._forward, key, model, encoded, compact, edit, None, gone=gone)

    async def attention_layers(self, model_id: str, encoded: Encoded, text: str, pair: str | None,
                               layers: list[int], compact: bool, edit: Edit | None = None,
                               ) -> AsyncIterator[torch.Tensor]:
        """Each chosen layer's (H, T, T) maps in the order given, each as soon as the forward has made it.

        Runs on the event loop; the forward runs on the worker and hands over every layer when its softmax
        is done, so an answer can send layer 0 while layer 1 is computed. A client that leaves (the
        answer's stream is cancelled) drops its queued forward, or stops a running one at its next layer.
        """
        key = (model_id, text, pair, compact, edit)
        maps = self.cache.get(key)
        if maps is not None:
            for i in layers:
                yield maps.per_layer[i]
            return
        model = self.get(model_id)[1]
        feed = LayerFeed(asyncio.get_running_loop())
        with self._stats_lock:
            self.stats["queued"] += 1
        job = self._worker.submit(self._forward, key, model, encoded, compact, edit, feed)
        job.add_done_callback(self._job_done)
        try:
            async for block in feed.layers(layers):
                yield block
        except BaseException:  # cancelled (the client left) or closed early: nobody needs the rest
            feed.abandoned = True
            if job.cancel():
                with self._stats_lock:
                    self.stats["dropped"] += 1
            raise

    async def attention_blocks(self, model_id: str, encoded: Encoded, text: str, pair: str | None,
                               layers: list[int], heads: list[int], compact: bool, edit: Edit | None = None,
                               pooled_to: int | None = None) -> AsyncIterator[torch.Tensor]:
        """attention_layers' blocks with only the chosen heads (in the order given), each pooled to at most
        `pooled_to` rows and columns when given (model/maps.py pool)."""

        def view(block: torch.Tensor) -> torch.Tensor:
            light_thread()
            chosen = pick_heads(block, heads)
            return chosen if pooled_to is None else pool(chosen, pooled_to)

        async for block in self.attention_layers(model_id, encoded, text, pair, layers, compact, edit):
            if pooled_to is None and heads == list(range(block.shape[0])):
                yield block  # every head in order: the block as the forward made it
            else:
                yield await anyio.to_thread.run_sync(view, block)  # a copy: off the event loop

    def _job_done(self, job: Future[Any]) -> None:
        with self._stats_lock:
            self.stats["queued"] -= 1
            if not job.cancelled() and isinstance(job.exception(), ClientGone):
                self.stats["dropped"] += 1

    def _forward(self, key: tuple[Any, ...], model: LoadedModel, encoded: Encoded, compact: bool, edit: Edit | None,
                 feed: LayerFeed | None) -> AttentionMaps:
        """On the worker: the maps from the cache (a request queued before may have made them) or a forward."""
        try:
            maps = self.cache.get(key)
            if maps is None:
                maps = model.attention_maps(encoded, compact, feed.publish if feed else None, edit)
                self._housekeeper.evicted(self.cache.put(key, maps, maps.nbytes))
            elif feed is not None:
                for i, block in enumerate(maps.per_layer):
                    feed.publish(i, block)
        except BaseException as exc:
            if feed is not None:
                feed.close(exc)
            raise
        if feed is not None:
            feed.close()
        self._housekeeper.after_job()
        return maps

    def infos(self, show_paths: bool = False) -> list[ModelInfo]:
        out = []
        trained = self.trained
        for mid, model in self.loaded.items():
            spec, cfg = model.spec, model.cfg
            out.append(
                ModelInfo(
                    id=mid, name=spec.name, architecture=spec.architecture,
                    n_layers=cfg.n_layers, n_heads=cfg.n_heads, d_model=cfg.d_model, d_head=cfg.d_head,
                    n_kv_heads=cfg.kv_heads, positions=cfg.positions, window=cfg.window,
                    window_layers=None if cfg.local_layers is None else list(cfg.local_layers),
                    max_tokens=model.tokenizer.max_tokens, dtype=model.dtype_name, causal=spec.causal, pairs=spec.pairs,
                    lm_head=model.lm_head, local=spec.local, path=str(spec.locate()) if show_paths else None,
                    default=mid == self.default, trained=mid in trained,
                )
            )
        return out
