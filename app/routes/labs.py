"""REST API v1: the training labs, trained in background jobs with an event stream (app/jobs): the induction-head
lab."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response
from sse_starlette import EventSourceResponse

from model.lab import induction

from ..jobs.labs import INDUCTION
from ..jobs.stream import event_schema, event_stream
from ..schemas.common import INVALID_FIELD, openapi_examples
from ..schemas.training import InductionTrainRequest, LabAccepted
from .jobs import BODY_ERRORS, JOBS_BUSY, LATE_CLIENTS, RUNS_APART, UNKNOWN_JOB, JobPath, Jobs, LastEventId

router = APIRouter(
    prefix="/api/v1/labs",
    tags=["labs"],
    responses={422: INVALID_FIELD},
)

INDUCTION_EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `eval` with step 0 (the untrained network), then one every `eval_every` steps and after the "
    "last: {step, steps, loss_first_half, loss_repeated_half (mean next-token loss in nats on the evaluation "
    "sequences' first R and repeated R, each from its second token), previous_token and induction (layers x "
    "heads scores), tokens (the watched sequence), maps (layers x heads x T x T: its attention, query by key, "
    "rounded to 4 decimals), seconds}. The evaluation sequences are 64 fixed R R sequences drawn from the seed. "
    "Last, one of `done` {steps, seconds}, `cancelled` {step: the last finished one, seconds} or `error` "
    "{detail}; then the stream ends. " + LATE_CLIENTS
)


@router.post(
    "/induction/train",
    status_code=202,
    response_model=LabAccepted,
    summary="Start training the induction-head lab's transformer in the background",
    description=(
        "Trains an attention-only transformer (token and learned position embeddings, `layers` pre-LayerNorm "
        "causal attention blocks of `heads` heads, no MLP, a final LayerNorm and an unembedding) with Adam on "
        "fresh batches of random sequences that end in a repeat R R, and evaluates it every `eval_every` steps: the "
        "loss on each half, each head's previous-token and induction scores and the watched sequence's maps. "
        "Answers at once with the job id and its event stream. " + RUNS_APART + " A setting outside its range, "
        "an odd length or d_model, heads that do not divide d_model, or a length that needs more different tokens "
        "than the vocabulary has is answered 422 `lab_setting` with the field in `loc` and its range in `ctx`. "
        "The same settings and seed give the same numbers."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train_induction(
    req: Annotated[InductionTrainRequest, Body(openapi_examples=openapi_examples(InductionTrainRequest))], jobs: Jobs,
) -> LabAccepted:
    job = jobs.start(INDUCTION, induction.InductionConfig(**req.model_dump()))
    return LabAccepted(job=job.id, events=f"{router.prefix}/induction/train/{job.id}/events")


@router.get(
    "/induction/train/{job}/events",
    response_class=EventSourceResponse,
    summary="An induction-head training job's events, from the start",
    description=INDUCTION_EVENTS_DOC,
    responses={
        200: {"content": {"text/event-stream": {"schema": event_schema(("eval", "done", "cancelled", "error"))}},
              "description": INDUCTION_EVENTS_DOC},
        204: {"description": "Last-Event-ID was the job's last event and the job has finished: nothing more."},
        404: UNKNOWN_JOB,
    },
)
async def induction_events(job: JobPath, jobs: Jobs,
                           last_event_id: LastEventId = None) -> Response:  # type: ignore[assignment]
    return event_stream(jobs.get(INDUCTION, job, "path"), last_event_id)


@router.delete(
    "/induction/train/{job}",
    status_code=204,
    response_class=Response,
    summary="Cancel an induction-head training job",
    description="The job stops before its next step and publishes `cancelled`; a finished job is left as it is. "
    "Either way 204.",
    responses={404: UNKNOWN_JOB},
)
def cancel_induction(job: JobPath, jobs: Jobs) -> Response:
    jobs.get(INDUCTION, job, "path").cancel()
    return Response(status_code=204)
