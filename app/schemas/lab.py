"""/positions and /cost: the queries and answers of the course's tables and formulas (app/routes/lab.py)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from model.lab.cost import (
    BYTE_SIZES,
    DEFAULT_D_MODEL,
    DEFAULT_HEADS,
    DEFAULT_SEQ_LEN,
    MAX_BATCH,
    MAX_D_MODEL,
    MAX_EXACT,
    MAX_LAYERS,
    MAX_SEQ_LEN,
)
from model.nets.positions import MAX_D_MODEL as POSITIONS_MAX_D_MODEL
from model.nets.positions import MAX_HEADS as POSITIONS_MAX_HEADS
from model.nets.positions import MAX_LENGTH as POSITIONS_MAX_LENGTH

from .common import MODEL_DOC, QueryInt, digits


class PositionKind(StrEnum):
    sinusoidal = "sinusoidal"
    rope = "rope"
    alibi = "alibi"
    learned = "learned"


class PositionsQuery(BaseModel):
    """The query of GET /api/v1/positions; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    kind: PositionKind = Field(description="Which encoding: sinusoidal, rope, alibi or learned (the model's own).")
    length: QueryInt = Field(64, ge=1, le=POSITIONS_MAX_LENGTH, description="N, the number of positions (0..N-1).")
    # the bounds before the validator: otherwise they reach the JSON Schema as "ge"/"le", not as minimum/maximum
    d_model: Annotated[int, Field(ge=1, le=POSITIONS_MAX_D_MODEL), BeforeValidator(digits)] | None = Field(
        None,
        description="D, the width of the table; even for sinusoidal and rope. Default 64, and for learned the "
        "model's d_model (any other value is refused). Echoed, unused, for alibi.",
    )
    n_heads: QueryInt = Field(8, ge=1, le=POSITIONS_MAX_HEADS, description="H, ALiBi's heads; used by alibi only.")
    model: str | None = Field(None, description=MODEL_DOC + " Its table is read for learned.", examples=["minilm"])


class PositionsResponse(BaseModel):
    kind: PositionKind
    length: int
    d_model: int
    model: str | None = Field(None, description="learned: the model whose table this is; else null.")
    n_heads: int | None = Field(None, description="alibi: H; else null.")
    matrix: list[list[float]] | None = Field(
        description="N x D (position, dimension). sinusoidal: P[p, 2i] = sin(p / 10000^(2i/D)), P[p, 2i+1] = "
        "cos(same). learned: the rows the model adds at positions 0..N-1 (RoBERTa's start at row padding_idx + 1), "
        "as wide as its table (ELECTRA: embedding_size). rope: each pair of dimensions of the "
        "vector (1, 0, 1, 0, ...) rotated by its angle, i.e. [p][2i] = cos(angles[p][i]), [p][2i+1] = "
        "sin(angles[p][i]). alibi: null (see bias)."
    )
    angles: list[list[float]] | None = Field(
        None, description="rope: N x D/2, angles[p][i] = p * 10000^(-2i/D) in radians; else null."
    )
    bias: list[list[list[float]]] | None = Field(
        None, description="alibi: H x N x N (head, query, key), bias[h][i][j] = -slopes[h] * |i - j|; else null."
    )
    slopes: list[float] | None = Field(None, description="alibi: H slopes, slopes[h] = 2^(-8(h+1)/H); else null.")


def _true_or_false(value: object) -> object:
    """A query boolean as the schema states it: true or false (not 1, yes, on or off)."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise PydanticCustomError("bool_parsing", "Input should be a valid boolean: true or false")
    return value


# the bounds before the validator: otherwise they reach the JSON Schema as "ge"/"le", not as minimum/maximum
Width = Annotated[int, Field(ge=1, le=MAX_D_MODEL), BeforeValidator(digits)]


Layers = Annotated[int, Field(ge=1, le=MAX_LAYERS), BeforeValidator(digits)]


Length = Annotated[int, Field(ge=1, le=MAX_SEQ_LEN), BeforeValidator(digits)]


Batch = Annotated[int, Field(ge=1, le=MAX_BATCH), BeforeValidator(digits)]


class CostQuery(BaseModel):
    """The query of GET /api/v1/cost; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        None, description=MODEL_DOC.replace("null means the default", "when given, its d_model, n_heads, "
                                            "n_kv_heads, n_layers and head width are used (leave those out)"),
        examples=["minilm"],
    )
    d_model: Width | None = Field(
        None, description=f"E, the model width; default {DEFAULT_D_MODEL} (with model: the model's).")
    n_heads: Width | None = Field(
        None, description=f"H, which must divide d_model (else 422 cost_heads_divide); default {DEFAULT_HEADS}.")
    n_kv_heads: Width | None = Field(
        None, description="G, the key-value heads, each shared by H / G query heads (G < H: grouped-query "
        "attention, G = 1: multi-query); must divide n_heads (else 422 cost_kv_heads_divide); default n_heads "
        "(with model: the model's).")
    n_layers: Layers | None = Field(
        None, description="L, the layers the totals are for; default 1 (with model: the model's).")
    seq_len: Length | None = Field(
        None, description=f"S, tokens per sequence; default {DEFAULT_SEQ_LEN} (with model: its max_tokens).")
    batch: Batch = Field(1, description="B, sequences at once.")
    bytes_per_number: Annotated[int, BeforeValidator(digits)] = Field(
        4, alias="bytes", json_schema_extra={"enum": list(BYTE_SIZES)},
        description="b, bytes per number: 1 (int8), 2 (fp16 or bf16), 4 (fp32) or 8 (fp64); else 422 cost_bytes.",
    )
    bias: Annotated[bool, BeforeValidator(_true_or_false)] = Field(
        True, description="true or false: count the four bias vectors of W_q, W_k, W_v and W_o.")


class Formula(BaseModel):
    value: int = Field(description="Exact, at most 2^53 - 1.")
    formula: str = Field(description="In the symbols E, H, G, D, S, B, b, e.g. \"B·H·S²·b\".")
    filled: str = Field(description="The same with the numbers in, e.g. \"1·64·100000²·2\"; read as arithmetic "
                        "(· multiplies, ² is a square) it equals value.")


class CostSizes(BaseModel):
    model: str | None = Field(description="The model whose sizes these are, or null.")
    d_model: int
    n_heads: int
    n_kv_heads: int = Field(description="G, the key-value heads (n_heads unless grouped-query attention).")
    d_head: int = Field(description="D = d_model / n_heads, or a model's own head width (e.g. Qwen3's head_dim).")
    n_layers: int
    seq_len: int
    batch: int
    bytes: int
    bias: bool


class LayerCost(BaseModel):
    """One attention layer."""

    parameters: Formula = Field(description="Numbers in W_q, W_o (E x E) and W_k, W_v (E x G·D) and their biases: "
                                "2·E² + 2·E·G·D + 2·E + 2·G·D, written 4·E² + 4·E when G = H (without biases "
                                "2·E² + 2·E·G·D, or 4·E²).")
    parameter_bytes: Formula = Field(description="The parameters at b bytes each.")
    attention_matrix_bytes: Formula = Field(description="The attention weights A: B·H·S² numbers, times b.")
    cache_bytes: Formula = Field(description="What the backward keeps from the forward: x, Q, ctx (B·S·E each), "
                                 "K, V (B·S·G·D each) and A (B·H·S²): (3·B·S·E + 2·B·S·G·D + B·H·S²)·b, written "
                                 "(5·B·S·E + B·H·S²)·b when G = H.")
    flops: Formula = Field(description="The forward's matrix products, 2 FLOPs per multiply-add: projections "
                           "4·B·S·E² + 4·B·S·E·G·D (8·B·S·E² when G = H), scores and weighted sum 4·B·S²·E "
                           "(biases, scale, softmax not counted).")
    flash_attention_bytes: Formula = Field(
        description="FlashAttention's working set beyond Q, K, V: the output O (B·H·S·D numbers) and the softmax "
        "statistics m and ℓ of every query row (2·B·H·S), times b; linear in S (the S x S matrix is never stored, "
        "its fixed-size on-chip tiles are not counted).")
    kv_cache_bytes: Formula = Field(
        description="The KV cache: the keys and values of every token so far, which a decoder keeps to generate "
        "the next token: 2·B·S·G·D·b (K and V, B·S·G·D numbers each); multi-head attention (G = H) keeps H/G "
        "times as much.")


class ModelCost(BaseModel):
    """Every quantity of LayerCost times n_layers (all layers' matrices and caches kept, as in training)."""

    parameters: int
    parameter_bytes: int
    attention_matrix_bytes: int
    cache_bytes: int
    flops: int
    flash_attention_bytes: int
    kv_cache_bytes: int


class CostCurve(BaseModel):
    """One layer's memory against S, the other sizes as asked: S = 1, 2, 5, 10, 20, 50, … up to 10·S (at most
    10^7) and S itself, ending before a value would pass 2^53 - 1."""

    seq_len: list[int]
    attention_matrix_bytes: list[int] = Field(description="B·H·S²·b at each S.")
    flash_attention_bytes: list[int] = Field(description="(B·H·S·D + 2·B·H·S)·b at each S.")
    kv_cache_bytes: list[int] = Field(description="2·B·S·G·D·b at each S.")


class CostResponse(BaseModel):
    sizes: CostSizes
    per_layer: LayerCost
    total: ModelCost
    curve: CostCurve
    max_exact: int = Field(MAX_EXACT, description="2^53 - 1: every number of the answer is at most this.")
