"""The Informer lab as the job registry trains it: `eval` every `eval_every` steps with its parameters kept for
/watch, then `done` with the test MSE beside the baselines', or `cancelled` (or `error`, written by the registry)."""

from __future__ import annotations

import numpy as np
import orjson
import torch

from model.lab import informer

from ..schemas.informer import InformerDoneEvent, InformerEvalEvent
from ..schemas.training import LabCancelledEvent
from .labs import MAP_DECIMALS
from .registry import Lab
from .store import Event, JobFiles, Saved


def informer_event(report: informer.Report) -> Event:
    if isinstance(report, informer.EvalReport):
        return "eval", InformerEvalEvent(step=report.step, steps=report.steps, seconds=report.seconds,
                                         train_mse=report.train_mse, val_mse=report.val_mse).model_dump_json()
    if isinstance(report, informer.InformerDone):
        return "done", InformerDoneEvent(steps=report.steps, seconds=report.seconds, test_mse=report.test_mse,
                                         naive_mse=report.naive_mse, linear_mse=report.linear_mse).model_dump_json()
    return "cancelled", LabCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


def _rounded(tensor: torch.Tensor | None) -> np.ndarray | None:
    return None if tensor is None else np.round(tensor.detach().to(torch.float64).numpy(), MAP_DECIMALS)


def informer_watch(job: JobFiles, index: int) -> bytes:
    """The JSON answer of POST /api/v1/labs/informer/watch: the job's network after its latest evaluation on test
    window `index` (LabInputError on `index` beyond the test windows)."""
    saved: Saved = job.snapshot()
    config = informer.InformerConfig(**job.settings["config"])
    net = informer.Informer(config)
    net.load_state_dict({name: value.to(torch.float32) for name, value in saved.parameters.items()})
    watched = informer.watch(net.eval(), config, index)
    layers = [{"length": layer.length, "weights": _rounded(layer.weights), "measure": _rounded(layer.measure),
               "active": None if layer.active is None else layer.active.tolist()} for layer in watched.layers]
    data = {"step": saved.count, "series": config.series, "attention": config.attention, "index": watched.index,
            "windows": informer.test_window_count(config), "start": watched.start, "times": watched.times,
            "history": watched.history, "truth": watched.truth, "forecast": watched.forecast, "naive": watched.naive,
            "layers": layers}
    return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY)


INFORMER = Lab(name="informer", train_path="/api/v1/labs/informer/train", progress=("eval", "step", "steps"),
               training=informer.Training, encode=informer_event,
               events=lambda config: config.steps // config.eval_every + 2,
               kept=lambda training: dict(training.model.state_dict()))
