"""The job that grows a small GPT from a learner's text (model/lab/lm.py), and what it leaves behind: a model
saved in the server's directory of trained models (app/jobs/lm_store.py) and registered with the hub at once.

Events, like the other labs': `eval` after each evaluation (step 0, every `eval_every` steps and the last) with
the losses beside the text's unigram and bigram entropies and a generated sample; then `done` once the model is
saved, listed and its heads measured (app/jobs/lm_heads.py), or `cancelled` (nothing is saved), or `error`.
The text reaches the job in memory only: the job's settings.json records its SHA-256 and length, never the text.

LmTraining reports through a callback (`on_eval`) while the registry's job thread iterates reports, so the
training runs on a thread of its own (one intra-op thread, like every job) and hands each evaluation over a
queue. After `done`, the oldest kept models beyond the server's cap are removed, from the hub and the disk.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from model.lab.lm import LmEval, LmSettings, LmTraining

from ..schemas.training import LabCancelledEvent
from . import lm_heads, lm_store
from .registry import Lab
from .store import Event
from .threads import one_intra_op_thread

_SAVING = threading.Lock()  # one job at a time saves, registers and trims the kept models


@dataclass(frozen=True)
class LmJobConfig:
    """What a job's settings.json records: the model id it will save under, the run's settings, the text's size
    and SHA-256 (not the text)."""

    model: str
    steps: int
    seed: int
    context: int
    layers: int
    heads: int
    d_model: int
    eval_every: int
    characters: int
    text_sha256: str


@dataclass(frozen=True)
class EvalReport:
    evaluation: LmEval
    steps: int

    @property
    def step(self) -> int:
        return self.evaluation.step


@dataclass(frozen=True)
class DoneReport:
    data: dict[str, Any]


@dataclass(frozen=True)
class CancelledReport:
    step: int
    seconds: float


class Models:
    """The server's trained models: where they are kept, how many, and the hub that serves them."""

    def __init__(self, hub: Any, root: Path, keep: int) -> None:
        self.hub = hub  # app.hub.ModelHub (its add and remove)
        self.root = root
        self.keep = keep

    def register(self, training: LmTraining, model_id: str) -> Any:
        """Save the trained network as `model_id`, list it, then drop the oldest beyond `keep`. The LoadedModel."""
        with _SAVING:
            self.root.mkdir(parents=True, exist_ok=True)
            new = self.root / f".new-{model_id}"
            training.save(new, model_id)
            new.rename(self.root / model_id)
            model = self.hub.add(self.root / model_id)
            kept = lm_store.kept(self.root)
            for old in kept[: max(0, len(kept) - self.keep)]:
                self.delete(old.name)
            return model

    def delete(self, model_id: str) -> bool:
        """Unlist a trained model and remove its directory; False when there is none of that id."""
        listed = self.hub.remove(model_id)
        directory = self.root / model_id
        found = lm_store.MODEL_ID.fullmatch(model_id) is not None and directory.is_dir()
        if found:
            lm_store.remove(directory)
        return listed or found


class LmRun:
    """One job's run: the training (built at once, so that a text it refuses is refused before the job starts),
    then saving and registering the model."""

    def __init__(self, text: str, config: LmJobConfig, settings: LmSettings, models: Models) -> None:
        self.training = LmTraining(text, settings)
        self.config = config
        self.models = models

    def run(self, stop: Callable[[], bool]) -> Iterator[EvalReport | DoneReport | CancelledReport]:
        handed: queue.Queue[LmEval | BaseException | None] = queue.Queue()
        stopped = threading.Event()

        def asked() -> bool:
            if stop():
                stopped.set()
            return stopped.is_set()

        def train() -> None:
            one_intra_op_thread()
            try:
                self.training.run(handed.put, asked)
                handed.put(None)
            except BaseException as exc:  # handed to the job thread, which publishes `error`
                handed.put(exc)

        started = time.perf_counter()
        thread = threading.Thread(target=train, name=f"attnscope-lm-{self.config.model}", daemon=True)
        thread.start()
        last: LmEval | None = None
        while (item := handed.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            last = item
            yield EvalReport(item, self.config.steps)
        thread.join()
        if stopped.is_set():
            yield CancelledReport(last.step if last else 0, time.perf_counter() - started)
            return
        model = self.models.register(self.training, self.config.model)
        heads = lm_heads.head_roles(model)
        yield DoneReport({"model": model.spec.id, "steps": self.training.step,
                          "seconds": round(time.perf_counter() - started, 3),
                          "val_loss": last.val_loss if last else None, "heads": heads,
                          "thresholds": lm_heads.THRESHOLDS})


def lm_event(report: EvalReport | DoneReport | CancelledReport) -> Event:
    if isinstance(report, EvalReport):
        data = {**dataclasses.asdict(report.evaluation), "steps": report.steps}
        return "eval", orjson.dumps(data).decode()
    if isinstance(report, DoneReport):
        return "done", orjson.dumps(report.data).decode()
    return "cancelled", LabCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


def _built_per_request(config: LmJobConfig) -> LmRun:
    raise RuntimeError("an lm job's run is built by its route, which holds the text (dataclasses.replace(LM, ...))")


LM = Lab(name="lm", train_path="/api/v1/labs/lm/train", progress=("eval", "step", "steps"),
         training=_built_per_request, encode=lm_event,
         events=lambda config: config.steps // config.eval_every + 2)
