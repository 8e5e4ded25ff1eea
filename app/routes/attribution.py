"""REST API v1: attribution beside attention (POST /api/v1/attribution), of a continuation token by token
(POST /api/v1/attribution/continuation), and a word's token id (POST /api/v1/token).

The route tokenizes the text (413 over the model's limit, before any work is queued) and makes one call on
the model worker (model/analysis/attribution.py), which checks the target and steps, runs the gradients and
the three attention-based scores, and answers a dataclass of plain numbers. The continuation's route checks
the ids, the length and the work first, then makes one call (model/analysis/continuation.py) that generates the
continuation when asked and integrates each of its tokens' gradients.

No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time.
"""

from typing import Annotated

from fastapi import APIRouter, Body, Depends

from model.analysis import attribution, baselines, continuation, work

from .. import serialize
from ..deps import ClientLeft, Hub, Resolved, SettingsDep, resolved_with_lm_head
from ..schemas.attribution import (
    Agreement,
    AttributionRequest,
    AttributionResponse,
    Baseline,
    Compared,
    Completeness,
    ContinuationRequest,
    ContinuationResponse,
    ContinuationRowAnswer,
    ContinuationToken,
    GivenContinuation,
    TokenRequest,
    TokenResponse,
)
from ..schemas.common import ANALYSES_BUSY, INVALID_FIELD, NOT_UTF8, TOO_LARGE, UNKNOWN_MODEL, openapi_examples

router = APIRouter(
    prefix="/api/v1",
    tags=["analysis"],
    responses={400: NOT_UTF8, 404: UNKNOWN_MODEL, 413: TOO_LARGE, 422: INVALID_FIELD, 503: ANALYSES_BUSY},
)

AttributionBody = Annotated[AttributionRequest, Body(openapi_examples=openapi_examples(AttributionRequest))]
TokenBody = Annotated[TokenRequest, Body(openapi_examples=openapi_examples(TokenRequest))]


@router.post(
    "/attribution",
    response_model=AttributionResponse,
    summary="Gradient × input or integrated gradients per token, beside attention, rollout and contributions",
    description=(
        "Explains one output f of the model on `text`: for a model with an LM head the next-token logit of the "
        "token id `target` at the last position; for any other (an encoder such as minilm) the cosine similarity "
        "of the mean-pooled last hidden state (mean over every token, as sentence-transformers pools "
        "all-MiniLM-L6-v2) to the pooled embedding of the text `target`. Per token, over its word embedding e_i: "
        "`gradient_x_input` (∂f/∂e_i)·e_i, or `integrated_gradients` (Sundararajan et al. 2017) from the baseline "
        "b chosen by `baseline` (default `mean`: the mean of the word embedding table, non-zero and uninformative, "
        "where RMSNorm is not singular; `pad`, `mask`, `zeros` or {\"text\": ...}; position and token-type "
        "embeddings kept), a Gauss–Legendre quadrature of `steps` nodes (up to 512), with `completeness` checking "
        "that the attributions sum to f(x) − f(b): `ok` false when they are more than 5 % apart (or the difference "
        "is too small to check), and then `agreement` is all null (no ranking is claimed) and `warning` says what "
        "to change (more steps, another baseline). Beside them, from the "
        "last layer and the rows f reads (`rows`: the last token's for an LM head, the mean over every token's "
        "for an encoder): the attention weights (mean over heads), attention rollout and the norm-based "
        "contributions; `agreement` gives each one's Spearman ρ with the absolute attributions, null where ρ is "
        "undefined (a one-token input, or constant scores). Rules that depend on the model: `model` is an id "
        "from GET /api/v1/models, else 404 (`unknown_model`); `text` and a target text make at most the "
        "model's `max_tokens` tokens, else 413 (`too_many_tokens`); `target` is a token id for a model with "
        "`lm_head` and a text for any other, else 422 (`target_kind`); a token id below the vocabulary's size, "
        "else 422 (`target_out_of_range`, ctx {id, vocab_size}); a baseline text of another token count than "
        "`text`, 422 (`baseline_token_count`, loc [\"body\", \"baseline\", \"text\"], ctx {baseline_tokens, "
        "text_tokens}); `pad` or `mask` for a tokenizer without that token, 422 (`baseline_unavailable`); "
        "work over the server's budget "
        "(ATTNSCOPE_WORK_BUDGET, model/analysis/work.py), checked before any model work: 422 (`work_too_large`, "
        "ctx {gflop, budget_gflop, largest}; `loc` [\"body\", \"steps\"] with the most steps at this length, else "
        "[\"body\", \"text\"] with the most tokens at these settings)."
    ),
)
def attribute(req: AttributionBody, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> AttributionResponse:
    spec, model = hub.get(req.model)
    encoded = model.tokenizer.encode(req.text)
    if req.method == "integrated_gradients":
        attribution.checked_steps(req.steps)
    target_tokens = len(model.tokenizer.encode(req.target)) if isinstance(req.target, str) else 0
    work.check_attribution(model.cfg, len(encoded), req.method, req.steps, target_tokens, settings.work_budget,
                           attribution.MIN_STEPS)
    baselines.check(model, encoded, req.baseline)  # 422 before any work is queued
    found = hub.run(attribution.attribute, model, encoded, req.target, req.method, req.steps, req.baseline, gone=gone,
                    stoppable=True, background=True)
    completeness = None
    if found.completeness is not None:
        gap = found.completeness.relative_gap
        completeness = Completeness(sum=found.completeness.sum, difference=found.completeness.difference,
                                    relative_gap=gap if gap != float("inf") else None, ok=found.completeness.ok,
                                    reason=found.completeness.reason)
    return AttributionResponse(
        model=spec.id, tokens=serialize.tokens(encoded.tokens), method=found.method, steps=found.steps,
        output_name=found.output_name, output=found.output, target=req.target, scores=list(found.scores),
        baseline=Baseline(kind=found.baseline, token_id=found.baseline_token, token=found.baseline_text,
                          text=found.baseline_source, output=found.baseline_output),
        completeness=completeness, rows=found.rows,
        compared=Compared(attention=list(found.compared["attention"]), rollout=list(found.compared["rollout"]),
                          contributions=list(found.compared["contributions"])),
        agreement=Agreement(attention=found.agreement["attention"], rollout=found.agreement["rollout"],
                            contributions=found.agreement["contributions"]),
        warning=found.warning,
    )


@router.post(
    "/token",
    response_model=TokenResponse,
    summary="The one vocabulary id of a text that is a single token",
    description=(
        "Tokenizes `text` with the model's tokenizer and answers its vocabulary id when it makes exactly one "
        "token besides the tokenizer's template tokens ([CLS], [SEP]): how a page turns a typed next token into "
        "the `target` id of POST /api/v1/attribution. A text of more tokens: 422 `not_single_token` (ctx "
        "{count}, the message listing the tokens). `model` is an id from GET /api/v1/models, else 404 "
        "(`unknown_model`); over the model's `max_tokens` tokens: 413 (`too_many_tokens`)."
    ),
)
async def single_token(req: TokenBody, hub: Hub) -> TokenResponse:
    spec, model = hub.get(req.model)
    token_id, token, display = attribution.single_token(model, req.text)
    return TokenResponse(model=spec.id, id=token_id, token=token, display=display)


ContinuationInput = Annotated[Resolved[ContinuationRequest], Depends(
    resolved_with_lm_head(ContinuationRequest, "attributing a continuation"))]
CONTINUATION_RULES = "; ".join(f"`{kind}`: {what}" for kind, (_, what) in continuation.CONTINUATION_RULES.items())


def _completeness(found: attribution.Completeness) -> Completeness:
    gap = found.relative_gap
    return Completeness(sum=found.sum, difference=found.difference, relative_gap=gap if gap != float("inf") else None,
                        ok=found.ok, reason=found.reason)


@router.post(
    "/attribution/continuation",
    response_model=ContinuationResponse,
    summary="Each token of a continuation attributed to every token before it (integrated gradients)",
    description=(
        "For a model with an LM head (`lm_head` in GET /api/v1/models; null `model`: the first one): `text` and a "
        "continuation, given as token ids or generated greedily here ({\"new_tokens\": n}). Row j explains the "
        "log-probability of continuation token j given everything before it (the log softmax of the logits at the "
        "position before it: comparable from row to row, where a position's logits share an offset the softmax "
        "discards) by integrated gradients over the word embeddings of every earlier token, the text's and the "
        "continuation's before it, from the baseline `baseline` (as /attribution's, `mean` by default) with a "
        "Gauss–Legendre quadrature of `steps` nodes: a matrix continuation × earlier tokens, each row with its own "
        "`completeness` (Σ row = f_j(x) − f_j(baseline) within 5 %, else `ok` false and `warning` says what to "
        "change; no ranking is claimed for that row). An encoder: 422 `no_lm_head`; "
        + CONTINUATION_RULES + " (422, `loc` [\"body\", \"continuation\", ...]); `pad` or `mask` for a "
        "tokenizer without that token, 422 (`baseline_unavailable`); work over the server's budget "
        "(ATTNSCOPE_WORK_BUDGET), checked before any model work: 422 (`work_too_large`, ctx {gflop, budget_gflop, "
        "largest}; `loc` [\"body\", \"steps\"] with the most steps, else the continuation's field with the most "
        "continuation tokens); over the model's `max_tokens` tokens: 413 (`too_many_tokens`)."
    ),
)
def attribute_continuation(r: ContinuationInput, hub: Hub, settings: SettingsDep, gone: ClientLeft,
                           ) -> ContinuationResponse:
    model, req = r.model, r.req
    given = req.continuation.ids if isinstance(req.continuation, GivenContinuation) else None
    new_tokens = None if given is not None else req.continuation.new_tokens  # type: ignore[union-attr]
    continuation.checked_continuation(model, len(r.encoded), given, new_tokens)
    count = len(given) if given is not None else int(new_tokens or 0)
    continuation.check_work(model.cfg, len(r.encoded), count, req.steps, given is None, settings.work_budget)
    baselines.check(model, r.encoded, req.baseline)  # 422 before any work is queued
    found = hub.run(continuation.attribute_continuation, model, r.encoded, given, new_tokens, req.steps,
                    req.baseline, gone=gone, stoppable=True, background=True)
    tokens = [ContinuationToken(index=row.index, id=row.id, token=row.token, display=row.display)
              for row in found.rows]
    return ContinuationResponse(
        model=r.spec.id, tokens=r.tokens, generated=found.generated, output_name="log_probability",
        steps=found.steps, baseline=req.baseline, baseline_token=found.baseline_token, continuation=tokens,
        rows=[ContinuationRowAnswer(token=token, output=row.output, baseline_output=row.baseline_output,
                                    scores=list(row.scores), completeness=_completeness(row.completeness),
                                    warning=row.warning) for token, row in zip(tokens, found.rows, strict=True)])
