"""REST API v1: /api/v1/models and /api/v1/attention."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response

from .. import serialize
from ..errors import ApiError
from ..hub import ModelHub
from ..schemas import AttentionRequest, AttentionResponse, Encoding, ErrorResponse, ModelsResponse
from ..settings import Settings


def _hub(request: Request) -> ModelHub:
    return request.app.state.hub


def _settings(request: Request) -> Settings:
    return request.app.state.settings


Hub = Annotated[ModelHub, Depends(_hub)]
SettingsDep = Annotated[Settings, Depends(_settings)]


def _error(description: str) -> dict:
    return {"model": ErrorResponse, "description": description}


router = APIRouter(
    prefix="/api/v1",
    tags=["attention"],
    responses={422: _error("A field is invalid; `detail` says which and what to send instead.")},
)


def check_indices(chosen: list[int] | None, count: int, name: str) -> list[int]:
    """None means all; otherwise every index must lie in 0..count-1."""
    if chosen is None:
        return list(range(count))
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise ApiError(422, f"{name} {bad} out of range; this model has {name} 0..{count - 1}.")
    return chosen


@router.get("/models", response_model=ModelsResponse, summary="The models this server can run")
def models(hub: Hub) -> ModelsResponse:
    return ModelsResponse(models=hub.infos())


@router.post(
    "/attention",
    response_model=AttentionResponse,
    summary="Attention maps of every chosen layer and head",
    description=(
        "Runs the model on `text` (and `text_pair`) and returns the attention weights with axis order "
        "(layer, head, query, key). Limits that depend on the model (its token limit, its layer and head "
        "ranges) and the JSON answer cap (layers x heads x N x N values, set by ATTNSCOPE_MAX_JSON_VALUES) "
        "are checked here and answered with 413 or 422."
    ),
    responses={
        404: _error("Unknown model; `detail` names the models that exist."),
        413: _error("Too many tokens, a body over the size limit, or an answer over the JSON cap."),
    },
)
def attention(
    req: AttentionRequest,
    hub: Hub,
    settings: SettingsDep,
    encoding: Annotated[Encoding, Query(description="Answer encoding; `json` is the body described here.")] = Encoding.json,
) -> Response:
    spec, model = hub.get(req.model)
    if req.text_pair is not None and not spec.pairs:
        raise ApiError(422, f"Model {spec.id!r} takes one text; remove text_pair.")
    layers = check_indices(req.layers, model.cfg.n_layers, "layers")
    heads = check_indices(req.heads, model.cfg.n_heads, "heads")
    encoded = model.tokenizer.encode(req.text, req.text_pair)
    n = len(encoded)
    values = len(layers) * len(heads) * n * n
    if values > settings.max_json_values:
        raise ApiError(
            413,
            f"The answer would hold {values} weights ({len(layers)} layers x {len(heads)} heads x {n}x{n}), "
            f"over the JSON cap of {settings.max_json_values}; ask for fewer layers or heads.",
        )
    with hub.lock:
        maps = model.attention_maps(encoded, layers, heads)  # (L, H, N, N)
    body = AttentionResponse.model_construct(
        model=spec.id,
        tokens=serialize.tokens(encoded.tokens),
        layers=layers,
        heads=heads,
        attention=serialize.matrix(maps),
    )
    return serialize.json_response(body)
