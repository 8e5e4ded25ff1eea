"""Request and response models of the REST API (see the API docs at /docs)."""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Annotated, Any, Generic, Literal, TypeVar, cast

from fastapi.openapi.models import Example
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from model.positions import MAX_D_MODEL as POSITIONS_MAX_D_MODEL
from model.positions import MAX_HEADS as POSITIONS_MAX_HEADS
from model.positions import MAX_LENGTH as POSITIONS_MAX_LENGTH
from model.toy import MAX_ABS as TOY_MAX_ABS
from model.toy import MAX_SIDE as TOY_MAX_SIDE
from model.variants import MAX_SEED as TOY_MAX_SEED
from model.variants import MIN_TEMPERATURE as TOY_MIN_TEMPERATURE


class StrictRequest(BaseModel):
    """Requests reject unknown fields and never coerce ("3", 3.0 and true are not ints)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# Blank means only whitespace, as Python's str.isspace() has it; the class lists those characters
# explicitly so that every regex engine (JSON Schema's ECMA 262, Python's re, pydantic's Rust regex)
# reads the pattern alike. The server checks text with this same pattern.
NON_BLANK = r"[^\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NON_BLANK = re.compile(NON_BLANK)


def _check_text(value: str) -> str:
    if not _NON_BLANK.search(value):
        raise ValueError("must not be blank; send at least one non-space character")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        raise ValueError("contains a lone surrogate (U+D800-U+DFFF); send valid Unicode text")
    return value


def _check_distinct(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise ValueError("has duplicates; list each index once")
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
    list[Index], Field(min_length=1, json_schema_extra={"uniqueItems": True}), AfterValidator(_check_distinct)
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


class AttentionRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "layers": [2], "heads": [5]},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "model": "minilm", "layers": [0, 5]},
        {"text": "The cat sat on the mat because it was tired.", "layers": [2, 3],
         "edit": {"layer": 2, "heads": [5], "temperature": 3}},
    ))

    layers: ChosenLayers = None
    heads: ChosenHeads = None
    edit: AttentionEdit | None = Field(
        None, description="A what-if edit of one layer's heads; every later layer is recomputed on the edited "
        "hidden state, and the answer says `edited: true`. Null: the model as it is."
    )


class TraceRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "layer": 2, "head": 5},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "layer": 0, "head": None},
    ))

    layer: Index = Field(description="The layer to trace (0-based), below the model's n_layers.")
    head: Index | None = Field(None, description="One head to trace, below the model's n_heads; null means all.")


FiniteNumber = Annotated[
    float,
    Field(allow_inf_nan=False, json_schema_extra={"minimum": -TOY_MAX_ABS, "maximum": TOY_MAX_ABS}),
    AfterValidator(_check_magnitude),
]
ToyRow = Annotated[list[FiniteNumber], Field(min_length=1, max_length=TOY_MAX_SIDE)]
ToyMatrix = Annotated[
    list[ToyRow],
    Field(min_length=1, max_length=TOY_MAX_SIDE,
          description=f"Rows of finite numbers, |x| <= {TOY_MAX_ABS:g}, at most {TOY_MAX_SIDE}x{TOY_MAX_SIDE}; "
          "every row as long as the first."),
]


class ToyWeights(StrictRequest):
    """Each d_model x d_model, acting as X W (in x out); a missing one is the identity."""

    q: ToyMatrix | None = None
    k: ToyMatrix | None = None
    v: ToyMatrix | None = None
    o: ToyMatrix | None = None


class ToyAdditive(StrictRequest):
    """Bahdanau parameters per head: scores_ij = v_h^T tanh(q_i W_q[h] + k_j W_k[h]) on the split q and k."""

    w_q: list[ToyMatrix] = Field(max_length=TOY_MAX_SIDE, description="n_heads x d_keys x d_attn; n_heads x d_attn "
                                 f"at most {TOY_MAX_SIDE}.")
    w_k: list[ToyMatrix] = Field(max_length=TOY_MAX_SIDE, description="n_heads x d_keys x d_attn.")
    v: ToyMatrix = Field(description="n_heads x d_attn.")


def _check_temperature(value: float) -> float:
    if value < TOY_MIN_TEMPERATURE:  # the toy's own rule, under its own type (model/errors.py TOY_RULES)
        raise PydanticCustomError("toy_temperature", f"must be at least {TOY_MIN_TEMPERATURE:g}; raise it",
                                  {"temperature": value, "min": TOY_MIN_TEMPERATURE})
    return value


Temperature = Annotated[
    float,
    Field(gt=0, le=TOY_MAX_ABS, allow_inf_nan=False, json_schema_extra={"minimum": TOY_MIN_TEMPERATURE}),
    AfterValidator(_check_temperature),
]
ToyVariant = Literal["scaled_dot", "dot", "additive", "hard", "sample", "gumbel"]
ToyPositions = Literal["none", "sinusoidal", "rope", "alibi"]
HiddenKeys = Annotated[
    list[Index], Field(max_length=TOY_MAX_SIDE, json_schema_extra={"uniqueItems": True}),
    AfterValidator(_check_distinct),
]


class ToyRequest(StrictRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"queries": [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1]], "n_heads": 2, "causal": True,
         "weights": {"o": [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]}},
        {"queries": [[1, 0, 1]], "keys": [[1, 0, 1], [0, 1, 0]], "values": [[1, 2, 3], [4, 5, 6]], "n_heads": 3},
    ))

    queries: ToyMatrix | None = Field(None, description="L x d_model inputs of the queries.")
    keys: ToyMatrix | None = Field(None, description="S x d_model inputs of the keys; default: queries.")
    values: ToyMatrix | None = Field(None, description="S x d_model inputs of the values; default: keys.")
    n_heads: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Must divide d_model; default 2.")
    weights: ToyWeights | None = None
    causal: bool = Field(False, description="Hide key j from query i when j > i.")
    variant: ToyVariant = Field("scaled_dot", description="How scores become weights (see the route).")
    temperature: Temperature = Field(1.0, description="Divides the scaled scores before the weights (every variant).")
    seed: int = Field(0, ge=0, le=TOY_MAX_SEED, description="The draw of sample and gumbel, and of seeded defaults.")
    straight_through: bool = Field(False, description="gumbel only: the forward weights are one-hot.")
    d_keys: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Per-head width of q and k; d_model/n_heads.")
    d_values: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Per-head width of v; d_model/n_heads.")
    additive: ToyAdditive | None = Field(None, description="variant additive only; default seeded, d_attn = d_keys.")
    positions: ToyPositions = Field("none", description="none, sinusoidal (X + P), rope (q, k rotated), alibi (bias).")
    hidden_keys: HiddenKeys = Field(default_factory=list, description="Distinct key indices hidden from every query.")


class SummaryRequest(AttentionRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "size": 4},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "heads": [0, 11], "size": 64},
    ))

    size: int = Field(64, ge=1, le=64, description="Largest side of a pooled map (at most 64).")


class Encoding(StrEnum):
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
    causal: bool = Field(description="Each token attends only to itself and the tokens before it (GPT-2).")
    pairs: bool = Field(description="Takes a second segment (text_pair).")
    lm_head: bool = Field(description="Has a language-model head: POST /api/v1/lens works for it.")
    local: bool = Field(description="Loaded from a checkpoint directory named by --model / ATTNSCOPE_MODEL_PATHS.")
    path: str | None = Field(None, description="The checkpoint directory; only when ATTNSCOPE_SHOW_MODEL_PATHS=true.")
    default: bool


class ModelsResponse(BaseModel):
    models: list[ModelInfo]


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


EDITED_DOC = "True when the request carried an `edit`: these are the maps of the edited model."


class AttentionResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    edited: bool = Field(False, description=EDITED_DOC)
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


class TraceSteps(Steps[Matrix]):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: Matrix = Field(description="N x d_model: the hidden state entering the layer's attention.")


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


class ToySteps(Steps[QKV]):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: QKV = Field(description="The three inputs before projection: q (L x d_model), k and v (S x d_model).")


class ToyWeightsUsed(BaseModel):
    q: Matrix
    k: Matrix
    v: Matrix
    o: Matrix


class ToyAdditiveUsed(BaseModel):
    w_q: Stack
    w_k: Stack
    v: Matrix


class ToyResponse(BaseModel):
    d_model: int
    n_heads: int
    d_head: int = Field(description="d_keys, the width of each head's q and k.")
    d_keys: int
    d_values: int
    scale: float = Field(description="The factor of the scale step: 1/sqrt(d_keys) (scaled_dot, hard, sample, "
                         "gumbel) or 1 (dot, additive), divided by the temperature.")
    variant: str
    temperature: float
    seed: int
    straight_through: bool
    positions: str
    hidden_keys: list[int]
    weights: ToyWeightsUsed = Field(description="The weights used (in x out), defaults included.")
    additive: ToyAdditiveUsed | None = Field(None, description="The additive parameters used; null otherwise.")
    soft: Stack | None = Field(None, description="Hard variants (hard, sample, straight-through gumbel): the "
                               "softmax (h x L x S) the one-hot weights came from; null otherwise.")
    steps: ToySteps


class SummaryResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    size: int = Field(description="M, the side of each pooled map: min(N, requested size).")
    bins: list[tuple[int, int]] = Field(description="Token range [start, end) covered by each pooled row and column.")
    edited: bool = Field(False, description=EDITED_DOC)
    attention: list[list[list[list[float]]]] = Field(
        description="Display summary, not attention weights: each cell is the largest weight in its block, so "
        "no strong weight vanishes, and rows no longer sum to 1. Axis order (layer, head, row, column)."
    )


class Jobs(BaseModel):
    queued: int = Field(description="Model jobs waiting or running now.")
    dropped: int = Field(description="Queued jobs dropped because their client disconnected first.")


class Health(BaseModel):
    status: str
    version: str = Field(description="attnscope's version (exports carry it).")
    jobs: Jobs


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
INVALID_FIELD = documented_error("A field is invalid; `detail` says which and what to send instead, `errors` gives "
                                 "each field's path (`loc`) and the rule broken (`type`).")


def documented_rules(rules: dict[str, tuple[tuple[str, ...], str]]) -> str:
    """A rule table (type -> (its ctx keys, what breaks it)) as a route description lists it."""
    return "; ".join(f"`{rule}` {{{', '.join(keys)}}}: {what}" for rule, (keys, what) in rules.items())


class PositionKind(StrEnum):
    sinusoidal = "sinusoidal"
    rope = "rope"
    alibi = "alibi"
    learned = "learned"


def _digits(value: object) -> object:
    """Query integers as plain digits only: "3.0", " 3", "+3" and "3_0" are refused, as 3.0 is in a JSON body."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]{1,7}", value):
        raise PydanticCustomError("int_parsing", "Input should be a valid integer: whole digits, like 64")
    return value


QueryInt = Annotated[int, BeforeValidator(_digits)]


class PositionsQuery(BaseModel):
    """The query of GET /api/v1/positions; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    kind: PositionKind = Field(description="Which encoding: sinusoidal, rope, alibi or learned (the model's own).")
    length: QueryInt = Field(64, ge=1, le=POSITIONS_MAX_LENGTH, description="N, the number of positions (0..N-1).")
    # the bounds before the validator: otherwise they reach the JSON Schema as "ge"/"le", not as minimum/maximum
    d_model: Annotated[int, Field(ge=1, le=POSITIONS_MAX_D_MODEL), BeforeValidator(_digits)] | None = Field(
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


# The edit of /attention is defined beside the analysis routes' models, which build on the models above.
from .analysis import AttentionEdit  # noqa: E402

AttentionRequest.model_rebuild()
SummaryRequest.model_rebuild()
