"""Request and response models of POST /api/v1/attribution: gradient attributions beside attention."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from model.analysis.attribution import DEFAULT_STEPS, MAX_STEPS, MIN_STEPS

from .common import MODEL_DOC, NON_BLANK, TEXT_DOC, StrictRequest, Text, TokenInfo, _check_text, examples


def _check_target(value: object) -> int | str:
    """A token id (an integer of at least 0) or a non-blank text, each with one error that names the rule (a plain
    union would list one error per member)."""
    if isinstance(value, str):
        return _check_text(value)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to 0", {"ge": 0})
        return value
    if isinstance(value, float):
        raise PydanticCustomError("int_type", "Input should be a valid integer; a token id is written without a "
                                  "fraction (464, not 464.0)")
    raise PydanticCustomError("target_type", "must be a token id (an integer of at least 0) or a non-blank text")


Target = Annotated[int | str, PlainValidator(_check_target), WithJsonSchema({"anyOf": [
    {"type": "integer", "minimum": 0}, {"type": "string", "minLength": 1, "pattern": NON_BLANK}]})]


class AttributionRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "target": "A dog lay on a rug."},
        {"text": "A cat is a small animal.", "target": "Kittens are young cats.", "model": "minilm",
         "method": "gradient_x_input"},
    ))

    text: Text = Field(description=TEXT_DOC)
    model: str | None = Field(None, description=MODEL_DOC, examples=["minilm"])
    target: Target = Field(
        description="What f is. A model with an LM head (`lm_head` in GET /api/v1/models): a token id, 0 to the "
        "vocabulary's size − 1; f is its next-token logit at the last position. Any other model (an encoder such "
        "as minilm): a second text; f is the cosine similarity of the text's mean-pooled last hidden state to this "
        "text's.")
    method: Literal["gradient_x_input", "integrated_gradients"] = Field(
        "integrated_gradients", description="`gradient_x_input`: (∂f/∂e_i)·e_i per token. `integrated_gradients`: "
        "(e_i − b_i)·∫₀¹ ∂f/∂e_i(b + α(e − b)) dα, Gauss–Legendre quadrature with `steps` nodes.")
    steps: int = Field(DEFAULT_STEPS, ge=MIN_STEPS, le=MAX_STEPS,
                       description=f"Integrated gradients' quadrature nodes, {MIN_STEPS} to {MAX_STEPS} (ignored by "
                       f"gradient_x_input); the default {DEFAULT_STEPS} kept completeness within 0.05 % on the "
                       "inputs measured.")


class Completeness(BaseModel):
    sum: float = Field(description="The sum of the attributions over every token.")
    difference: float = Field(description="f(x) − f(baseline).")
    relative_error: float | None = Field(
        description="|sum − difference| / |difference|; 0 when both are 0, null when only the difference is.")


class Agreement(BaseModel):
    attention: float | None = Field(description="Spearman's ρ of `compared.attention` with |scores|.")
    rollout: float | None = Field(description="Spearman's ρ of `compared.rollout` with |scores|.")
    contributions: float | None = Field(description="Spearman's ρ of `compared.contributions` with |scores|.")


class Compared(BaseModel):
    attention: list[float] = Field(description="The last layer's attention weights, mean over heads, of `rows`.")
    rollout: list[float] = Field(description="Attention rollout (residual 0.5) up to the last layer, of `rows`.")
    contributions: list[float] = Field(
        description="The last layer's ||Σ_h a_hij f_h(x_j)|| (the layer_sum of /contributions), of `rows`.")


class Baseline(BaseModel):
    kind: Literal["pad", "zeros"] = Field(
        description="`pad`: the word embedding of the tokenizer's padding token at every position; `zeros`: a zero "
        "word embedding (a tokenizer without one, such as GPT-2's). Position and token-type embeddings are kept.")
    token_id: int | None = Field(description="The padding token's id for `pad`; null for `zeros`.")
    token: str | None = Field(description="The padding token's string ([PAD]) for `pad`; null for `zeros`.")
    output: float = Field(description="f(baseline).")


class AttributionResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    method: str
    steps: int | None = Field(description="The quadrature's nodes for integrated gradients; null otherwise.")
    output_name: Literal["logit", "cosine"] = Field(
        description="What f is: `logit` (the target id's next-token logit at the last position) or `cosine` (the "
        "pooled embedding's cosine similarity to the target text's).")
    output: float = Field(description="f(x), the value explained.")
    target: int | str = Field(description="The target as sent.")
    scores: list[float] = Field(description="One attribution per token, signed (the method's).")
    baseline: Baseline
    completeness: Completeness | None = Field(
        description="Integrated gradients' completeness check (the sum of the attributions equals f(x) − "
        "f(baseline) up to the quadrature's error); null for gradient_x_input.")
    rows: Literal["last", "mean"] = Field(
        description="The attention rows the compared scores read: `last`, the last token's row (an LM-head model's "
        "f reads that position); `mean`, the mean over every token's row (an encoder's f reads the mean of every "
        "position).")
    compared: Compared = Field(description="One score per token (key) by attention, rollout and contributions.")
    agreement: Agreement = Field(
        description="Spearman's rank correlation ρ of each compared score with the absolute value of `scores` "
        "(integrated gradients by default): how a token matters, whatever its sign. null where ρ is undefined: a "
        "one-token input, or scores that are all equal.")


class TokenRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "cat", "model": "minilm"},
        {"text": " Paris"},
    ))

    text: Text = Field(description="The text of one token as the model's tokenizer reads it (a leading space is part "
                       "of a GPT-2 token).")
    model: str | None = Field(None, description=MODEL_DOC, examples=["minilm"])


class TokenResponse(BaseModel):
    model: str
    id: int = Field(description="The vocabulary id: what POST /api/v1/attribution takes as `target` for a model "
                    "with an LM head.")
    token: str = Field(description="The tokenizer's own token string, e.g. ĠParis.")
    display: str = Field(description="The tokenizer's decoding of this one id, e.g. \" Paris\".")
