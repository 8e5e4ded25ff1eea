"""The labs the job registry trains, and how each one's reports become events.

Iris: `epoch` after each epoch, its parameters kept for /predict. The induction-head lab: `eval` every
`eval_every` steps. Each ends with `done` or `cancelled` (or `error`, written by the registry)."""

from __future__ import annotations

import numpy as np
import orjson
import torch

from model.lab import induction, iris

from .. import serialize
from ..schemas.training import InductionCancelledEvent, InductionDoneEvent
from .registry import Lab
from .store import Event

MAP_DECIMALS = 4  # an induction event's maps: 2 x 4 x 32 x 32 weights at the defaults, 50 kB at 4 decimals


def induction_event(report: induction.Report) -> Event:
    if isinstance(report, induction.EvalReport):
        maps = np.round(report.maps.to(torch.float32).numpy(), MAP_DECIMALS)  # (L, H, T, T)
        data = {"step": report.step, "steps": report.steps, "loss_first_half": report.loss_first_half,
                "loss_repeated_half": report.loss_repeated_half,
                "previous_token": report.previous_token.to(torch.float32).numpy(),  # (L, H)
                "induction": report.induction.to(torch.float32).numpy(),
                "tokens": report.tokens, "maps": maps, "seconds": report.seconds}
        return "eval", orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    if isinstance(report, induction.DoneReport):
        return "done", InductionDoneEvent(steps=report.steps, seconds=report.seconds).model_dump_json()
    return "cancelled", InductionCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


IRIS = Lab(name="iris", train_path="/api/v1/iris/train", progress=("epoch", "epoch", "epochs"),
           training=iris.Training, encode=serialize.iris_event, events=lambda config: config.epochs + 1,
           kept=lambda training: training.latest.parameters)
INDUCTION = Lab(name="induction", train_path="/api/v1/labs/induction/train", progress=("eval", "step", "steps"),
                training=induction.Training, encode=induction_event,
                events=lambda config: config.steps // config.eval_every + 2)
