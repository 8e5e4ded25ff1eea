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


Target = Literal["heads", "residual", "head_position", "pattern", "mlp"]
TARGET_DOC = (
    "What one patch copies from the clean run. `heads`: one head's output (its weighted sum before W_o) at every "
    "position, a grid [layer][head]. `head_position`: one head's output at one position, [layer][head][position]. "
    "`pattern`: one head's attention weights (every query's row), with the corrupted run's values and everything "
    "after recomputed, [layer][head]. `mlp`: one layer's MLP output at one position, [layer][position]. "
    "`residual`: the residual stream entering one layer at one position, [layer][position].")
Axis = Literal["layer", "head", "position"]


class PatchRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the mat.", "target": "heads"},
        {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the rug.", "target": "residual",
         "model": "minilm"},
        {"clean": "The cat sat on the mat.", "corrupted": "The dog sat on the mat.", "target": "head_position"},
    ))

    clean: Text = Field(description="The text whose activations are copied; the model's token limit applies.")
    corrupted: Text = Field(description="The text they are copied into: the same token count as `clean`.")
    model: str | None = Field(None, description=MODEL_DOC, examples=["minilm"])
    target: Target = Field("heads", description=TARGET_DOC)
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
    target: Target
    metric_name: Literal["logit_difference", "cosine_similarity"] = Field(
        description="`logit_difference`: logit[good] − logit[bad] at the last position (a model with an LM head). "
        "`cosine_similarity`: of the mean-pooled last hidden state (mean over every token) to the clean text's.")
    metric: PatchMetric
    answer: list[PatchAnswer] | None = Field(description="The good and the bad token; null for the cosine similarity.")
    axes: list[Axis] = Field(description="The grid's axes, outermost first: [layer, head] (heads, pattern), [layer, "
                             "position] (residual, mlp) or [layer, head, position] (head_position).")
    rows: Literal["layer"] = Field(description="What the grid's rows are: layers 0..L-1.")
    columns: Literal["head", "position"] = Field(
        description="What the grid's second axis is: heads 0..H-1 (heads, pattern, head_position) or token positions "
        "0..T-1 (residual, mlp); head_position's third axis is the position.")
    n_heads: int = Field(description="Query heads per layer (H).")
    n_kv_heads: int = Field(description="Key-value heads per layer (G): fewer than n_heads under grouped-query "
                            "attention, where key-value head g serves query heads g·H/G … (g + 1)·H/G − 1.")
    normalised: bool = Field(
        description="Whether `grid` holds the normalised cells: false when |clean − corrupted| is below `min_gap`, "
        "5 % of the metric's scale, where the ratio would magnify the metric's wobble into colours (then `grid` is "
        "null; `patched` is always there).")
    gap: float = Field(description="m(clean) − m(corrupted), what a patch can restore.")
    min_gap: float = Field(
        description="The smallest |gap| that is normalised: 0.05 · max(|m(clean)|, |m(corrupted)|, and for the logit "
        "difference the larger standard deviation of the two runs' logits at the last position).")
    grid: list[list[float]] | list[list[list[float]]] | None = Field(
        description="Cells along `axes`: (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)); 1 = the clean "
        "metric restored, 0 = unchanged (values outside 0..1 happen). Null when `normalised` is false.")
    patched: list[list[float]] | list[list[list[float]]] = Field(
        description="Cells along `axes`: the metric m itself after each patch.")
    clean_tokens: list[TokenInfo]
    corrupted_tokens: list[TokenInfo]
