"""REST API v1: activation patching (POST /api/v1/patch).

The route resolves the model (404 for an unknown id), tokenizes both texts (413 over the model's limit, before
any work is queued) and makes one call on the model worker (model/analysis/patching.py), which checks the token
counts and the answer tokens and runs the grid; the answer's tensors are written by app/serialize.py.

No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time.
"""

from functools import partial
from typing import Annotated

from fastapi import APIRouter, Body, Response

from model.analysis import patching, work

from .. import serialize
from ..deps import ClientLeft, Hub, SettingsDep
from ..schemas.common import ANALYSES_BUSY, INVALID_FIELD, NOT_UTF8, TOO_LARGE, UNKNOWN_MODEL, openapi_examples
from ..schemas.patching import PatchAnswer, PatchMetric, PatchRequest, PatchResponse

router = APIRouter(
    prefix="/api/v1",
    tags=["analysis"],
    responses={400: NOT_UTF8, 404: UNKNOWN_MODEL, 413: TOO_LARGE, 422: INVALID_FIELD, 503: ANALYSES_BUSY},
)

PatchBody = Annotated[PatchRequest, Body(openapi_examples=openapi_examples(PatchRequest))]

RULES = "; ".join(f"`{kind}`: {what}" for kind, (_, what) in patching.PATCH_RULES.items())


@router.post(
    "/patch",
    response_model=PatchResponse,
    summary="Activation patching: how much of the clean output each head, pattern, MLP or stream position restores",
    description=(
        "Runs the model on `clean` and on `corrupted` (the same token count) and then on `corrupted` again once per "
        "cell, with one activation copied from the clean run: `heads`, each head's output (its weighted sum "
        "softmax·V before the output projection W_o) at every position, one (layer, head) at a time; "
        "`head_position`, one head's output at one position (a grid [layer][head][position]); `pattern`, one head's "
        "attention weights (every query's row) with the corrupted run's values, everything after recomputed; `mlp`, "
        "one layer's MLP output at one position; `residual`, "
        "the residual stream entering layer l at position p (row 0: the embeddings' output; a post-norm BERT's "
        "stream is each block's output after its LayerNorm, a pre-norm GPT-2's the sum before the block's norm). "
        "The metric m: for a model with an LM head the logit difference logit[good] − logit[bad] at the last "
        "position (`answer`: two token ids, or texts that are one token each); for any other (an encoder such as "
        "minilm) the cosine similarity of the mean-pooled last hidden state to the clean text's (so m(clean) = 1). "
        "`patched` holds m after each patch; `grid` [layer][head or position] = (m(patched) − m(corrupted)) / "
        "(m(clean) − m(corrupted)): 1 restores the clean metric, 0 changes nothing. When the gap m(clean) − "
        f"m(corrupted) is below {patching.GAP_SHARE:g} of the metric's scale (`min_gap`: of max(|m(clean)|, "
        "|m(corrupted)|, and for the logit difference the standard deviation of the last position's logits)) the "
        "ratio would magnify noise: `normalised` is false and `grid` null. Rules that depend on the model: `model` "
        "is an id from GET /api/v1/models, else 404 (`unknown_model`); each text at most the model's `max_tokens` "
        "tokens, else 413 (`too_many_tokens`); otherwise 422 with `type`: " + RULES + "."
    ),
)
def patch(req: PatchBody, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    spec, model = hub.get(req.model)
    clean, corrupted = model.tokenizer.encode(req.clean), model.tokenizer.encode(req.corrupted)
    grid = partial(patching.patch, max_work=settings.work_budget * work.GIGA / 2)  # the grid's multiply-adds
    found = hub.run(grid, model, clean, corrupted, req.target, req.answer, gone=gone, stoppable=True,
                    background=True)
    answer = None
    if found.answer is not None:
        answer = [PatchAnswer(id=i, token=model.tokenizer.token_text(i)[0], display=model.tokenizer.token_text(i)[1])
                  for i in found.answer]
    body = PatchResponse(
        model=spec.id, target=req.target, metric_name=found.metric_name,
        metric=PatchMetric(clean=serialize.short_float(found.clean), corrupted=serialize.short_float(found.corrupted)),
        answer=answer, axes=list(found.axes), rows="layer", columns=found.axes[1],
        n_heads=model.cfg.n_heads, n_kv_heads=model.cfg.kv_heads, normalised=found.normalised,
        gap=serialize.short_float(found.gap), min_gap=serialize.short_float(found.min_gap),
        grid=None if found.grid is None else serialize.float32_numbers(found.grid),
        patched=serialize.float32_numbers(found.patched),
        clean_tokens=serialize.tokens(clean.tokens), corrupted_tokens=serialize.tokens(corrupted.tokens),
    )
    return serialize.json_response(body)
