"""REST API v1: the notes' tiny transformer on Iris, trained in background jobs with an event stream."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response
from sse_starlette import EventSourceResponse

from model.analysis import work
from model.lab import iris

from .. import serialize
from ..deps import SettingsDep
from ..jobs.labs import IRIS
from ..jobs.stream import event_schema, event_stream
from ..schemas.common import INVALID_FIELD, documented_error, openapi_examples
from ..schemas.iris import (
    IrisDataResponse,
    PredictRequest,
    PredictResponse,
    TrainAccepted,
    TrainRequest,
)
from .jobs import BODY_ERRORS, JOBS_BUSY, LATE_CLIENTS, RUNS_APART, UNKNOWN_JOB, JobPath, Jobs, LastEventId

router = APIRouter(
    prefix="/api/v1/iris",
    tags=["iris"],
    responses={422: INVALID_FIELD},
)


EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `epoch` with epoch 0 (the untrained network), then one `epoch` per epoch: {epoch (1-based), "
    "epochs, loss (the mean training loss of the epoch), train_accuracy, test_accuracy (fractions), attention "
    "(H x 4 x 4: head, query, key; the watched test flower's weights after the epoch), seconds (since training "
    "started)}. Last, one of `done` {epochs, train_accuracy, test_accuracy, confusion (3 x 3 on the test split: "
    "rows the true class, columns the predicted one), seconds}, `cancelled` {epoch: the last finished one} or "
    "`error` {detail}; then the stream ends. " + LATE_CLIENTS
)


@router.post(
    "/train",
    status_code=202,
    response_model=TrainAccepted,
    summary="Start training the Iris transformer in the background",
    description=(
        "Trains the notes' network (Dense(4 -> 32) + ReLU -> 4 tokens of width 8 -> multi-head attention with E = 8, "
        "H = 2 -> mean over the tokens -> Dense(8 -> 3) -> softmax cross-entropy) on the 120 training flowers with "
        "attnscope's own backward. Answers at once with the job id and its event stream. " + RUNS_APART
        + " The same settings and seed give the same numbers; /predict too works from any worker process "
        "(docs/deploy.md)."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train(req: Annotated[TrainRequest, Body(openapi_examples=openapi_examples(TrainRequest))],
          jobs: Jobs, settings: SettingsDep) -> TrainAccepted:
    config = iris.TrainConfig(**req.model_dump())
    work.check_job(lambda epochs: work.iris(epochs, iris.TRAIN_SIZE, len(iris.FEATURES), iris.SEQ_LEN, iris.EMB_DIM,
                                            len(iris.CLASSES)),
                   config.epochs, settings.work_budget, "epochs", f"training the Iris transformer for {config.epochs} "
                   "epochs")
    job = jobs.start(IRIS, config)
    return TrainAccepted(job=job.id, events=f"{router.prefix}/train/{job.id}/events")

EVENT_SCHEMA = event_schema(("epoch", "done", "cancelled", "error"))


@router.get(
    "/train/{job}/events",
    response_class=EventSourceResponse,
    summary="A training job's events, from the start",
    description=EVENTS_DOC,
    responses={
        200: {"content": {"text/event-stream": {"schema": EVENT_SCHEMA}}, "description": EVENTS_DOC},
        204: {"description": "Last-Event-ID was the job's last event and the job has finished: nothing more."},
        404: UNKNOWN_JOB,
    },
)
async def events(job: JobPath, jobs: Jobs, last_event_id: LastEventId = None) -> Response:  # type: ignore[assignment]
    return event_stream(jobs.get(IRIS, job, "path"), last_event_id)


@router.delete(
    "/train/{job}",
    status_code=204,
    response_class=Response,
    summary="Cancel a training job",
    description="The job stops before its next batch and publishes `cancelled`; a finished job is left as it is. "
    "Either way 204.",
    responses={404: UNKNOWN_JOB},
)
def cancel(job: JobPath, jobs: Jobs) -> Response:
    jobs.get(IRIS, job, "path").cancel()
    return Response(status_code=204)


@router.post(
    "/predict",
    response_model=PredictResponse,
    summary="Classify one flower with a job's network, and trace its attention",
    description=(
        "Standardises the four measurements with the training split's statistics and runs the job's network: the "
        "class probabilities, the predicted class, and the attention layer's steps on this flower in the shape of "
        "POST /api/v1/toy's answer (plus the biases). Uses the parameters after the job's latest finished epoch, "
        "so it works while the job trains (epoch 0: untrained)."
    ),
    responses={**BODY_ERRORS, 404: documented_error(
        "`job` is not a job of this server (`unknown_job`) or is no longer kept (`job_evicted`: train again)."
    )},
)
def predict(req: Annotated[PredictRequest, Body(openapi_examples=openapi_examples(PredictRequest))],
            jobs: Jobs) -> Response:
    saved = jobs.get(IRIS, req.job, "body").snapshot()
    prediction = iris.predict(iris.Snapshot(saved.count, saved.parameters), list(req.features))
    return serialize.json_response(serialize.iris_prediction(prediction))


@router.get(
    "/data",
    response_model=IrisDataResponse,
    summary="The Iris data set and its fixed train/test split",
    description=(
        "The 150 flowers of Fisher's Iris data (1936): four measurements in cm and the species. The split is fixed "
        "and stratified: 30 test flowers (10 per species, drawn with a seeded generator) and 120 training "
        "flowers; `mean` and `std` are the training split's, with which the network's inputs are standardised."
    ),
)
def data() -> IrisDataResponse:
    return serialize.iris_data(iris.load())
