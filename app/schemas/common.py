"""What every router's schemas share: strict requests, the text and index fields, tokens, the steps' shapes,
OpenAPI examples and the documented error answers."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Generic, TypeVar, cast

from fastapi.openapi.models import Example
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from model.inputs import NON_BLANK, duplicates_problem, text_problem
from model.lab.toy import MAX_ABS as TOY_MAX_ABS


class StrictRequest(BaseModel):
    """Requests reject unknown fields and never coerce ("3", 3.0 and true are not ints)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# The text and index rules are model/inputs.py's, which the Python API checks with too: one rule, one message.
# NON_BLANK (blank means only whitespace, as str.isspace() has it) is the pattern the schema states.


def _check_text(value: str) -> str:
    problem = text_problem(value)
    if problem is not None:
        raise ValueError(problem)
    return value


def check_distinct(values: list[int]) -> list[int]:
    problem = duplicates_problem(values)
    if problem is not None:
        raise ValueError(problem)
    return values


def _check_magnitude(value: float) -> float:
    if abs(value) > TOY_MAX_ABS:  # the toy's own rule, under its own type (model/errors.py TOY_RULES)
        raise PydanticCustomError("toy_magnitude", f"must be at most {TOY_MAX_ABS:g} in magnitude; scale it down",
                                  {"max": TOY_MAX_ABS})
    return value


# The rules below are enforced by the validators and stated in the schema (json_schema_extra), so
# generated clients and fuzzers know them; the validators word the errors.
Text = Annotated[
    str,
    Field(json_schema_extra={"minLength": 1, "pattern": NON_BLANK}),
    AfterValidator(_check_text),
]


Index = Annotated[int, Field(json_schema_extra={"minimum": 0})]  # the upper end depends on the model


Indices = Annotated[
    list[Index], Field(min_length=1, json_schema_extra={"uniqueItems": True}), AfterValidator(check_distinct)
]


TEXT_DOC = "The sentence to analyse: at least one non-space character; the model's token limit applies."


MODEL_DOC = "A model id from /api/v1/models; null means the default. An unknown id is answered 404."


def examples(*bodies: dict[str, Any]) -> dict[str, Any]:
    """The examples of a request schema: shown by /docs, sent by "Try it out", posted by a test."""
    return {"examples": list(bodies)}


def openapi_examples(kind: type[BaseModel]) -> dict[str, Example]:
    """A request schema's examples as the request body's named examples (the /docs drop-down)."""
    extra = kind.model_config.get("json_schema_extra")
    bodies = extra.get("examples", []) if isinstance(extra, dict) else []
    return {
        f"example {i}": {"summary": json.dumps(body, ensure_ascii=False)[:100], "value": body}
        for i, body in enumerate(cast(list[dict[str, Any]], bodies), 1)
    }


ChosenLayers = Annotated[Indices | None, Field(
    description="Distinct layer indices, kept in the order given; null means all. Each must be below the model's "
    "n_layers.")]


ChosenHeads = Annotated[Indices | None, Field(
    description="Distinct head indices, kept in the order given; null means all. Each must be below the model's "
    "n_heads.")]


class TextRequest(StrictRequest):
    text: Text = Field(description=TEXT_DOC)
    text_pair: Text | None = Field(
        None, description="An optional second segment (segment 1), same rules as text; only for models with pairs."
    )
    model: str | None = Field(None, description=MODEL_DOC, examples=["minilm"])


FiniteNumber = Annotated[
    float,
    Field(allow_inf_nan=False, json_schema_extra={"minimum": -TOY_MAX_ABS, "maximum": TOY_MAX_ABS}),
    AfterValidator(_check_magnitude),
]


class TokenInfo(BaseModel):
    text: str = Field(description="The tokenizer's own token string, e.g. [CLS] or ##ing.")
    start: int | None = Field(description="Code-point offset into its segment's text; null for inserted tokens.")
    end: int | None
    special: bool = Field(description="True exactly for tokens the tokenizer inserted.")
    segment: int = Field(description="Token-type id: 0 for text, 1 for text_pair.")
    display: str = Field(
        description="What to show for the token: its text, except when `unknown`, where it is the source "
        "characters (its segment's text from start to end). A token whose text equals its source after the "
        "tokenizer's normalisation is known: \"Café\" displays \"cafe\"; \"注\" made [UNK] displays \"注\"."
    )
    unknown: bool = Field(
        description="True when the model does not know the source characters as written: [UNK], or any "
        "token whose text is not its source even after the tokenizer's normalisation (lowercasing and accent "
        "stripping for MiniLM) and without the ## continuation prefix. False for inserted tokens."
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


StepInput = TypeVar("StepInput", Matrix, QKV)


class Steps(BaseModel, Generic[StepInput]):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: StepInput
    project: QKV = Field(description="input W + b for each of q, k, v (N x d_model).")
    split: QKVHeads = Field(description="Each head's columns of q, k, v (h x N x d_head).")
    scores: Stack = Field(description="q k^T per head (h x N x N), before scaling.")
    scale: Stack = Field(description="scores x scale.")
    mask: list[list[list[float | None]]] = Field(description="After the additive mask; hidden entries are null.")
    softmax: Stack = Field(description="Rows sum to 1; a row with every key hidden is zeros.")
    weighted_sum: Stack = Field(description="softmax @ v per head (h x N x d_head).")
    concat: Matrix = Field(description="All heads side by side (N x d_model).")
    output: Matrix = Field(description="concat W_o + b_o, before the residual add and LayerNorm.")


class FieldError(BaseModel):
    loc: list[str]
    msg: str
    type: str
    ctx: dict[str, float | str] | None = Field(
        None, description="The rule's numbers and names, e.g. {\"values\": 3, \"keys\": 4} for toy_value_rows."
    )


class ErrorResponse(BaseModel):
    detail: str = Field(description="One sentence saying what to change.")
    errors: list[FieldError] | None = None


def documented_error(description: str) -> dict[str, Any]:
    """An error answer as a route's `responses` entry documents it in OpenAPI."""
    return {"model": ErrorResponse, "description": description}


# The answers every route with a JSON body can give, documented once for the routers' `responses`.
NOT_UTF8 = documented_error("The body could not be read as UTF-8.")


BODY_TOO_LARGE = documented_error(
    "The request body is over the server's limit (ATTNSCOPE_MAX_BODY_BYTES, default 2 MB).")


UNKNOWN_MODEL = documented_error("Unknown model; `detail` names the models that exist.")


TOO_LARGE = documented_error("Too many tokens, a body over the size limit, or a JSON answer over the cap.")


ANALYSES_BUSY = documented_error(
    "As many long analyses (patching, attribution) wait for the model as the server queues (`errors[0].type` "
    "`analyses_busy`, `ctx` {waiting, retry_after}); retry after the Retry-After header's seconds.")


INVALID_FIELD = documented_error("A field is invalid; `detail` says which and what to send instead, `errors` gives "
                                 "each field's path (`loc`) and the rule broken (`type`).")


def documented_rules(rules: dict[str, tuple[tuple[str, ...], str]]) -> str:
    """A rule table (type -> (its ctx keys, what breaks it)) as a route description lists it."""
    return "; ".join(f"`{rule}` {{{', '.join(keys)}}}: {what}" for rule, (keys, what) in rules.items())


def digits(value: object) -> object:
    """Query integers as plain digits only: "3.0", " 3", "+3", "3_0" and "1e6" are refused, as 3.0 is in a
    JSON body; 8 digits reach /cost's seq_len of 10^7 (each field's own bounds are checked after)."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]{1,8}", value):
        raise PydanticCustomError("int_parsing", "Input should be a valid integer: whole digits, like 64")
    return value


QueryInt = Annotated[int, BeforeValidator(digits)]
