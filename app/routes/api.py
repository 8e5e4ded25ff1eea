"""REST API v1: models, attention maps, step-by-step traces and the toy example."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Query, Request, Response

from model.pretrained import PretrainedEncoder
from model.registry import ModelSpec
from model.tokenizer import Encoded
from model.toy import run_toy

from .. import serialize
from ..errors import ApiError
from ..hub import ModelHub
from ..schemas import (
    AttentionRequest,
    AttentionResponse,
    Encoding,
    ErrorResponse,
    ModelsResponse,
    SummaryRequest,
    SummaryResponse,
    ToyRequest,
    ToyResponse,
    TraceRequest,
    TraceResponse,
)
from ..settings import Settings


def _hub(request: Request) -> ModelHub:
    return request.app.state.hub


def _settings(request: Request) -> Settings:
    return request.app.state.settings


def _gone(request: Request) -> Callable[[], bool]:
    """Asks the event loop, from a worker thread, whether the client has disconnected."""
    return lambda: anyio.from_thread.run(request.is_disconnected)


Hub = Annotated[ModelHub, Depends(_hub)]
ClientLeft = Annotated[Callable[[], bool], Depends(_gone)]
SettingsDep = Annotated[Settings, Depends(_settings)]


def _error(description: str) -> dict:
    return {"model": ErrorResponse, "description": description}


router = APIRouter(
    prefix="/api/v1",
    tags=["attention"],
    responses={
        400: _error("The body could not be read as UTF-8."),
        413: _error("The request body is over the server's limit (ATTNSCOPE_MAX_BODY_BYTES, default 2 MB)."),
        422: _error("A field is invalid; `detail` says which and what to send instead."),
    },
)


def check_indices(chosen: list[int] | None, count: int, name: str) -> list[int]:
    """None means all; otherwise every index must lie in 0..count-1."""
    if chosen is None:
        return list(range(count))
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise ApiError(422, f"{name} {bad} out of range; this model has {name} 0..{count - 1}.")
    return chosen


def check_json_cap(values: int, cap: int, what: str, advice: str) -> None:
    if values > cap:
        raise ApiError(413, f"The answer would hold {values} numbers ({what}), over the JSON cap of {cap}; {advice}.")


@router.get("/models", response_model=ModelsResponse, summary="The models this server can run")
def models(hub: Hub) -> ModelsResponse:
    return ModelsResponse(models=hub.infos())


ENCODING_DOC = (
    "`json` (default): the JSON body. `u16`: one binary body (application/octet-stream): the 4 bytes `ATN1`, "
    "a little-endian uint32 H, H bytes of UTF-8 JSON header (every field of the JSON answer except the matrices, "
    "plus `shape` [layers, heads, rows, columns], `dtype` \"uint16\" and `scale` 65535; padded with spaces so the "
    "data starts at a multiple of 8), then little-endian uint16 values in row-major (layer, head, query, key) "
    "order; weight = value / 65535, absolute error at most 7.7e-6. About 2 bytes a weight instead of ~20."
)
EncodingParam = Annotated[Encoding, Query(description=ENCODING_DOC)]
BINARY_ANSWER = {"content": {serialize.U16_MEDIA_TYPE: {"schema": {"type": "string", "format": "binary"}}}}
MAPS_ERRORS = {
    200: BINARY_ANSWER,
    404: _error("Unknown model; `detail` names the models that exist."),
    413: _error("Too many tokens, a body over the size limit, or a JSON answer over the cap."),
}


def _encode(hub: ModelHub, req: AttentionRequest) -> tuple[ModelSpec, PretrainedEncoder, Encoded, list[int], list[int]]:
    """Model, tokens and checked layer/head indices of an attention request (4xx on any problem)."""
    spec, model = hub.get(req.model)
    if req.text_pair is not None and not spec.pairs:
        raise ApiError(422, f"Model {spec.id!r} takes one text; remove text_pair.")
    layers = check_indices(req.layers, model.cfg.n_layers, "layers")
    heads = check_indices(req.heads, model.cfg.n_heads, "heads")
    return spec, model, model.tokenizer.encode(req.text, req.text_pair), layers, heads


def _check_json_size(encoding: Encoding, cap: int, layers: list[int], heads: list[int], side: int) -> None:
    """Refuse a JSON answer over the cap before any forward runs (compact answers have no cap)."""
    if encoding is Encoding.json:
        check_json_cap(len(layers) * len(heads) * side * side, cap,
                       f"{len(layers)} layers x {len(heads)} heads x {side}x{side}",
                       "ask for fewer layers or heads, or for the compact encoding ?encoding=u16")


def _maps_answer(encoding: Encoding, response: type[AttentionResponse | SummaryResponse], fields: dict,
                 blocks: list) -> Response:
    if encoding is Encoding.u16:
        return serialize.u16_response({**fields, "tokens": [t.model_dump() for t in fields["tokens"]]}, blocks)
    body = response.model_construct(**fields, attention=serialize.maps_json(blocks))  # no re-validation of 10^6 floats
    return serialize.json_response(body)


@router.post(
    "/attention",
    response_model=AttentionResponse,
    summary="Attention maps of every chosen layer and head",
    description=(
        "Runs the model on `text` (and `text_pair`) and returns the attention weights with axis order "
        "(layer, head, query, key). Limits that depend on the model (its token limit, its layer and head "
        "ranges) and the JSON answer cap (layers x heads x N x N numbers, ATTNSCOPE_MAX_JSON_VALUES, default "
        "2,500,000) are checked here and answered with 413 or 422. Repeated requests for the same model and "
        "text are answered from a cache."
    ),
    responses=MAPS_ERRORS,
)
def attention(req: AttentionRequest, hub: Hub, settings: SettingsDep, gone: ClientLeft,
              encoding: EncodingParam = Encoding.json) -> Response:
    spec, _, encoded, layers, heads = _encode(hub, req)
    _check_json_size(encoding, settings.max_json_values, layers, heads, len(encoded))
    maps = hub.attention(spec.id, encoded, req.text, req.text_pair, gone)
    fields = {"model": spec.id, "tokens": serialize.tokens(encoded.tokens), "layers": layers, "heads": heads}
    return _maps_answer(encoding, AttentionResponse, fields, maps.select(layers, heads))


@router.post(
    "/attention/summary",
    response_model=SummaryResponse,
    summary="Small max-pooled summaries of the attention maps, for overviews",
    description=(
        "Like /attention, but each map is max-pooled to at most `size` x `size` (default and limit 64): each "
        "cell holds the largest weight of its block of tokens (`bins` gives each block's token range), so no "
        "strong weight vanishes. These are display summaries, not weights: rows no longer sum to 1. Inputs "
        "of at most `size` tokens come back unpooled."
    ),
    responses=MAPS_ERRORS,
)
def attention_summary(req: SummaryRequest, hub: Hub, settings: SettingsDep, gone: ClientLeft,
                      encoding: EncodingParam = Encoding.json) -> Response:
    spec, _, encoded, layers, heads = _encode(hub, req)
    _check_json_size(encoding, settings.max_json_values, layers, heads, min(len(encoded), req.size))
    maps = hub.attention(spec.id, encoded, req.text, req.text_pair, gone)
    blocks, bins = maps.pooled(layers, heads, req.size)
    fields = {"model": spec.id, "tokens": serialize.tokens(encoded.tokens), "layers": layers, "heads": heads,
              "size": blocks[0].shape[-1], "bins": bins}
    return _maps_answer(encoding, SummaryResponse, fields, blocks)


@router.post(
    "/trace",
    response_model=TraceResponse,
    summary="Every step of one layer's attention, with the real numbers",
    description=(
        "Traces layer `layer` of the model on `text` (and `text_pair`): the input, the projections, the split "
        "into heads, scores, scale, mask, softmax, weighted sum, concat and the output projection (before the "
        "residual add). Per-head steps hold the chosen head, or all heads when `head` is null."
    ),
    responses={
        404: _error("Unknown model; `detail` names the models that exist."),
        413: _error("Too many tokens, a body over the size limit, or an answer over the JSON cap."),
    },
)
def trace(req: TraceRequest, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    spec, model = hub.get(req.model)
    if req.text_pair is not None and not spec.pairs:
        raise ApiError(422, f"Model {spec.id!r} takes one text; remove text_pair.")
    cfg = model.cfg
    (layer,) = check_indices([req.layer], cfg.n_layers, "layers")
    heads = check_indices(None if req.head is None else [req.head], cfg.n_heads, "heads")
    encoded = model.tokenizer.encode(req.text, req.text_pair)
    n, h = len(encoded), len(heads)
    check_json_cap(
        6 * n * cfg.d_model + 4 * h * n * cfg.d_head + 4 * h * n * n, settings.max_json_values,
        f"{h} heads at {n} tokens", "trace one head at a time or send a shorter text",
    )
    steps = hub.run(model.trace_layer, encoded, layer, heads, gone=gone)
    body = TraceResponse(
        model=spec.id, tokens=serialize.tokens(encoded.tokens), layer=layer,
        d_model=cfg.d_model, n_heads=cfg.n_heads, d_head=cfg.d_head, heads=heads,
        scale=model.attention_scale(layer), steps=serialize.steps(steps),
    )
    return serialize.json_response(body)


@router.post(
    "/toy",
    response_model=ToyResponse,
    summary="Multi-head attention on small matrices you choose (default: the worked example)",
    description=(
        "`{}` is the worked example: d_model 4, 2 heads, identity weights, zero biases. Keys default to queries "
        "and values to keys; weights act as X W (in x out) and a missing one is the identity. Matrices are at "
        "most 64x64 with finite numbers of magnitude at most 1e6; n_heads must divide d_model."
    ),
)
def toy(req: ToyRequest) -> Response:
    weights = req.weights.model_dump(exclude_none=True) if req.weights else None
    try:
        result = run_toy(req.queries, req.keys, req.values, req.n_heads, weights, req.causal)
    except ValueError as exc:
        raise ApiError(422, f"{exc}.") from exc
    return serialize.json_response(ToyResponse(**{**result, "steps": serialize.steps(result["steps"])}))
