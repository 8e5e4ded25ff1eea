"""REST API v1: a small GPT grown from the learner's own text (/api/v1/labs/lm): the training job (the other
labs' pattern: events, cancel, the shared limit on running jobs), and the trained models, which every route that
takes `model` serves once the job is done (app/jobs/lm.py registers them with the hub).

The text comes as JSON ({"text": ...}) or as an uploaded file (multipart/form-data: a `file` part, the settings
as form fields). It is checked in this order: uploads allowed (ATTNSCOPE_LM_UPLOADS, else 403 `lm_uploads_off`),
its size (over the cap: 413 `lm_text_too_large`, ctx {size, limit}), the settings, then the text itself
(model/lab/lm.py check_text: too short, not text: 422 `lab_setting`, loc the text, ctx {min, max}). The body
limit of this one path is raised to what a text at the cap needs (app/uploads.py UploadLimit), every other path
keeps ATTNSCOPE_MAX_BODY_BYTES; app/uploads.py reads either kind of body.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from model.analysis import work
from model.errors import InputError, LabInputError
from model.lab.lm import MAX_BYTES, MAX_D_MODEL, MIN_CHARS, LmSettings

from ..deps import Hub, SettingsDep
from ..hub import ModelHub
from ..jobs import JobRegistry, lm_store
from ..jobs.lm import LM, LmJobConfig, LmRun, Models
from ..jobs.threads import light_thread
from ..schemas.common import BODY_TOO_LARGE, INVALID_FIELD, NOT_UTF8, documented_error, openapi_examples
from ..schemas.lm import LmTrainRequest, TrainedModel, TrainedModels
from ..schemas.training import LabAccepted
from ..settings import Settings
from ..uploads import read_body, upload_cap, validation_error
from .jobs import JOBS_BUSY, LATE_CLIENTS, RUNS_APART, Jobs, add_job_routes

router = APIRouter(prefix="/api/v1/labs", tags=["labs"], responses={422: INVALID_FIELD})
TRAIN_PATH = "/api/v1/labs/lm/train"
SETTING_FIELDS = ("steps", "seed", "context", "layers", "heads", "d_model", "eval_every")


def _refusal(status: int, type_: str, loc: list[str], message: str, **ctx: Any) -> JSONResponse:
    error: dict[str, Any] = {"loc": loc, "msg": message, "type": type_}
    if ctx:
        error["ctx"] = ctx
    return JSONResponse({"detail": f"{message}.", "errors": [error]}, status_code=status)


def _settings(req: LmTrainRequest) -> LmSettings:
    given = {name: getattr(req, name) for name in SETTING_FIELDS if getattr(req, name) is not None}
    try:
        return dataclasses.replace(LmSettings(), **given)
    except ValueError as exc:  # a rule between fields (heads dividing d_model) or the network's own range
        message = str(exc)
        field = message.split(" ", 1)[0] if message.split(" ", 1)[0] in SETTING_FIELDS else "d_model"
        low, high = (given.get("heads", LmSettings().heads), MAX_D_MODEL) if field == "d_model" else (1, MAX_BYTES)
        raise LabInputError("lab_setting", field, message, min=low, max=high) from None


def _train_flops(layers: int, d_model: int, context: int, vocab: int, batch: int) -> Any:
    """steps -> training FLOPs: forward and backward (3 x 2 FLOPs a weight a token) of the blocks' matrices, the
    head, and the attention's scores and weighted sums."""
    weights = 12 * layers * d_model**2 + vocab * d_model
    attention = 2 * layers * context * d_model
    return lambda steps: 6.0 * (weights + attention) * batch * context * steps


LM_TRAIN_DOC = (
    "Grows a small GPT-2-shaped, character-level model (model/lab/lm.py: every Unicode character of the text is "
    "one token, shown as itself; the vocabulary is the text's characters by frequency with [UNK]) from `text`, "
    "trained with AdamW on random windows of its first 90 %, evaluated on the last 10 %. The text comes as JSON "
    "or as a file: a multipart/form-data body with a `file` part (UTF-8) and the settings as form fields. It "
    "never leaves the machine: the job and the saved model keep its SHA-256 and length, not the text. When "
    "the job is done, the model is saved in the server's directory of trained models (ATTNSCOPE_LM_DIR), listed "
    "in GET /api/v1/models with `trained` true and served by every route that takes `model`; it is loaded again "
    "when the server restarts. The server keeps ATTNSCOPE_LM_KEEP of them: the oldest beyond are removed. "
    "Refusals: 403 `lm_uploads_off` when the server takes no texts (ATTNSCOPE_LM_UPLOADS=false); 413 "
    "`lm_text_too_large` (ctx {size, limit}) for a text over ATTNSCOPE_LM_MAX_UPLOAD_BYTES; 422 `lab_setting` "
    f"for a text under {MIN_CHARS:,} characters or that is not text (a control character, invalid UTF-8; loc the "
    "text or file, ctx {min, max}) and for heads that do not divide d_model. " + RUNS_APART
    + " The same text, seed and settings give the same model."
)


@router.post(
    "/lm/train",
    status_code=202,
    response_model=LabAccepted,
    summary="Start growing a small GPT from a text of your own, in the background",
    description=LM_TRAIN_DOC,
    responses={400: NOT_UTF8, 413: BODY_TOO_LARGE, 429: JOBS_BUSY,
               403: documented_error("The server takes no texts to train on (`lm_uploads_off`).")},
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": LmTrainRequest.model_json_schema(), "examples": openapi_examples(LmTrainRequest)}}}},
)
async def train_lm(request: Request, jobs: Jobs, settings: SettingsDep, hub: Hub) -> Any:
    if not settings.lm_uploads:
        return _refusal(403, "lm_uploads_off", ["body"], "This server takes no texts to train on "
                        "(ATTNSCOPE_LM_UPLOADS=false); train with `attnscope train-lm FILE --out DIR` instead")
    body = await request.body()
    # reading up to megabytes of text, building its vocabulary and the network: off the event loop
    return await anyio.to_thread.run_sync(_train, request.headers.get("content-type", ""), body, jobs, settings, hub)


def _train(content_type: str, body: bytes, jobs: JobRegistry, settings: Settings, hub: ModelHub) -> Any:
    light_thread()
    fields, source = read_body(content_type, body)
    text = fields.get("text")
    cap = upload_cap(settings)
    if isinstance(text, str):
        size = len(text.encode("utf-8", errors="surrogatepass"))
        if size > cap:
            return _refusal(413, "lm_text_too_large", ["body", source], f"The text is {size:,} bytes of UTF-8, over "
                            f"this server's limit of {cap:,}; send a shorter text (at least {MIN_CHARS:,} characters)",
                            size=size, limit=cap)
    try:
        req = LmTrainRequest.model_validate(fields)
    except ValidationError as exc:  # an uploaded file's text is named as the file
        raise validation_error([{**e, "loc": tuple(source if part == "text" else part for part in e["loc"])}
                           for e in exc.errors()]) from None
    lm_settings = _settings(req)
    models = Models(hub, settings.lm_dir, settings.lm_keep)
    model_id = lm_store.new_id(settings.lm_dir)
    try:
        config = LmJobConfig(model=model_id, steps=lm_settings.steps, seed=lm_settings.seed,
                             context=lm_settings.context, layers=lm_settings.layers, heads=lm_settings.heads,
                             d_model=lm_settings.d_model, eval_every=lm_settings.eval_every, characters=len(req.text),
                             text_sha256="")
        run = LmRun(req.text, config, lm_settings, models)
    except InputError as exc:
        raise LabInputError("lab_setting", source, exc.message, min=MIN_CHARS, max=cap) from None
    run.config = dataclasses.replace(run.config, text_sha256=run.training.text_sha256)
    work.check_job(_train_flops(lm_settings.layers, lm_settings.d_model, lm_settings.context,
                                len(run.training.vocabulary), lm_settings.batch),
                   lm_settings.steps, settings.work_budget, "steps", f"training on the text for {lm_settings.steps} "
                   "steps")
    job = jobs.start(dataclasses.replace(LM, training=lambda config: run), run.config)
    return LabAccepted(job=job.id, events=f"{TRAIN_PATH}/{job.id}/events")


LM_EVENTS_DOC = (
    "Server-sent events (text/event-stream), each with an `id` (its index, from 0), an `event` name and JSON "
    "`data`. First `eval` with step 0 (the untrained network), then one every `eval_every` steps and after the "
    "last: {step, steps, seconds, train_loss, val_loss (nats per character on the held-out tail), "
    "unigram_entropy, bigram_entropy (the text's own, nats per character: what guessing by frequency, or by the "
    "character before, scores), sample (text the network generated)}. Last, one of `done` {model (the new model's "
    "id), steps, seconds, val_loss, heads: [{layer, head, previous_token, induction, positional, roles}], "
    "thresholds} (app/jobs/lm_heads.py says how each score is measured), `cancelled` {step, seconds} (nothing "
    "saved) or `error` {detail}; then the stream ends. " + LATE_CLIENTS
)
add_job_routes(router, LM, "/lm/train", "A small GPT's training job", LM_EVENTS_DOC)

ModelPath = Annotated[str, Path(pattern=f"^{lm_store.MODEL_ID.pattern}$", description="A trained model's id: "
                                "lm- and 8 hex digits.", examples=["lm-0123abcd"])]


@router.get("/lm/models", response_model=TrainedModels, summary="The models trained on this server")
def trained_models(hub: Hub, settings: SettingsDep) -> TrainedModels:
    loaded = hub.loaded
    models = []
    for directory in reversed(lm_store.kept(settings.lm_dir)):
        model = loaded.get(directory.name)
        if model is not None and directory.name in hub.trained:
            models.append(TrainedModel(**lm_store.describe(directory, directory.name, model.spec.name)))
    return TrainedModels(models=models, keep=settings.lm_keep, uploads=settings.lm_uploads,
                         max_upload_bytes=upload_cap(settings), min_chars=MIN_CHARS)


@router.delete(
    "/lm/models/{model}",
    status_code=204,
    response_class=Response,
    summary="Delete a model trained on this server",
    description="Removes it from the model list and its directory from the disk. Requests already running on it "
    "finish; later ones get 404 `unknown_model`.",
    responses={404: documented_error("No trained model of that id (`unknown_model`; `detail` names those there are).")},
)
def delete_trained(model: ModelPath, hub: Hub, settings: SettingsDep) -> Response:
    if not Models(hub, settings.lm_dir, settings.lm_keep).delete(model):
        known = sorted(hub.trained)
        message = (f"Unknown model {model!r}; use one of: {', '.join(known)} (the models trained on this server, "
                   "GET /api/v1/labs/lm/models)")
        return _refusal(404, "unknown_model", ["path", "model"], message)
    return Response(status_code=204)
