"""The glimpse lab as the job registry trains it: `eval` every `eval_every` steps with the watched canvases'
glimpses, then `done` with the test accuracies, or `cancelled` (or `error`, written by the registry)."""

from __future__ import annotations

import numpy as np
import orjson
import torch

from model.lab import glimpse

from ..schemas.glimpse import GlimpseDoneEvent
from ..schemas.training import LabCancelledEvent
from .labs import MAP_DECIMALS
from .registry import Lab
from .store import Event


def _watched(watched: glimpse.Watched) -> dict[str, object]:
    return {"canvas": watched.canvas, "pixels": watched.pixels.astype(np.int64), "target": watched.target,
            "regions": np.round(watched.regions.detach().to(torch.float64).numpy(), MAP_DECIMALS),  # (T, 9)
            "output": watched.output}


def glimpse_event(report: glimpse.Report) -> Event:
    if isinstance(report, glimpse.EvalReport):
        data = {"step": report.step, "steps": report.steps, "seconds": report.seconds, "loss": report.loss,
                "eval_loss": report.eval_loss, "accuracy": report.accuracy, "digit_accuracy": report.digit_accuracy,
                "entropy": report.entropy, "grad_variance": report.grad_variance,
                "grad_mean_square": report.grad_mean_square, "tau": report.tau,
                "glimpses": [_watched(watched) for watched in report.glimpses]}
        return "eval", orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    if isinstance(report, glimpse.GlimpseDoneReport):
        return "done", GlimpseDoneEvent(steps=report.steps, seconds=report.seconds, test_accuracy=report.test_accuracy,
                                        digit_accuracy=report.digit_accuracy).model_dump_json()
    return "cancelled", LabCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


GLIMPSE = Lab(name="glimpse", train_path="/api/v1/labs/glimpse/train", progress=("eval", "step", "steps"),
              training=glimpse.Training, encode=glimpse_event,
              events=lambda config: config.steps // config.eval_every + 2)
