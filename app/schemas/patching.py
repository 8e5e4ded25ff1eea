"""Request and response models of POST /api/v1/patch: activation patching."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from .common import MODEL_DOC, StrictRequest, Text, TokenInfo, examples


def _check_answer_token(value: object) -> int | str:
    """A token id (an integer of at least 0) or a text that should be one token, with one error naming the rule."""
    if isinstance(value, str):  # blank is allowed: " " may be a token of its own (GPT-2's space)
        if not value:
            raise PydanticCustomError("string_too_short", "must not be empty; send the text of one token",
                                      {"min_length": 1})
        if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
            raise PydanticCustomError("lone_surrogate", "contains a lone surrogate (U+D800-U+DFFF); send valid Unicode "
                                      "text")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to 0", {"ge": 0})
        return value
    if isinstance(value, float):  # JSON Schema counts 328.0 as an integer; a strict request does not
        raise PydanticCustomError("int_type", "Input should be a valid integer; a token id is written without a "
                                  "fraction (328, not 328.0)")
    raise PydanticCustomError("answer_token_type", "must be a token id (an integer of at least 0) or the text of one "
                              "token")


AnswerToken = Annotated[int | str, PlainValidator(_check_answer_token), WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1}]})]


class PatchRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the mat.", "target": "heads"},
        {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the rug.", "target": "residual",
         "model": "minilm"},
    ))

    clean: Text = Field(description="The text whose activations are copied; the model's token limit applies.")
    corrupted: Text = Field(description="The text they are copied into: the same token count as `clean`.")
    model: str | None = Field(None, description=MODEL_DOC, examples=["minilm"])
    target: Literal["heads", "residual"] = Field(
        "heads", description="`heads`: each head's output (its weighted sum before W_o) at every position, one "
        "(layer, head) at a time. `residual`: the residual stream entering each layer at one position.")
    answer: list[AnswerToken] | None = Field(
        None, min_length=2, max_length=2,
        description="[good, bad] for a model with an LM head (required there, refused for any other): the metric is "
        "logit[good] − logit[bad] at the last position. Each is a token id below the vocabulary's size, or a text "
        "that is exactly one token (GPT-2 spells a word after a space with the space: \" Paris\").")


class PatchMetric(BaseModel):
    clean: float = Field(description="The metric of the clean run (1 for the cosine similarity).")
    corrupted: float = Field(description="The metric of the corrupted run.")


class PatchAnswer(BaseModel):
    id: int
    token: str = Field(description="The tokenizer's own token string, e.g. Ġmat.")
    display: str = Field(description="The tokenizer's decoding of this one id (\" mat\").")


class PatchResponse(BaseModel):
    model: str
    target: Literal["heads", "residual"]
    metric_name: Literal["logit_difference", "cosine_similarity"] = Field(
        description="`logit_difference`: logit[good] − logit[bad] at the last position (a model with an LM head). "
        "`cosine_similarity`: of the mean-pooled last hidden state (mean over every token) to the clean text's.")
    metric: PatchMetric
    answer: list[PatchAnswer] | None = Field(description="The good and the bad token; null for the cosine similarity.")
    rows: Literal["layer"] = Field(description="What the grid's rows are: layers 0..L-1.")
    columns: Literal["head", "position"] = Field(
        description="What the grid's columns are: heads 0..H-1 (`heads`) or token positions 0..T-1 (`residual`).")
    grid: list[list[float]] = Field(
        description="[layer][head or position]: (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)); 1 = the clean "
        "metric restored, 0 = unchanged (values outside 0..1 happen).")
    patched: list[list[float]] = Field(description="[layer][head or position]: the metric m itself after each patch.")
    clean_tokens: list[TokenInfo]
    corrupted_tokens: list[TokenInfo]

