"""Request and response models of the REST API (see the API docs at /docs)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator


class StrictRequest(BaseModel):
    """Requests reject unknown fields and never coerce ("3", 3.0 and true are not ints)."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _check_text(value: str | None) -> str | None:
    if value is None:
        return None
    if not value.strip():
        raise ValueError("must not be blank; send at least one non-space character")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError("contains a lone surrogate (U+D800-U+DFFF); send valid Unicode text")
    return value


def _check_distinct(values: list[int] | None) -> list[int] | None:
    if values is not None and len(set(values)) != len(values):
        raise ValueError("has duplicates; list each index once")
    return values


class TextRequest(StrictRequest):
    text: str = Field(description="The sentence to analyse; blank after trimming is rejected.")
    text_pair: str | None = Field(None, description="An optional second segment (segment 1).")
    model: str | None = Field(None, description="A model id from /api/v1/models; null means the default.")

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _check_text(v)

    @field_validator("text_pair")
    @classmethod
    def _pair(cls, v: str | None) -> str | None:
        return _check_text(v)


class AttentionRequest(TextRequest):
    layers: list[int] | None = Field(
        None, min_length=1, description="Distinct layer indices, kept in the order given; null means all."
    )
    heads: list[int] | None = Field(
        None, min_length=1, description="Distinct head indices, kept in the order given; null means all."
    )

    @field_validator("layers")
    @classmethod
    def _layers(cls, v: list[int] | None) -> list[int] | None:
        return _check_distinct(v)

    @field_validator("heads")
    @classmethod
    def _heads(cls, v: list[int] | None) -> list[int] | None:
        return _check_distinct(v)


class TraceRequest(TextRequest):
    layer: int = Field(description="The layer to trace (0-based).")
    head: int | None = Field(None, description="One head to trace; null means all heads.")


FiniteNumber = Annotated[float, Field(allow_inf_nan=False)]
ToyRow = Annotated[list[FiniteNumber], Field(min_length=1, max_length=64)]
ToyMatrix = Annotated[list[ToyRow], Field(min_length=1, max_length=64, description="Rows of numbers, at most 64x64.")]


class ToyWeights(StrictRequest):
    """Each d_model x d_model, acting as X W (in x out); a missing one is the identity."""

    q: ToyMatrix | None = None
    k: ToyMatrix | None = None
    v: ToyMatrix | None = None
    o: ToyMatrix | None = None


class ToyRequest(StrictRequest):
    queries: ToyMatrix | None = Field(None, description="L x d_model inputs of the queries.")
    keys: ToyMatrix | None = Field(None, description="S x d_model inputs of the keys; default: queries.")
    values: ToyMatrix | None = Field(None, description="S x d_model inputs of the values; default: keys.")
    n_heads: int | None = Field(None, ge=1, le=64, description="Must divide d_model; default 2.")
    weights: ToyWeights | None = None
    causal: bool = Field(False, description="Hide key j from query i when j > i.")


class SummaryRequest(AttentionRequest):
    size: int = Field(64, ge=1, le=64, description="Largest side of a pooled map (at most 64).")


class Encoding(str, Enum):
    """`json`: the JSON body. `u16`: a binary body of uint16 fixed-point weights (layout in the description)."""

    json = "json"
    u16 = "u16"


class ModelInfo(BaseModel):
    id: str
    name: str
    architecture: str
    n_layers: int
    n_heads: int
    d_model: int
    d_head: int
    max_tokens: int
    causal: bool
    pairs: bool
    default: bool


class ModelsResponse(BaseModel):
    models: list[ModelInfo]


class TokenInfo(BaseModel):
    text: str = Field(description="The tokenizer's own token string, e.g. [CLS] or ##ing.")
    start: int | None = Field(description="Code-point offset into its segment's text; null for inserted tokens.")
    end: int | None
    special: bool = Field(description="True exactly for tokens the tokenizer inserted.")
    segment: int = Field(description="Token-type id: 0 for text, 1 for text_pair.")


class AttentionResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    attention: list[list[list[list[float]]]] = Field(
        description="Axis order (layer, head, query, key); attention[i][j] is the map of layers[i], heads[j]."
    )


Matrix = list[list[float]]
Stack = list[list[list[float]]]


class QKV(BaseModel):
    q: Matrix
    k: Matrix
    v: Matrix


class QKVHeads(BaseModel):
    q: Stack
    k: Stack
    v: Stack


class TraceSteps(BaseModel):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: Matrix = Field(description="N x d_model: the hidden state entering the layer's attention.")
    project: QKV = Field(description="input W + b for each of q, k, v (N x d_model).")
    split: QKVHeads = Field(description="Each head's columns of q, k, v (h x N x d_head).")
    scores: Stack = Field(description="q k^T per head (h x N x N), before scaling.")
    scale: Stack = Field(description="scores x scale.")
    mask: list[list[list[float | None]]] = Field(description="After the additive mask; hidden entries are null.")
    softmax: Stack = Field(description="Rows sum to 1; a row with every key hidden is zeros.")
    weighted_sum: Stack = Field(description="softmax @ v per head (h x N x d_head).")
    concat: Matrix = Field(description="All heads side by side (N x d_model).")
    output: Matrix = Field(description="concat W_o + b_o, before the residual add and LayerNorm.")


class TraceResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layer: int
    d_model: int
    n_heads: int
    d_head: int
    heads: list[int]
    scale: float
    steps: TraceSteps


class ToySteps(TraceSteps):
    input: QKV = Field(description="The three inputs before projection: q (L x d_model), k and v (S x d_model).")


class ToyResponse(BaseModel):
    d_model: int
    n_heads: int
    d_head: int
    scale: float
    steps: ToySteps


class SummaryResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    size: int = Field(description="M, the side of each pooled map: min(N, requested size).")
    bins: list[tuple[int, int]] = Field(description="Token range [start, end) covered by each pooled row and column.")
    attention: list[list[list[list[float]]]] = Field(
        description="Display summary, not attention weights: each cell is the largest weight in its block, so "
        "no strong weight vanishes, and rows no longer sum to 1. Axis order (layer, head, row, column)."
    )


class Jobs(BaseModel):
    queued: int = Field(description="Model jobs waiting or running now.")
    dropped: int = Field(description="Queued jobs dropped because their client disconnected first.")


class Health(BaseModel):
    status: str
    jobs: Jobs


class FieldError(BaseModel):
    loc: list[str]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: str = Field(description="One sentence saying what to change.")
    errors: list[FieldError] | None = None
