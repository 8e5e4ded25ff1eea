"""REST API v1: the notes' tiny transformer on Iris, trained in background jobs with an event stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, cast

from fastapi import APIRouter, Body, Depends, Header, Path, Request, Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from model.lab import iris

from .. import serialize
from ..jobs import KEEP_FINISHED, MAX_RUNNING, JobRegistry
from ..schemas.common import BODY_TOO_LARGE, INVALID_FIELD, NOT_UTF8, documented_error, openapi_examples
from ..schemas.iris import (
    JOB_DOC,
    JOB_PATTERN,
    IrisDataResponse,
    PredictRequest,
    PredictResponse,
    TrainAccepted,
    TrainRequest,
)

router = APIRouter(
    prefix="/api/v1/iris",
    tags=["iris"],
    responses={422: INVALID_FIELD},
)


def _jobs(request: Request) -> JobRegistry:
    return cast(JobRegistry, request.app.state.iris_jobs)


Jobs = Annotated[JobRegistry, Depends(_jobs)]
JobPath = Annotated[str, Path(pattern=JOB_PATTERN, description=JOB_DOC)]
# An int defaulting to None rather than `int | None`: the schema then says "integer", not "integer or null"
# (a header has no null; a fuzzer would send the text "null").
LastEventId = Annotated[int, Header(ge=0, le=2**31 - 1, description="The id of the last event received (EventSource "
                                    "sends it when it reconnects); the stream goes on after it.")]

BODY_ERRORS: dict[int | str, dict[str, Any]] = {400: NOT_UTF8, 413: BODY_TOO_LARGE}
UNKNOWN_JOB = documented_error(
    "No such job: never started on this server (`errors[0].type` `unknown_job`), or finished and no longer kept "
    f"(`job_evicted`: the server keeps its {KEEP_FINISHED} latest finished jobs; train again)."
)
EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `epoch` with epoch 0 (the untrained network), then one `epoch` per epoch: {epoch (1-based), "
    "epochs, loss (the mean training loss of the epoch), train_accuracy, test_accuracy (fractions), attention "
    "(H x 4 x 4: head, query, key; the watched test flower's weights after the epoch), seconds (since training "
    "started)}. Last, one of `done` {epochs, train_accuracy, test_accuracy, confusion (3 x 3 on the test split: "
    "rows the true class, columns the predicted one), seconds}, `cancelled` {epoch: the last finished one} or "
    "`error` {detail}; then the stream ends. A client that connects late gets every event from the start; with "
    "a `Last-Event-ID` header (EventSource sends it when it reconnects) it gets the events after that id, and "
    "204 when the job has finished and there are none (which tells EventSource not to reconnect)."
)


@router.post(
    "/train",
    status_code=202,
    response_model=TrainAccepted,
    summary="Start training the Iris transformer in the background",
    description=(
        "Trains the notes' network (Dense(4 -> 32) + ReLU -> 4 tokens of width 8 -> multi-head attention with E = 8, "
        "H = 2 -> mean over the tokens -> Dense(8 -> 3) -> softmax cross-entropy) on the 120 training flowers with "
        "attnscope's own backward, on a thread of its own. Answers at once with the job id and its event stream. "
        f"At most {MAX_RUNNING} jobs train at once on the server, all its worker processes together: another is "
        "answered 429 with a Retry-After header (seconds, estimated from the running jobs' pace). The same settings "
        "and seed give the same numbers. Whichever worker process answers, a job's events, DELETE and /predict "
        "work the same (docs/deploy.md)."
    ),
    responses={**BODY_ERRORS, 429: documented_error(
        f"{MAX_RUNNING} jobs are training (`errors[0].type` `jobs_busy`, `ctx` {{running, retry_after}}); retry "
        "after the Retry-After header's seconds, or cancel one."
    )},
)
def train(req: Annotated[TrainRequest, Body(openapi_examples=openapi_examples(TrainRequest))],
          jobs: Jobs) -> TrainAccepted:
    job = jobs.start(iris.TrainConfig(**req.model_dump()))
    return TrainAccepted(job=job.id, events=f"{router.prefix}/train/{job.id}/events")

# One server-sent event as a client's parser reads it: its name, its id and its JSON data (a string).
EVENT_SCHEMA = {
    "type": "object",
    "required": ["event", "id", "data"],
    "properties": {
        "event": {"type": "string", "enum": ["epoch", "done", "cancelled", "error"]},
        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event's index in the job, from 0."},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "description": "JSON: the event's fields, as the route's description lists them per event."},
    },
}


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
    found = jobs.get(job, "path")
    start = 0 if last_event_id is None else last_event_id + 1
    if found.finished() and start >= found.count():
        return Response(status_code=204)
    events = found.follow(start)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        async for index, (name, data) in events:
            yield ServerSentEvent(data=data, event=name, id=str(index))

    return EventSourceResponse(stream(), ping=15)


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
    jobs.get(job, "path").cancel()
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
    snapshot = jobs.get(req.job, "body").snapshot()
    return serialize.json_response(serialize.iris_prediction(iris.predict(snapshot, list(req.features))))


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
