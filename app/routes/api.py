"""REST API v1: models, attention maps, step-by-step traces and the toy example."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Annotated, Any

import anyio
import torch
from fastapi import APIRouter, Body, Query, Response

from model.backward import run_toy_backward
from model.errors import BACKWARD_RULES, TOY_RULES
from model.maps import pick_heads, pool, pool_bins
from model.sizes import attention_numbers, pooled_side, trace_numbers
from model.toy import run_toy

from .. import serialize
from ..deps import AttentionInput, ClientLeft, Hub, Resolved, SettingsDep, SummaryInput, ToyInput, TraceInput
from ..errors import refuse_over_cap
from ..hub import ModelHub
from ..schemas import (
    BODY_TOO_LARGE,
    INVALID_FIELD,
    NOT_UTF8,
    TOO_LARGE,
    UNKNOWN_MODEL,
    AttentionResponse,
    Encoding,
    ModelsResponse,
    SummaryResponse,
    ToyRequest,
    ToyResponse,
    TraceResponse,
    documented_error,
    documented_rules,
    openapi_examples,
)
from ..schemas.backward import ToyBackwardRequest, ToyBackwardResponse

router = APIRouter(
    prefix="/api/v1",
    tags=["attention"],
    responses={400: NOT_UTF8, 413: BODY_TOO_LARGE, 422: INVALID_FIELD},
)


@router.get("/models", response_model=ModelsResponse, summary="The models this server can run")
def models(hub: Hub, settings: SettingsDep) -> ModelsResponse:
    return ModelsResponse(models=hub.infos(show_paths=settings.show_model_paths))


ENCODING_DOC = (
    "`json` (default): the JSON body. `u16`: one binary body (application/octet-stream): the 4 bytes `ATN1`, "
    "a little-endian uint32 H, H bytes of UTF-8 JSON header (every field of the JSON answer except the matrices, "
    "plus `shape` [layers, heads, rows, columns], `dtype` \"uint16\" and `scale` 65535; padded with spaces so the "
    "data starts at a multiple of 8), then little-endian uint16 values in row-major (layer, head, query, key) "
    "order; weight = value / 65535, absolute error at most 7.7e-6. About 2 bytes a weight instead of ~20."
)
EncodingParam = Annotated[Encoding, Query(description=ENCODING_DOC)]
BINARY_ANSWER = {"content": {serialize.U16_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}}
MODEL_RULES = (
    " Rules that depend on the model, which the request schema cannot state (the model's sizes are in GET "
    "/api/v1/models): `model` is an id listed there, else 404 (`errors[0].type` `unknown_model`); the text "
    "(and pair) make at most the model's `max_tokens` tokens, else 413 (`too_many_tokens`), never truncated; "
    "`text_pair` only for a model with `pairs`, else 422 (`pair_not_supported`); {indices}, else 422 "
    "(`index_out_of_range`, `loc` names the field)."
)
EDIT_DOC = (
    " **What-if edits**: `edit` changes one layer's chosen heads (temperature, hidden keys, ablation: see the "
    "AttentionEdit schema) and recomputes every later layer on the edited hidden state; layers before it are "
    "unchanged and the answer says `edited: true`. Edited maps are cached apart from the model's own. Its "
    "indices are checked before the model runs: 422 `index_out_of_range` or `edit_hidden_key` at "
    "[\"body\", \"edit\", ...]."
)
MAPS_ERRORS: dict[int | str, dict[str, Any]] = {
    200: BINARY_ANSWER,
    404: UNKNOWN_MODEL,
    413: TOO_LARGE,
}


TRACE_ERRORS: dict[int | str, dict[str, Any]] = {
    404: UNKNOWN_MODEL,
    413: TOO_LARGE,
}


def _refuse_json_over_cap(encoding: Encoding, cap: int, r: Resolved[Any], side: int) -> None:
    """Refuse a JSON answer over the cap before any forward runs (compact answers have no cap)."""
    if encoding is Encoding.json:
        refuse_over_cap(attention_numbers(len(r.layers), len(r.heads), side), cap,
                        f"{len(r.layers)} layers x {len(r.heads)} heads x {side}x{side}",
                        "ask for fewer layers or heads, or for the compact encoding ?encoding=u16")


def _fields(r: Resolved[Any]) -> dict[str, Any]:
    return {"model": r.spec.id, "tokens": r.tokens, "layers": r.layers, "heads": r.heads, "edited": r.edit is not None}


def _maps_answer(encoding: Encoding, response: type[AttentionResponse | SummaryResponse], fields: dict[str, Any],
                 r: Resolved[Any], hub: ModelHub, pooled_to: int | None = None) -> Response:
    """The chosen maps as they come out of the forward, layer by layer, in the encoding asked for."""
    compact = encoding is Encoding.u16
    layers = hub.attention_layers(r.spec.id, r.encoded, r.req.text, r.req.text_pair, r.layers, compact, r.edit)

    def view(block: torch.Tensor) -> torch.Tensor:
        chosen = pick_heads(block, r.heads)
        return chosen if pooled_to is None else pool(chosen, pooled_to)

    async def blocks() -> AsyncIterator[torch.Tensor]:
        async for block in layers:
            if pooled_to is None and r.heads == list(range(block.shape[0])):
                yield block  # every head in order: the block as the forward made it
            else:
                yield await anyio.to_thread.run_sync(view, block)  # a copy: off the event loop

    if compact:
        side = min(len(r.encoded), pooled_to or len(r.encoded))
        header = {**fields, "tokens": [t.model_dump() for t in fields["tokens"]]}
        return serialize.u16_response(header, [len(r.layers), len(r.heads), side, side], blocks())
    return serialize.maps_json_response(response, fields, blocks())


@router.post(
    "/attention",
    response_model=AttentionResponse,
    summary="Attention maps of every chosen layer and head",
    description=(
        "Runs the model on `text` (and `text_pair`) and returns the attention weights with axis order "
        "(layer, head, query, key). The JSON answer cap (layers x heads x N x N numbers, "
        "ATTNSCOPE_MAX_JSON_VALUES, default 2,500,000) is checked before the model runs: 413. Repeated "
        "requests for the same model and text are answered from a cache."
        + EDIT_DOC
        + MODEL_RULES.format(indices="every layer index below the model's `n_layers`, every head index below "
                             "its `n_heads`")
    ),
    responses=MAPS_ERRORS,
)
async def attention(r: AttentionInput, hub: Hub, settings: SettingsDep,
                    encoding: EncodingParam = Encoding.json) -> Response:
    _refuse_json_over_cap(encoding, settings.max_json_values, r, len(r.encoded))
    return _maps_answer(encoding, AttentionResponse, _fields(r), r, hub)


@router.post(
    "/attention/summary",
    response_model=SummaryResponse,
    summary="Small max-pooled summaries of the attention maps, for overviews",
    description=(
        "Like /attention, but each map is max-pooled to at most `size` x `size` (default and limit 64): each "
        "cell holds the largest weight of its block of tokens (`bins` gives each block's token range), so no "
        "strong weight vanishes. These are display summaries, not weights: rows no longer sum to 1. Inputs "
        "of at most `size` tokens come back unpooled." + EDIT_DOC
        + MODEL_RULES.format(indices="every layer index below the model's `n_layers`, every head index below "
                             "its `n_heads`")
    ),
    responses=MAPS_ERRORS,
)
async def attention_summary(r: SummaryInput, hub: Hub, settings: SettingsDep,
                            encoding: EncodingParam = Encoding.json) -> Response:
    side = pooled_side(len(r.encoded), r.req.size)
    _refuse_json_over_cap(encoding, settings.max_json_values, r, side)
    fields = {**_fields(r), "size": side, "bins": pool_bins(len(r.encoded), r.req.size)}
    return _maps_answer(encoding, SummaryResponse, fields, r, hub, pooled_to=r.req.size)


@router.post(
    "/trace",
    response_model=TraceResponse,
    summary="Every step of one layer's attention, with the real numbers",
    description=(
        "Traces layer `layer` of the model on `text` (and `text_pair`): the input, the projections, the split "
        "into heads, scores, scale, mask, softmax, weighted sum, concat and the output projection (before the "
        "residual add). Per-head steps hold the chosen head, or all heads when `head` is null. The answer "
        "holds 6·N·D + 4·h·N·Dh + 4·h·N² numbers for N tokens and h heads; over the JSON cap: 413."
        + MODEL_RULES.format(indices="`layer` below the model's `n_layers`, `head` below its `n_heads`")
    ),
    responses=TRACE_ERRORS,
)
def trace(r: TraceInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    cfg, (layer,), n = r.model.cfg, r.layers, len(r.encoded)
    refuse_over_cap(trace_numbers(n, cfg.d_model, cfg.d_head, len(r.heads)), settings.max_json_values,
                    f"{len(r.heads)} heads at {n} tokens", "trace one head at a time or send a shorter text")
    steps = hub.run(r.model.trace_layer, r.encoded, layer, r.heads, gone=gone)
    body = TraceResponse(
        model=r.spec.id, tokens=r.tokens, layer=layer, d_model=cfg.d_model, n_heads=cfg.n_heads, d_head=cfg.d_head,
        heads=r.heads, scale=r.model.attention_scale(layer), steps=serialize.steps(steps),
    )
    return serialize.json_response(body)


@router.post(
    "/toy",
    response_model=ToyResponse,
    summary="Multi-head attention on small matrices you choose (default: the worked example)",
    description=(
        "`{}` is the worked example: d_model 4, 2 heads, identity weights, zero biases. Keys default to queries "
        "and values to keys; weights act as X W (in x out) and a missing one is the identity. Matrices are at "
        "most 64x64 with finite numbers of magnitude at most 1e6 (stated in the schema). Rules between fields, "
        "which the schema cannot state: every row of a matrix as long as its first row; keys and values have "
        "as many columns as queries (d_model); as many values as keys; each weight is d_model x d_model; "
        "n_heads divides d_model (an odd d_model needs n_heads, unless d_keys and d_values are sent). "
        "**Variants**: `scaled_dot` (q·kᵀ, scale 1/√d_keys), `dot` (scale 1), `additive` (scores_ij = "
        "v_hᵀ tanh(q_i W_q[h] + k_j W_k[h]) on the split q and k, scale 1; parameters `additive` or seeded "
        "ones with d_attn = d_keys), `hard` (one-hot argmax of each masked row, ties to the lowest index), "
        "`sample` (one-hot drawn from the softmax row), `gumbel` (softmax((s + g)/τ), g ~ Gumbel(0, 1); with "
        "`straight_through` the forward weights are its one-hot argmax). **Temperature** τ divides the scaled "
        "scores: the `scale` step is scores × scale, and the answer's `scale` is that factor (1/√d_keys or 1, "
        "divided by τ); the mask and the ALiBi bias are added after it, unscaled. The `softmax` step holds the "
        "weights used; `hard`, `sample` and straight-through `gumbel` add `soft`, the softmax the one-hot rows "
        "came from. A row with every key hidden is zeros for every variant. **Seed**: each draw uses "
        "`torch.Generator().manual_seed(seed + stream)` and `torch.rand(..., dtype=float64)`: stream 0 is the "
        "noise (shape h × L × S for gumbel with g = −log(−log u); h × L × 1 for sample, which takes the first "
        "key whose cumulative weight exceeds u). **Widths**: W_q, W_k are d_model × (n_heads·d_keys), W_v "
        "d_model × (n_heads·d_values), W_o (n_heads·d_values) × d_model; a missing square weight is the "
        "identity, a missing non-square one is N(0, 1)/√rows rounded to 2 decimals from streams q 1, k 2, v 3, "
        "o 4 (additive defaults: w_q 5, w_k 6, v 7); the answer echoes every weight used. **Positions**: "
        "`sinusoidal` adds the table to the queries', keys' and values' inputs by row (the `input` step shows "
        "X + P; even d_model), `rope` rotates each head's q and k after the split (the `split` step shows "
        "them; even d_keys), `alibi` adds −m_h·|i−j|, m_h = 2^(−8(h+1)/H), in the `mask` step. "
        "`hidden_keys` hides those keys from every query, beside `causal`. A broken rule is answered 422 with "
        "`errors[0].loc` naming the field, row or cell, e.g. `[\"body\", \"values\"]` or "
        "`[\"body\", \"queries\", \"1\"]`, `errors[0].type` naming the rule and `errors[0].ctx` its numbers: "
        + documented_rules(TOY_RULES) + "."
    ),
)
def toy(req: ToyInput, hub: Hub, gone: ClientLeft) -> Response:
    return serialize.json_response(_toy_body(_run_toy(run_toy, req, hub, gone)))


def _run_toy(run: Any, req: ToyRequest, hub: ModelHub, gone: Callable[[], bool], **more: Any) -> Any:
    """run_toy or run_toy_backward on the model worker, with every field of a toy request."""
    weights = req.weights.model_dump(exclude_none=True) if req.weights else None
    additive = req.additive.model_dump() if req.additive else None
    bound = partial(run, variant=req.variant, temperature=req.temperature, seed=req.seed,
                    straight_through=req.straight_through, d_keys=req.d_keys, d_values=req.d_values,
                    additive=additive, positions=req.positions, hidden_keys=req.hidden_keys, **more)
    return hub.run(bound, req.queries, req.keys, req.values, req.n_heads, weights, req.causal, gone=gone)


def _toy_body(result: dict[str, Any]) -> ToyResponse:
    tensors = {name: serialize.steps(result[name]) if result[name] is not None else None
               for name in ("weights", "additive")}
    soft = serialize.matrix(result["soft"]) if result["soft"] is not None else None
    return ToyResponse(**{**result, **tensors, "soft": soft, "steps": serialize.steps(result["steps"])})


ToyBackwardInput = Annotated[ToyBackwardRequest, Body(openapi_examples=openapi_examples(ToyBackwardRequest))]


@router.post(
    "/toy/backward",
    response_model=ToyBackwardResponse,
    summary="The toy's backward pass: every gradient, checked against torch.autograd in the same request",
    description=(
        "The /api/v1/toy request (same fields, rules and defaults: `{}` is the worked example) plus `upstream`, "
        "dL/d output (L x d_model; default all ones, the gradient of the sum of the outputs). The answer holds "
        "`forward` (the /api/v1/toy answer), `gradients` named after the steps and weights and computed by "
        "attnscope's own backward in float64, in reverse order: W_o (dW_o = Σ concatᵀ·upstream, dconcat = "
        "upstream·W_oᵀ), per head dV = Aᵀ·dctx_h and dA = dctx_h·Vᵀ (`softmax`), dS = A ⊙ (dA − rowsum(dA ⊙ "
        "A)) × scale (`scores`, with respect to the raw scores q·kᵀ), dQ = dS·K and dK = dSᵀ·Q (`q`, `k`), "
        "then W_q, W_k, W_v (dW = xᵀ·dProj, db = Σ dProj, dx = dProj·Wᵀ) and the inputs `queries`, `keys`, "
        "`values` (for self-attention `input` is their sum). Per-head gradients are [h][L][S], [h][L][d_keys] "
        "and so on; weights are in x out. `check` compares every gradient with torch.autograd run on the same "
        "forward in the same request (`max_abs_diff`, `max_rel_diff` relative to the largest gradient, `bound`: "
        "the most float64 rounding explains, 64 · n · ε; `reference`: \"torch.autograd float64\"). "
        "**Variants**: `additive` differentiates through the tanh into `additive_w_q`, `additive_w_k`, "
        "`additive_v` and into q, k; `hard` and `sample` pass no gradient to the scores (`flow` \"none\": "
        "scores, q, k, W_q, W_k, b_q, b_k are zeros; the values still get theirs); `gumbel` differentiates the "
        "Gumbel-softmax, and with `straight_through` (`flow` \"straight_through\") the forward uses the one-hot "
        "rows while the backward passes the soft weights' gradient. The temperature is inside the scale factor; "
        "RoPE's rotation is turned back (`q_rotated`, `k_rotated` hold the gradients before that); the "
        "sinusoidal table is added to the inputs, so the inputs' gradient passes through it; the mask (causal, "
        "hidden keys, ALiBi's bias) is a constant and hidden entries get zero gradient. Errors are those of "
        "/api/v1/toy (422 with `errors[0].type` one of its rules), and: "
        + documented_rules(BACKWARD_RULES)
        + "; a non-finite or too large upstream number is `finite_number` or `toy_magnitude` at its cell."
    ),
    responses={422: documented_error("A field is invalid or does not fit the others (the /toy rules, or "
                                     "`toy_upstream_shape`: upstream is not L x d_model); `errors[0]` names the "
                                     "field (`loc`), the rule (`type`) and its numbers (`ctx`).")},
)
def toy_backward(req: ToyBackwardInput, hub: Hub, gone: ClientLeft) -> Response:
    result = _run_toy(run_toy_backward, req, hub, gone, upstream=req.upstream)
    body = ToyBackwardResponse(
        forward=_toy_body(result["forward"]), gradients=serialize.tensors(result["gradients"]),
        check=result["check"], flow=result["flow"], note=result["note"],
        upstream=serialize.matrix(result["upstream"]), upstream_default=result["upstream_default"],
    )
    return serialize.json_response(body)
