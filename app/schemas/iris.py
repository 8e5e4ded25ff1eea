"""Request, response and event models of the Iris transformer's API (/api/v1/iris)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from model.lab.iris import FEATURES, MAX_EPOCHS, MAX_FEATURE, MAX_LR, MAX_SEED, TEST_SIZE, TRAIN_SIZE

from .common import Matrix, Stack, StrictRequest, examples
from .toy import ToyResponse

JOB_PATTERN = r"^[0-9a-f]{32}$"
JOB_DOC = "A job id from POST /api/v1/iris/train: 32 lowercase hex digits."
JobId = Annotated[str, Field(pattern=JOB_PATTERN, description=JOB_DOC, examples=["0f1e2d3c4b5a69788796a5b4c3d2e1f0"])]


class TrainRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"epochs": 40, "lr": 0.01, "optimizer": "adam", "batch": 16, "seed": 0, "watch": 0},
        {"epochs": 100, "lr": 0.1, "optimizer": "sgd", "batch": 8, "seed": 7, "watch": 12},
    ))

    epochs: int = Field(300, ge=1, le=MAX_EPOCHS, description="Passes over the 120 training flowers.")
    lr: float = Field(0.01, gt=0, le=MAX_LR, allow_inf_nan=False, description="The learning rate, above 0, at most 1.")
    optimizer: Literal["sgd", "adam"] = Field("adam", description="sgd: p -= lr·g. adam: Adam (0.9, 0.999, 1e-8).")
    batch: int = Field(16, ge=1, le=TRAIN_SIZE, description="Flowers per gradient step; the last batch may be smaller.")
    seed: int = Field(0, ge=0, le=MAX_SEED, description="Draws the initial weights and each epoch's order of flowers.")
    watch: int = Field(0, ge=0, le=TEST_SIZE - 1,
                       description="The test flower (an index into `test` of GET /api/v1/iris/data) whose two 4 x 4 "
                       "attention maps each epoch event carries.")


class TrainAccepted(BaseModel):
    job: str = Field(description=JOB_DOC)
    events: str = Field(description="The job's event stream (text/event-stream), e.g. /api/v1/iris/train/<job>/events.")


Feature = Annotated[float, Field(ge=0, le=MAX_FEATURE, allow_inf_nan=False)]


class PredictRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"job": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "features": [5.1, 3.5, 1.4, 0.2]},
        {"job": "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "features": [6.3, 2.9, 5.6, 1.8]},
    ))

    job: JobId
    features: list[Feature] = Field(
        min_length=4, max_length=4,
        description=f"The flower's {', '.join(FEATURES)} in cm (raw, 0 to {MAX_FEATURE:g}); the server "
        "standardises them with the training split's mean and std.",
    )


class QKVBiases(BaseModel):
    q: list[float]
    k: list[float]
    v: list[float]
    o: list[float]


class IrisTrace(ToyResponse):
    """The attention layer's steps for one flower, in the shape of POST /api/v1/toy's answer."""

    biases: QKVBiases = Field(description="The layer's biases b_q, b_k, b_v (n_heads·d_keys) and b_o (d_model): "
                              "project = input · W + b, output = concat · W_o + b_o.")


class PredictResponse(BaseModel):
    classes: list[str] = Field(description="The class names, in the order of `probabilities`.")
    probabilities: list[float] = Field(description="softmax of the logits; sums to 1.")
    predicted: str = Field(description="The class with the highest probability.")
    epoch: int = Field(description="The epoch after which the parameters used were taken (0: untrained). While "
                       "the job trains, the latest finished epoch.")
    trace: IrisTrace = Field(
        description="The attention layer's steps on this flower: input {q, k, v} are the 4 tokens of width 8 "
        "after the embedding and ReLU (the same matrix three times, self-attention), `weights` in x out, "
        "`biases`; d_model 8, n_heads 2, scale 1/sqrt(4)."
    )


class IrisDataResponse(BaseModel):
    features: list[str] = Field(description="The feature names, in column order.")
    classes: list[str] = Field(description="The class names; `labels` index into them.")
    rows: Matrix = Field(description="150 x 4 measurements in cm (Fisher 1936).")
    labels: list[int] = Field(description="The class index of each row.")
    train: list[int] = Field(description="The 120 training rows (ascending).")
    test: list[int] = Field(description="The 30 test rows (ascending), 10 of each class; `watch` indexes this list.")
    mean: list[float] = Field(description="Each feature's mean over the training rows.")
    std: list[float] = Field(description="Each feature's standard deviation over the training rows (population).")


class EpochEvent(BaseModel):
    """Data of an `epoch` event."""

    epoch: int = Field(description="1-based; 0 is the untrained network, sent before training.")
    epochs: int
    loss: float = Field(description="The mean training loss of the epoch's batches (epoch 0: the untrained "
                        "network's on the training split).")
    train_accuracy: float = Field(description="Fraction of the 120 training flowers classified right after the epoch.")
    test_accuracy: float = Field(description="Fraction of the 30 test flowers classified right after the epoch.")
    attention: Stack = Field(description="H x 4 x 4 (head, query, key): the watched test flower's attention weights.")
    seconds: float = Field(description="Seconds since the job started training.")


class DoneEvent(BaseModel):
    """Data of the `done` event."""

    epochs: int
    train_accuracy: float
    test_accuracy: float
    confusion: list[list[int]] = Field(description="3 x 3 counts on the 30 test flowers: rows the true class, "
                                       "columns the predicted class.")
    seconds: float


class CancelledEvent(BaseModel):
    """Data of the `cancelled` event."""

    epoch: int = Field(description="The last finished epoch.")


class ErrorEvent(BaseModel):
    """Data of the `error` event."""

    detail: str

