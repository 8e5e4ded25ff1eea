"""Request, response and event models of the training labs (/api/v1/labs): the induction-head lab and the
encoder-decoder with Bahdanau attention."""

from __future__ import annotations

from typing import Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from model.lab import seq2seq
from model.lab.induction import (
    MAX_BATCH,
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_LENGTH,
    MAX_LR,
    MAX_SEED,
    MAX_STEPS,
    MAX_VOCAB,
    InductionConfig,
)
from model.lab.seq2seq_data import TASKS

from .common import Matrix, StrictRequest, examples
from .iris import JOB_DOC, JobId

DEFAULT = InductionConfig()
SEQ2SEQ = seq2seq.Seq2SeqConfig()
TaskName = Literal["reverse", "dates"]  # seq2seq_data.TASKS
LONGEST_TEXT = max(task.max_source for task in TASKS.values())


class LabAccepted(BaseModel):
    job: str = Field(description=JOB_DOC.replace("/api/v1/iris/train", "the lab's /train"))
    events: str = Field(description="The job's event stream (text/event-stream): <the lab's /train>/<job>/events.")


class InductionTrainRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"steps": 1500, "seed": 3},
        {"vocab": 32, "length": 24, "layers": 2, "heads": 2, "d_model": 64, "steps": 2000, "lr": 0.002,
         "batch": 32, "seed": 1},
    ))

    vocab: int = Field(DEFAULT.vocab, ge=4, le=MAX_VOCAB, description="Tokens the sequences are drawn from.")
    length: int = Field(DEFAULT.length, ge=4, le=MAX_LENGTH, description="The whole sequence R R: even, and at most "
                        "2 x vocab (the evaluation's R is of length / 2 different tokens).")
    layers: int = Field(DEFAULT.layers, ge=1, le=MAX_LAYERS, description="Attention layers (no MLP); the induction "
                        "circuit needs two.")
    heads: int = Field(DEFAULT.heads, ge=1, le=MAX_HEADS, description="Heads per layer; must divide d_model.")
    d_model: int = Field(DEFAULT.d_model, ge=4, le=MAX_D_MODEL, description="The residual stream's width: even, a "
                         "multiple of heads.")
    steps: int = Field(DEFAULT.steps, ge=1, le=MAX_STEPS, description="Adam steps, each on a fresh random batch.")
    lr: float = Field(DEFAULT.lr, gt=0, le=MAX_LR, allow_inf_nan=False, description=f"Adam's learning rate, above "
                      f"0, at most {MAX_LR}.")
    batch: int = Field(DEFAULT.batch, ge=1, le=MAX_BATCH, description="Sequences per step.")
    seed: int = Field(DEFAULT.seed, ge=0, le=MAX_SEED, description="Draws the initial weights, every batch and the "
                      "evaluation sequences: the same settings and seed give the same events.")
    eval_every: int = Field(DEFAULT.eval_every, ge=1, le=MAX_STEPS, description="Steps between two `eval` events.")


class InductionEvalEvent(BaseModel):
    """Data of an `eval` event (documentation: the job writes it with orjson)."""

    step: int = Field(description="Steps done; 0 is the untrained network.")
    steps: int
    loss_first_half: float = Field(description="Mean next-token loss, nats, on the first R's tokens 2..half of the "
                                   "evaluation sequences (R R, R random): nothing predicts them, about ln(vocab).")
    loss_repeated_half: float = Field(description="The same on the second R's tokens 2..half: each can be copied "
                                      "from the first R.")
    previous_token: Matrix = Field(description="layers x heads: each head's mean weight from a position to the one "
                                   "before it, over the evaluation sequences' mean map.")
    induction: Matrix = Field(description="layers x heads: each head's mean weight from a second-R token to the "
                              "token after its first occurrence.")
    tokens: list[int] = Field(description="The watched evaluation sequence (the first), token ids.")
    maps: list[list[Matrix]] = Field(description="layers x heads x T x T: the watched sequence's attention "
                                     "(query, key), rounded to 4 decimals.")
    seconds: float = Field(description="Seconds since the job started training.")


class LabDoneEvent(BaseModel):
    steps: int
    seconds: float


class LabCancelledEvent(BaseModel):
    step: int = Field(description="The last finished step.")
    seconds: float


class Seq2SeqTrainRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"task": "dates", "steps": 1500, "seed": 2},
        {"task": "reverse", "attention": False, "steps": 500, "lr": 0.002, "batch": 32, "seed": 1, "hidden": 32},
    ))

    task: TaskName = Field(cast(TaskName, SEQ2SEQ.task), description="reverse: 4 to 30 lowercase letters, "
                           "backwards. dates: a date in one of several written forms, English and Chinese, to ISO "
                           "YYYY-MM-DD.")
    attention: bool = Field(SEQ2SEQ.attention, description="true: Bahdanau's additive attention over the encoder's "
                            "states at every decoder step; false: the encoder's final state is the decoder's only "
                            "context (the bottleneck).")
    steps: int = Field(SEQ2SEQ.steps, ge=1, le=seq2seq.MAX_STEPS,
                       description="Adam steps, each on a fresh random batch.")
    lr: float = Field(SEQ2SEQ.lr, gt=0, le=seq2seq.MAX_LR, allow_inf_nan=False,
                      description=f"Adam's learning rate, above 0, at most {seq2seq.MAX_LR}.")
    batch: int = Field(SEQ2SEQ.batch, ge=1, le=seq2seq.MAX_BATCH, description="Examples per step.")
    seed: int = Field(SEQ2SEQ.seed, ge=0, le=seq2seq.MAX_SEED, description="Draws the initial weights, every batch "
                      "and the evaluation set: the same settings and seed give the same events.")
    hidden: int = Field(SEQ2SEQ.hidden, ge=seq2seq.MIN_HIDDEN, le=seq2seq.MAX_HIDDEN,
                        description="GRU units per direction of the encoder, and of the decoder.")
    eval_every: int = Field(SEQ2SEQ.eval_every, ge=1, le=seq2seq.MAX_STEPS,
                            description="Steps between two `eval` events.")


class Seq2SeqPredictRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"job": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "text": "attention"},
        {"job": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "text": "bahdanau"},
    ))

    job: JobId
    text: str = Field(min_length=1, max_length=LONGEST_TEXT, description="A source text of the job's task: for "
                      "reverse 4 to 30 lowercase letters (as in the examples); for dates a date such as \"1 Dec 2026\" "
                      "(the task's characters and lengths; others are answered 422 `lab_setting`).")


class Seq2SeqAlignment(BaseModel):
    source: list[str] = Field(description="The source's characters.")
    target: list[str] = Field(description="The output's characters (END left out).")
    weights: Matrix | None = Field(description="T x S: each output character's attention over the source characters "
                                   "(each row sums to 1); null for a network without attention.")


class Seq2SeqPrediction(BaseModel):
    output: str = Field(description="The greedy output.")
    alignment: Seq2SeqAlignment
    step: int = Field(description="The step after which the parameters used were taken (0: untrained). While the "
                      "job trains, its latest evaluation.")
    task: str
    attention: bool
