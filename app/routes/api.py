"""REST API v1: models, attention maps and step-by-step traces of the real models."""

from __future__ import annotations

from typing import Annotated, Any, cast

from fastapi import APIRouter, Query, Response

from model.analysis import work
from model.analysis.sizes import attention_numbers, block_numbers, pooled_side, trace_numbers
from model.maps import pool_bins
from model.steps import BLOCK_STEPS

from .. import serialize
from ..deps import AttentionInput, ClientLeft, Hub, Resolved, SettingsDep, SummaryInput, TraceInput
from ..errors import refuse_over_cap
from ..hub import ModelHub
from ..schemas.api import (
    AttentionResponse,
    Encoding,
    ModelsResponse,
    SummaryResponse,
    TraceEncoding,
    TraceResponse,
)
from ..schemas.common import (
    BODY_TOO_LARGE,
    INVALID_FIELD,
    NOT_UTF8,
    TOO_LARGE,
    UNKNOWN_MODEL,
)

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
TRACE_ENCODING_DOC = (
    "`json` (default): the JSON body. `f32`: one binary body (application/octet-stream) framed as the maps' `u16` "
    "answer: the 4 bytes `ATN1`, a little-endian uint32 H, H bytes of UTF-8 JSON header (every field of the JSON "
    "answer except `steps`, plus `dtype` \"float32\" and `arrays`: one {`step`, `key`, `shape`} per array in body "
    "order, the steps in order and a step's q, k, v in order, `key` null for a step that is one array, and for a "
    "model with RoPE the answer's `rotated` q and k as step \"rotated\" right after `split`; padded with "
    "spaces so the data starts at a multiple of 8), then each array's little-endian float32 values in row-major "
    "order, one after the other. The same float32 numbers as the JSON answer, exactly; a hidden entry (null in "
    "JSON) is -inf. 4 bytes a number instead of about 20, and no cap on the number of values."
)
TraceEncodingParam = Annotated[TraceEncoding, Query(description=TRACE_ENCODING_DOC)]
BINARY_ANSWER = {"content": {serialize.BINARY_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}}
MODEL_RULES = (
    " Rules that depend on the model, which the request schema cannot state (the model's sizes are in GET "
    "/api/v1/models): `model` is an id listed there, else 404 (`errors[0].type` `unknown_model`); the text "
    "(and pair) make at most the model's `max_tokens` tokens, else 413 (`too_many_tokens`), never truncated; "
    "the model work (model/analysis/work.py: its GFLOP from the model's size and the tokens) at most the "
    "server's ATTNSCOPE_WORK_BUDGET, else 422 (`work_too_large`; ctx: gflop, budget_gflop and largest, the "
    "most tokens that fit), checked before any model work; "
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
    200: BINARY_ANSWER,
    404: UNKNOWN_MODEL,
    413: TOO_LARGE,
}


def _refuse_json_over_cap(encoding: Encoding, cap: int, r: Resolved[Any], side: int) -> None:
    """Refuse a JSON answer over the cap before any forward runs (compact answers have no cap)."""
    if encoding is Encoding.json:
        refuse_over_cap(attention_numbers(len(r.layers), len(r.heads), side), cap,
                        f"{len(r.layers)} layers x {len(r.heads)} heads x {side}x{side}",
                        "ask for fewer layers or heads, or for the compact encoding ?encoding=u16")


def _refuse_over_budget(r: Resolved[Any], budget_gflop: float) -> None:
    """work_too_large for maps whose forward is over the budget, before it runs."""
    cfg = r.model.cfg
    work.check_tokens(lambda n: work.attention(cfg, n), len(r.encoded), budget_gflop, "the attention maps",
                      cfg.max_positions)


def _fields(r: Resolved[Any]) -> dict[str, Any]:
    return {"model": r.spec.id, "tokens": r.tokens, "layers": r.layers, "heads": r.heads, "edited": r.edit is not None}


def _maps_answer(encoding: Encoding, response: type[AttentionResponse | SummaryResponse], fields: dict[str, Any],
                 r: Resolved[Any], hub: ModelHub, pooled_to: int | None = None) -> Response:
    """The chosen maps as they come out of the forward, layer by layer, in the encoding asked for."""
    compact = encoding is Encoding.u16
    blocks = hub.attention_blocks(r.spec.id, r.encoded, r.req.text, r.req.text_pair, r.layers, r.heads, compact,
                                  r.edit, pooled_to)
    if compact:
        side = min(len(r.encoded), pooled_to or len(r.encoded))
        header = {**fields, "tokens": [t.model_dump() for t in fields["tokens"]]}
        return serialize.u16_response(header, [len(r.layers), len(r.heads), side, side], blocks)
    return serialize.maps_json_response(response, fields, blocks)


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
    _refuse_over_budget(r, settings.work_budget)
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
    _refuse_over_budget(r, settings.work_budget)
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
        "holds 6·N·D + 4·h·N·Dh + 4·h·N² numbers for N tokens and h heads, and with `block` true the rest of the "
        "layer's block in the model's order (`block`: the residual sums, the norms and the MLP) about 7·N·D + "
        "2·N·d_ff more (4·N·d_ff for a gated MLP); a JSON answer over the JSON cap: 413 "
        "(`?encoding=f32` has no cap). The layers after `layer` are not run. A model with RoPE: `steps.split` "
        "holds q and k before the rotation, `rotated` after it (2·h·N·Dh numbers more), and `rope` its settings."
        + MODEL_RULES.format(indices="`layer` below the model's `n_layers`, `head` below its `n_heads`")
    ),
    responses=TRACE_ERRORS,
)
def trace(r: TraceInput, hub: Hub, settings: SettingsDep, gone: ClientLeft,
          encoding: TraceEncodingParam = TraceEncoding.json) -> Response:
    cfg, (layer,), n = r.model.cfg, r.layers, len(r.encoded)
    if encoding is TraceEncoding.json:
        numbers = trace_numbers(n, cfg.d_model, cfg.d_head, len(r.heads), rotated=cfg.positions == "rope")
        refuse_over_cap(numbers + (block_numbers(cfg, layer, n) if r.req.block else 0), settings.max_json_values,
                        f"{len(r.heads)} heads at {n} tokens",
                        "trace one head at a time, leave the block out (\"block\": false), send a shorter text or "
                        "ask for ?encoding=f32" if r.req.block else
                        "trace one head at a time, send a shorter text or ask for ?encoding=f32")
    flops = work.check_tokens(lambda t: work.trace(cfg, t, layer), n, settings.work_budget,
                              f"tracing layer {layer}", cfg.max_positions)
    steps = hub.run(r.model.trace_layer, r.encoded, layer, r.heads, r.req.block, gone=gone, flops=flops)
    # the block's steps, T x width each, in the order computed
    arrays: dict[str, Any] = {name: steps.pop(name) for name in list(steps) if name in (*BLOCK_STEPS, "mlp_alone")}
    fields = {"model": r.spec.id, "tokens": r.tokens, "layer": layer, "d_model": cfg.d_model, "n_heads": cfg.n_heads,
              "d_head": cfg.d_head, "heads": r.heads, "scale": r.model.attention_scale(layer)}
    if cfg.kv_heads < cfg.n_heads:  # grouped-query attention: the key-value head serving each query head
        fields["kv_head"] = [h // (cfg.n_heads // cfg.kv_heads) for h in r.heads]
    if cfg.attention_softcap is not None:  # Gemma 2: the scale step's scores are soft-capped
        fields["softcap"] = cfg.attention_softcap
    frequencies = r.model.rope_frequencies
    if frequencies is not None:  # RoPE: its settings; `split` is before the rotation, `rotated` after it
        fields["rope"] = serialize.rope(cfg.rope_theta, cfg.rope_scaling, frequencies)
    parts = r.model.block_parts(layer) if r.req.block else None
    if encoding is TraceEncoding.f32:
        header = {**fields, "tokens": [t.model_dump() for t in r.tokens]}
        if parts is not None:  # its arrays travel as step "block", one key each
            header["block"] = serialize.block(parts, arrays, with_arrays=False)
            steps["block"] = arrays
        return serialize.f32_trace_response(header, steps)
    rotated = steps.get("rotated")
    body = TraceResponse(**fields, steps=serialize.steps({k: v for k, v in steps.items() if k != "rotated"}),
                         block=None if parts is None else serialize.block(parts, arrays),
                         rotated=None if rotated is None else serialize.steps(cast(dict, rotated)))
    return serialize.json_response(body, leave_out=tuple(k for k in ("kv_head", "softcap", "rope", "rotated", "block")
                                                         if getattr(body, k) is None))
