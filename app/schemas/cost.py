"""The query and the answer of GET /api/v1/cost (model/cost.py holds the formulas)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from model.cost import (
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

from . import MODEL_DOC


def _digits(value: object) -> object:
    """Query integers as plain digits only ("3.0", " 3", "+3", "3_0" and "1e6" are refused); 8 digits
    reach seq_len's 10^7."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]{1,8}", value):
        raise PydanticCustomError("int_parsing", "Input should be a valid integer: whole digits, like 64")
    return value


def _true_or_false(value: object) -> object:
    """A query boolean as the schema states it: true or false (not 1, yes, on or off)."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise PydanticCustomError("bool_parsing", "Input should be a valid boolean: true or false")
    return value


# the bounds before the validator: otherwise they reach the JSON Schema as "ge"/"le", not as minimum/maximum
Width = Annotated[int, Field(ge=1, le=MAX_D_MODEL), BeforeValidator(_digits)]
Layers = Annotated[int, Field(ge=1, le=MAX_LAYERS), BeforeValidator(_digits)]
Length = Annotated[int, Field(ge=1, le=MAX_SEQ_LEN), BeforeValidator(_digits)]
Batch = Annotated[int, Field(ge=1, le=MAX_BATCH), BeforeValidator(_digits)]


class CostQuery(BaseModel):
    """The query of GET /api/v1/cost; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(
        None, description=MODEL_DOC.replace("null means the default", "when given, its d_model, n_heads and "
                                            "n_layers are used (leave those out)"),
        examples=["minilm"],
    )
    d_model: Width | None = Field(
        None, description=f"E, the model width; default {DEFAULT_D_MODEL} (with model: the model's).")
    n_heads: Width | None = Field(
        None, description=f"H, which must divide d_model (else 422 cost_heads_divide); default {DEFAULT_HEADS}.")
    n_layers: Layers | None = Field(
        None, description="L, the layers the totals are for; default 1 (with model: the model's).")
    seq_len: Length | None = Field(
        None, description=f"S, tokens per sequence; default {DEFAULT_SEQ_LEN} (with model: its max_tokens).")
    batch: Batch = Field(1, description="B, sequences at once.")
    bytes_per_number: Annotated[int, BeforeValidator(_digits)] = Field(
        4, alias="bytes", json_schema_extra={"enum": list(BYTE_SIZES)},
        description="b, bytes per number: 1 (int8), 2 (fp16 or bf16), 4 (fp32) or 8 (fp64); else 422 cost_bytes.",
    )
    bias: Annotated[bool, BeforeValidator(_true_or_false)] = Field(
        True, description="true or false: count the four bias vectors of W_q, W_k, W_v and W_o.")


class Formula(BaseModel):
    value: int = Field(description="Exact, at most 2^53 - 1.")
    formula: str = Field(description="In the symbols E, H, D, S, B, b, e.g. \"B·H·S²·b\".")
    filled: str = Field(description="The same with the numbers in, e.g. \"1·64·100000²·2\"; read as arithmetic "
                        "(· multiplies, ² is a square) it equals value.")


class CostSizes(BaseModel):
    model: str | None = Field(description="The model whose sizes these are, or null.")
    d_model: int
    n_heads: int
    d_head: int = Field(description="D = d_model / n_heads.")
    n_layers: int
    seq_len: int
    batch: int
    bytes: int
    bias: bool


class LayerCost(BaseModel):
    """One attention layer."""

    parameters: Formula = Field(description="Numbers in W_q, W_k, W_v, W_o (and their biases): 4·E² + 4·E, or 4·E².")
    parameter_bytes: Formula = Field(description="The parameters at b bytes each.")
    attention_matrix_bytes: Formula = Field(description="The attention weights A: B·H·S² numbers, times b.")
    cache_bytes: Formula = Field(description="What the backward keeps from the forward: x, Q, K, V, ctx "
                                 "(B·S·E each) and A (B·H·S²): (5·B·S·E + B·H·S²)·b.")
    flops: Formula = Field(description="The forward's matrix products, 2 FLOPs per multiply-add: projections "
                           "8·B·S·E², scores and weighted sum 4·B·S²·E (biases, scale, softmax not counted).")
    flash_attention_bytes: Formula = Field(
        description="FlashAttention's working set beyond Q, K, V: the output O (B·H·S·D numbers) and the softmax "
        "statistics m and ℓ of every query row (2·B·H·S), times b; linear in S (the S x S matrix is never stored, "
        "its fixed-size on-chip tiles are not counted).")


class ModelCost(BaseModel):
    """Every quantity of LayerCost times n_layers (all layers' matrices and caches kept, as in training)."""

    parameters: int
    parameter_bytes: int
    attention_matrix_bytes: int
    cache_bytes: int
    flops: int
    flash_attention_bytes: int


class CostCurve(BaseModel):
    """One layer's memory against S, the other sizes as asked: S = 1, 2, 5, 10, 20, 50, … up to 10·S (at most
    10^7) and S itself, ending before a value would pass 2^53 - 1."""

    seq_len: list[int]
    attention_matrix_bytes: list[int] = Field(description="B·H·S²·b at each S.")
    flash_attention_bytes: list[int] = Field(description="(B·H·S·D + 2·B·H·S)·b at each S.")


class CostResponse(BaseModel):
    sizes: CostSizes
    per_layer: LayerCost
    total: ModelCost
    curve: CostCurve
    max_exact: int = Field(MAX_EXACT, description="2^53 - 1: every number of the answer is at most this.")
