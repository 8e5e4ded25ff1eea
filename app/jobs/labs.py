"""The labs the job registry trains, and how each one's reports become events.

Iris: `epoch` after each epoch, its parameters kept for /predict. The induction-head lab: `eval` every
`eval_every` steps. The encoder-decoder: `eval` every `eval_every` steps, its parameters kept for /predict. Each
ends with `done` or `cancelled` (or `error`, written by the registry)."""

from __future__ import annotations

import numpy as np
import orjson
import torch

from model.lab import induction, iris, seq2seq

from .. import serialize
from ..schemas.training import LabCancelledEvent, LabDoneEvent, Seq2SeqAlignment, Seq2SeqPrediction
from .registry import Lab
from .store import Event, JobFiles, Saved

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
        return "done", LabDoneEvent(steps=report.steps, seconds=report.seconds).model_dump_json()
    return "cancelled", LabCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


def _alignment(alignment: seq2seq.Alignment) -> dict[str, object]:
    weights = None if alignment.weights is None else np.round(alignment.weights.to(torch.float32).numpy(), MAP_DECIMALS)
    return {"source": alignment.source, "target": alignment.target, "weights": weights}  # weights (T, S)


def seq2seq_event(report: seq2seq.Report) -> Event:
    if isinstance(report, seq2seq.EvalReport):
        data = {"step": report.step, "steps": report.steps, "loss": report.loss, "train_loss": report.train_loss,
                "accuracy": report.accuracy,
                "accuracy_by_length": {str(n): a for n, a in report.accuracy_by_length.items()},
                "alignment": _alignment(report.alignment), "alignment_share": report.alignment_share,
                "seconds": report.seconds}
        return "eval", orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    if isinstance(report, seq2seq.DoneReport):
        return "done", LabDoneEvent(steps=report.steps, seconds=report.seconds).model_dump_json()
    return "cancelled", LabCancelledEvent(step=report.step, seconds=report.seconds).model_dump_json()


def seq2seq_predict(job: JobFiles, text: str) -> str:
    """The JSON answer of POST /api/v1/labs/seq2seq/predict: the job's network after its latest evaluation on `text`."""
    saved: Saved = job.snapshot()
    config = seq2seq.Seq2SeqConfig(**job.settings["config"])
    net = seq2seq.Seq2Seq(seq2seq.TASKS[config.task], config.hidden, config.attention)
    net.load_state_dict({name: value.to(torch.float32) for name, value in saved.parameters.items()})
    prediction = seq2seq.predict(net.eval(), text)
    alignment = prediction.alignment
    weights = None if alignment.weights is None else alignment.weights.tolist()  # (T, S)
    return Seq2SeqPrediction(output=prediction.output, step=saved.count, task=config.task, attention=config.attention,
                             alignment=Seq2SeqAlignment(source=alignment.source, target=alignment.target,
                                                        weights=weights)).model_dump_json()


IRIS = Lab(name="iris", train_path="/api/v1/iris/train", progress=("epoch", "epoch", "epochs"),
           training=iris.Training, encode=serialize.iris_event, events=lambda config: config.epochs + 1,
           kept=lambda training: training.latest.parameters)
INDUCTION = Lab(name="induction", train_path="/api/v1/labs/induction/train", progress=("eval", "step", "steps"),
                training=induction.Training, encode=induction_event,
                events=lambda config: config.steps // config.eval_every + 2)
SEQ2SEQ = Lab(name="seq2seq", train_path="/api/v1/labs/seq2seq/train", progress=("eval", "step", "steps"),
              training=seq2seq.Training, encode=seq2seq_event,
              events=lambda config: config.steps // config.eval_every + 2,
              kept=lambda training: dict(training.model.state_dict()))
