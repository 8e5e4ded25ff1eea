"""Request and response models of POST /api/v1/attribution (gradient attributions beside attention) and of POST
/api/v1/attribution/continuation (each token of a continuation attributed to every token before it)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, PlainValidator, Tag, WithJsonSchema
from pydantic_core import PydanticCustomError

from model.analysis.attribution import COMPLETENESS_TOLERANCE, DEFAULT_STEPS, MAX_STEPS, MIN_STEPS, TINY_DIFFERENCE
from model.analysis.baselines import DEFAULT as DEFAULT_BASELINE
from model.analysis.baselines import KINDS as BASELINE_KINDS
from model.analysis.continuation import MAX_CONTINUATION

from .common import (
    MODEL_DOC,
    NON_BLANK,
    TEXT_DOC,
    StrictRequest,
    Text,
    TextRequest,
    TokenInfo,
    _check_text,
    examples,
)


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


def _check_baseline(value: object) -> str | dict[str, str]:
    """One of the baselines' names, or {"text": a non-blank text}, each with one error naming the rule (a plain
    union would list one error per member)."""
    if isinstance(value, str):
        if value in BASELINE_KINDS:
            return value
        raise PydanticCustomError("literal_error", "Input should be 'mean', 'pad', 'mask' or 'zeros', or an object "
                                  "{\"text\": ...}", {"expected": "'mean', 'pad', 'mask' or 'zeros'"})
    if isinstance(value, dict):
        if set(value) != {"text"}:
            raise PydanticCustomError("baseline_type", "must be {\"text\": a text} with no other field")
        text = value["text"]
        if not isinstance(text, str):
            raise PydanticCustomError("string_type", "Input should be a valid string (baseline.text)")
        return {"text": _check_text(text)}
    raise PydanticCustomError("baseline_type", "must be 'mean', 'pad', 'mask', 'zeros' or {\"text\": a text}")


BaselineField = Annotated[str | dict[str, str], PlainValidator(_check_baseline), WithJsonSchema({"anyOf": [
    {"type": "string", "enum": list(BASELINE_KINDS)},
    {"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "pattern": NON_BLANK}},
     "required": ["text"], "additionalProperties": False}]})]


BASELINE_DOC = (
    "Integrated gradients' baseline b (its word embeddings; position and token-type embeddings are added as at the "
    "input). `mean` (default): the mean of the word embedding table, non-zero and uninformative, where RMSNorm is "
    "not singular (a zero or all-zero pad embedding is, in Llama-family models). `pad`: the padding token's row "
    "(422 `baseline_unavailable` without one); `mask`: the mask token's ([MASK], <mask>; 422 without one); "
    "`zeros`: a zero word embedding; {\"text\": ...}: a text of as many tokens as `text` (template tokens "
    "included; else 422 `baseline_token_count`), its word embeddings token by token.")


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
                       "inputs measured; more where `completeness.ok` is false.")
    baseline: BaselineField = Field(DEFAULT_BASELINE, description=BASELINE_DOC)


class Completeness(BaseModel):
    sum: float = Field(description="The sum of the attributions over every token.")
    difference: float = Field(description="f(x) − f(baseline).")
    relative_gap: float | None = Field(
        description="|sum − difference| / |difference|; 0 when both are 0, null when only the difference is.")
    ok: bool = Field(description=f"Whether relative_gap ≤ {COMPLETENESS_TOLERANCE:.0%} and |difference| is at least "
                     f"{TINY_DIFFERENCE:g} × max(1, |f(x)|, |f(baseline)|); when false the ranking is unreliable: "
                     "`agreement` is all null and `warning` says what to change.")
    reason: Literal["gap", "difference_too_small"] | None = Field(
        description="Why ok is false: `gap` (the sum is over the tolerance from the difference) or "
        "`difference_too_small` (f(x) and f(baseline) too close for the check); null when ok.")


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
    kind: Literal["mean", "pad", "mask", "zeros", "text"] = Field(
        description="`mean`: the mean of the word embedding table at every position; `pad` or `mask`: that token's "
        "word embedding at every position; `zeros`: a zero word embedding; `text`: the baseline text's word "
        "embeddings. Position and token-type embeddings are kept.")
    token_id: int | None = Field(description="The padding or mask token's id for `pad` or `mask`; null otherwise.")
    token: str | None = Field(description="That token's string ([PAD], [MASK]); null otherwise.")
    text: str | None = Field(None, description="The baseline text for `text`; null otherwise.")
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
        "one-token input, or scores that are all equal; all null when `completeness.ok` is false (no ranking is "
        "claimed).")
    warning: str | None = Field(
        None, description="When `completeness.ok` is false: why the ranking is unreliable and what to change (more "
        f"steps, up to {MAX_STEPS}; another baseline). null otherwise.")


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


# ---- POST /api/v1/attribution/continuation ----

class GeneratedContinuation(StrictRequest):
    new_tokens: int = Field(ge=1, le=MAX_CONTINUATION, description="Generate this many tokens greedily (the most "
                            "probable each time; fewer when a token that ends text comes first), then attribute "
                            "them.")


class GivenContinuation(StrictRequest):
    ids: list[Annotated[int, Field(ge=0)]] = Field(
        min_length=1, max_length=MAX_CONTINUATION, description="The continuation's token ids, each below the "
        "model's vocabulary size (POST /api/v1/token gives a word's id).")


def _continuation_kind(value: object) -> str | None:
    """Which continuation a body is, by its field: one member's errors only (a plain union lists both members')."""
    if isinstance(value, dict):
        return "given" if "ids" in value else "generated" if "new_tokens" in value else None
    return "given" if isinstance(value, GivenContinuation) else "generated" if isinstance(
        value, GeneratedContinuation) else None


Continuation = Annotated[
    Annotated[GeneratedContinuation, Tag("generated")] | Annotated[GivenContinuation, Tag("given")],
    Discriminator(_continuation_kind, custom_error_type="continuation_type",
                  custom_error_message="must be {\"new_tokens\": n} or {\"ids\": [token ids]}")]


class ContinuationRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the", "continuation": {"new_tokens": 4}},
        {"text": "The cat sat on", "continuation": {"ids": [262, 13]}, "steps": 64, "baseline": "zeros"},
    ))

    model: str | None = Field(
        None, description="A model id from GET /api/v1/models whose `lm_head` is true; null: the first such "
        "model this server has.")
    continuation: Continuation = Field(
        description="{\"new_tokens\": n}: generate n tokens greedily first; {\"ids\": [...]}: these tokens. The "
        "text's tokens plus the continuation's fit the model's limit.")
    steps: int = Field(DEFAULT_STEPS, ge=MIN_STEPS, le=MAX_STEPS,
                       description=f"Integrated gradients' quadrature nodes, {MIN_STEPS} to {MAX_STEPS}.")
    baseline: Literal["mean", "zeros", "pad", "mask"] = Field(
        "mean", description="The baseline b of every earlier token, the continuation's included, as "
        "/attribution's (a baseline text has no continuation to match: not offered here).")


class ContinuationToken(BaseModel):
    index: int = Field(description="Its position in the whole sequence (the text's tokens come first).")
    id: int
    token: str = Field(description="The tokenizer's own token string, e.g. Ġworld.")
    display: str = Field(description="The tokenizer's decoding of this one id (\" world\").")


class ContinuationRowAnswer(BaseModel):
    token: ContinuationToken
    output: float = Field(description="f_j(x): the token's log-probability given everything before it (nats).")
    baseline_output: float = Field(description="f_j(baseline).")
    scores: list[float] = Field(description="One attribution per earlier token, positions 0 .. index − 1 (the "
                                "text's tokens, then the continuation's before this one): `index` numbers.")
    completeness: Completeness
    warning: str | None = Field(description="When `completeness.ok` is false: why this row's ranking is "
                                "unreliable and what to change; null otherwise.")


class ContinuationResponse(BaseModel):
    model: str
    tokens: list[TokenInfo] = Field(description="The text's tokens (the columns before the continuation's).")
    generated: bool = Field(description="Whether the continuation was generated here (else it was given).")
    output_name: Literal["log_probability"] = Field(
        description="What each row explains: the token's log-probability (log softmax of the logits at the "
        "position before it), comparable from row to row where logits are not.")
    steps: int
    baseline: Literal["mean", "zeros", "pad", "mask"]
    baseline_token: int | None = Field(description="The padding or mask token's id for `pad` or `mask`.")
    continuation: list[ContinuationToken] = Field(description="The continuation's tokens, in order.")
    rows: list[ContinuationRowAnswer] = Field(
        description="Row j for continuation token j: integrated gradients of its log-probability over the "
        "len(tokens) + j tokens before it; a matrix continuation × earlier tokens, ragged (later columns do "
        "not exist for a row).")
