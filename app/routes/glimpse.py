"""REST API v1: the glimpse lab, hard attention trained. A CNN encoder and a GRU decoder read 1-4 handwritten digits
off a 3 × 3 canvas, attending over its 9 cells at each step softly or by picking one cell (REINFORCE,
Gumbel-softmax, straight-through), trained in a background job (app/jobs) with its event stream."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body

from model.analysis import work
from model.lab import glimpse

from ..deps import SettingsDep
from ..jobs.glimpse import GLIMPSE
from ..schemas.common import INVALID_FIELD, openapi_examples
from ..schemas.glimpse import GlimpseTrainRequest
from ..schemas.training import LabAccepted
from .jobs import (
    BODY_ERRORS,
    JOBS_BUSY,
    LATE_CLIENTS,
    RUNS_APART,
    Jobs,
    add_job_routes,
)

router = APIRouter(prefix="/api/v1/labs/glimpse", tags=["labs"], responses={422: INVALID_FIELD})
TRAIN = f"{router.prefix}/train"

EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `eval` with step 0 (the untrained network), then one every `eval_every` steps and after the "
    "last: {step, steps, seconds, loss (the mean training cross-entropy since the last evaluation, nats per target "
    "token; null at step 0), eval_loss, accuracy (the share of 500 validation canvases read exactly, END included), "
    "digit_accuracy, entropy (the attention's mean entropy over the 9 cells, nats), grad_variance (the variance of "
    "the method's gradient estimate for the attention's W, U, v across 16 repeated samples on 32 fixed training "
    "canvases, averaged over the parameters; 0 for soft attention), grad_mean_square, tau (the temperature; null "
    "but for gumbel and straight_through), glimpses: the first 4 test canvases read greedily, each {canvas, pixels "
    "(24 × 24, 0..16), target, regions (T × 9: the weights over the cells at each step, END step included, 4 "
    "decimals; one-hot for the hard methods), output}}. Last, one of `done` {steps, seconds, test_accuracy, "
    "digit_accuracy} (on 500 test canvases built from digit images the training never saw), `cancelled` {step, "
    "seconds} or `error` {detail}; then the stream ends. " + LATE_CLIENTS
)


@router.post(
    "/train",
    status_code=202,
    response_model=LabAccepted,
    summary="Start training the glimpse lab's digit reader with soft or hard attention in the background",
    description=(
        "Trains a reader of 1-4 handwritten digits (scikit-learn's 8 × 8 digits) placed in the cells of a 3 × 3 "
        "canvas, to emit them in reading order and then END: a small CNN gives each cell an annotation, and a GRU "
        "decoder attends over the 9 cells with Bahdanau's additive scores at each step. `method` soft: the weighted "
        "sum of all cells; reinforce: one cell sampled, the attention trained by the score-function gradient "
        "(log-probability of the choice × (reward − baseline), an entropy bonus); gumbel: the Gumbel-softmax relaxed "
        "sample at a temperature annealed from tau_start to tau_end; straight_through: a one-hot glimpse forward, "
        "the relaxed sample's gradient backward. Answers at once with the job id and its event stream. "
        + RUNS_APART + " A setting outside its range is answered 422 `lab_setting` (or the schema's own error) with "
        "the field in `loc` and its range in `ctx`. With one intra-op thread the same settings give the same events."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train(
    req: Annotated[GlimpseTrainRequest, Body(openapi_examples=openapi_examples(GlimpseTrainRequest))], jobs: Jobs,
    settings: SettingsDep,
) -> LabAccepted:
    config = glimpse.GlimpseConfig(**req.model_dump())
    work.check_job(lambda steps: work.glimpse(config.channels, config.hidden, config.batch, steps, config.eval_every),
                   config.steps, settings.work_budget, "steps", f"training the glimpse lab for {config.steps} steps")
    job = jobs.start(GLIMPSE, config)
    return LabAccepted(job=job.id, events=f"{TRAIN}/{job.id}/events")


add_job_routes(router, GLIMPSE, "/train", "A glimpse training job", EVENTS_DOC)
