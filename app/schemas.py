"""Request and response models of the REST API (see the API docs at /docs)."""

from __future__ import annotations

from enum import Enum

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


class Encoding(str, Enum):
    json = "json"


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


class Health(BaseModel):
    status: str


class FieldError(BaseModel):
    loc: list[str]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: str = Field(description="One sentence saying what to change.")
    errors: list[FieldError] | None = None
