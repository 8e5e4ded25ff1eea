"""REST API v1: the training labs, trained in background jobs with an event stream (app/jobs): the induction-head
lab and the encoder-decoder with Bahdanau attention."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response

from model.analysis import work
from model.lab import induction, seq2seq
from model.lab.seq2seq_data import TASKS

from ..deps import SettingsDep
from ..jobs.labs import INDUCTION, SEQ2SEQ, seq2seq_predict
from ..schemas.common import INVALID_FIELD, documented_error, openapi_examples
from ..schemas.training import (
    InductionTrainRequest,
    LabAccepted,
    Seq2SeqPrediction,
    Seq2SeqPredictRequest,
    Seq2SeqTrainRequest,
)
from .jobs import (
    BODY_ERRORS,
    JOBS_BUSY,
    LATE_CLIENTS,
    RUNS_APART,
    Jobs,
    add_job_routes,
)

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
        "an odd length or d_model, heads that do not divide d_model, or a length whose half is more different tokens "
        "than the vocabulary has is answered 422 `lab_setting` with the field in `loc` and its range in `ctx`. "
        "The same settings and seed give the same numbers."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train_induction(
    req: Annotated[InductionTrainRequest, Body(openapi_examples=openapi_examples(InductionTrainRequest))], jobs: Jobs,
    settings: SettingsDep,
) -> LabAccepted:
    config = induction.InductionConfig(**req.model_dump())
    work.check_job(lambda steps: work.induction(config.vocab, config.length, config.layers, config.d_model,
                                                config.batch, steps),
                   config.steps, settings.work_budget, "steps", f"training the induction lab for {config.steps} steps")
    job = jobs.start(INDUCTION, config)
    return LabAccepted(job=job.id, events=f"{router.prefix}/induction/train/{job.id}/events")


add_job_routes(router, INDUCTION, "/induction/train", "An induction-head training job", INDUCTION_EVENTS_DOC)


SEQ2SEQ_EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `eval` with step 0 (the untrained network), then one every `eval_every` steps and after the "
    "last: {step, steps, loss (the evaluation set's teacher-forced loss, nats per output character, END "
    "included), train_loss (the mean training-batch loss since the last eval; null at step 0), accuracy (the "
    f"fraction of the {seq2seq.EVAL_EXAMPLES} fixed evaluation examples whose greedy output is exactly right), "
    "accuracy_by_length ({source length in characters: that fraction}), alignment {source, target (the greedy "
    "output's characters), weights (T x S: each output character's attention over the source, rounded to 4 "
    "decimals; null without attention)} of the watched example (the evaluation set's first), alignment_share (the "
    "mean attention an output character puts on its right source positions, teacher-forced over the evaluation "
    "set; for reverse position n - 1 - t; null without attention), seconds}. Last, one of `done` {steps, seconds}, "
    "`cancelled` {step, seconds} or `error` {detail}; then the stream ends. " + LATE_CLIENTS
)


@router.post(
    "/seq2seq/train",
    status_code=202,
    response_model=LabAccepted,
    summary="Start training the encoder-decoder (with or without Bahdanau attention) in the background",
    description=(
        "Trains a character-level encoder-decoder: a GRU encoder reading the text from its last character back to "
        "its first, and a GRU decoder whose context at step t is c_t = Σ_i a_ti h_i with "
        "a_ti = softmax_i(vᵀ tanh(W s_{t−1} + U h_i)) (Bahdanau's additive attention), or with `attention` false "
        "the encoder's final state at every step. Task `reverse`: 4 to 30 lowercase letters backwards; `dates`: a "
        "date written in one of several forms (\"1 Dec 2026\", \"December 1, 2026\", \"2026年12月1日\", "
        "\"01/12/26\", ...) to ISO YYYY-MM-DD. Adam with teacher forcing on fresh random batches; evaluated every "
        "`eval_every` steps with greedy decoding. Answers at once with the job id and its event stream. "
        + RUNS_APART + " The same settings and seed give the same numbers."
    ),
    responses={**BODY_ERRORS, 429: JOBS_BUSY},
)
def train_seq2seq(
    req: Annotated[Seq2SeqTrainRequest, Body(openapi_examples=openapi_examples(Seq2SeqTrainRequest))], jobs: Jobs,
    settings: SettingsDep,
) -> LabAccepted:
    config = seq2seq.Seq2SeqConfig(**req.model_dump())
    task = TASKS[config.task]
    work.check_job(lambda steps: work.seq2seq(config.hidden, seq2seq.EMBED, task.max_source, task.max_target,
                                              len(task.target_alphabet), config.attention, config.batch, steps),
                   config.steps, settings.work_budget, "steps", f"training the {config.task} lab for {config.steps} "
                   "steps")
    job = jobs.start(SEQ2SEQ, config)
    return LabAccepted(job=job.id, events=f"{router.prefix}/seq2seq/train/{job.id}/events")


add_job_routes(router, SEQ2SEQ, "/seq2seq/train", "An encoder-decoder training job", SEQ2SEQ_EVENTS_DOC)


@router.post(
    "/seq2seq/predict",
    response_model=Seq2SeqPrediction,
    summary="Run a job's encoder-decoder on a text of your own, with its alignment",
    description=(
        "Decodes `text` greedily with the job's network as it was after its latest evaluation (so it works while "
        "the job trains; step 0: untrained) and answers the output with its alignment, the attention weights of each "
        "output character over the text's characters (null without attention). A text outside the task's "
        "characters or lengths is answered 422 `lab_setting` with `loc` [body, text] and the lengths in `ctx`."
    ),
    responses={**BODY_ERRORS, 404: documented_error(
        "`job` is not an encoder-decoder job of this server (`unknown_job`) or is no longer kept (`job_evicted`: "
        "train again)."
    )},
)
def predict_seq2seq(req: Annotated[Seq2SeqPredictRequest, Body(openapi_examples=openapi_examples(
        Seq2SeqPredictRequest))], jobs: Jobs) -> Response:
    return Response(seq2seq_predict(jobs.get(SEQ2SEQ, req.job, "body"), req.text), media_type="application/json")
