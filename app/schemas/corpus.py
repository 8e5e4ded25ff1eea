"""/api/v1/corpus: the queries and answers of the corpus index (app/routes/corpus.py)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from .common import digits

MAX_K = 100  # texts in one answer
MAX_INDEX = 65535  # the schema's bound on layer and head; the corpus's own range is checked by the route
MAX_PATTERN = 200  # characters of a token regular expression
DEFAULT_K = 20

# the bounds before the validator: otherwise they reach the JSON Schema as "ge"/"le", not as minimum/maximum
Index = Annotated[int, Field(ge=0, le=MAX_INDEX), BeforeValidator(digits)]
TextCount = Annotated[int, Field(ge=1, le=MAX_K), BeforeValidator(digits)]
# a metric's name: checked against the open corpus's metrics by the route (422 unknown_metric)
Metric = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_]*$")]
TokenPattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN)]


def _true_or_false(value: object) -> object:
    """A query boolean as the schema states it: true or false (not 1, yes, on or off)."""
    if isinstance(value, str) and value not in ("true", "false"):
        raise PydanticCustomError("bool_parsing", "Input should be a valid boolean: true or false")
    return value


class TopQuery(BaseModel):
    """The query of GET /api/v1/corpus/top; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    layer: Index = Field(description="The head's layer, 0..n_layers-1 of the corpus (GET /api/v1/corpus).")
    head: Index = Field(description="The head, 0..n_heads-1 of the corpus.")
    by: Metric = Field(description="The metric the texts are ranked by: one of GET /api/v1/corpus's `metrics`.",
                       examples=["to_previous"])
    k: TextCount = Field(DEFAULT_K, description=f"How many texts, 1..{MAX_K}.")
    lowest: Annotated[bool, BeforeValidator(_true_or_false)] = Field(
        False, description="true: the texts with the lowest values; false (the default): the highest.")


class PatternQuery(BaseModel):
    """The query of GET /api/v1/corpus/pattern; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    layer: Index = Field(description="The head's layer, 0..n_layers-1 of the corpus (GET /api/v1/corpus).")
    head: Index = Field(description="The head, 0..n_heads-1 of the corpus.")
    query: TokenPattern = Field(description="An RE2 regular expression (DuckDB's dialect: no lookaround, no "
                                "backreferences) the query token's readable text must match (searched, not anchored: "
                                "^ and $ anchor it).", examples=["^(he|she|it)$"])
    key: TokenPattern = Field(description="An RE2 regular expression the key token's readable text must match.",
                              examples=["^[a-z]+$"])
    k: TextCount = Field(DEFAULT_K, description=f"How many texts, 1..{MAX_K}.")


class HeadsQuery(BaseModel):
    """The query of GET /api/v1/corpus/heads; unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")

    x: Metric = Field(description="The metric of the x axis: one of GET /api/v1/corpus's `metrics`.",
                      examples=["entropy"])
    y: Metric = Field(description="The metric of the y axis.", examples=["to_previous"])


class CorpusInfo(BaseModel):
    model: str = Field(description="The model the index was built with (its id or checkpoint name).")
    n_layers: int
    n_heads: int
    texts: int = Field(description="Texts indexed.")
    skipped: int = Field(description="Lines of the corpus left out: empty, or over the model's token limit.")
    metrics: list[str] = Field(description="The metrics a query may rank by (`by`, `x`, `y`): those that can differ "
                               "from 0 on the index's model (no to_cls / to_sep where it inserts no [CLS] / [SEP], no "
                               "to_next for a causal model).")


class CorpusPair(BaseModel):
    query: int = Field(description="The query token's position in the text's tokens.")
    key: int = Field(description="The key token's position.")
    query_token: str
    key_token: str
    weight: float = Field(description="The head's attention weight from the query to the key.")


class CorpusText(BaseModel):
    text_id: int = Field(description="The text's line in the corpus file, from 0.")
    text: str
    tokens: list[str] = Field(description="The model's tokens of the text, in readable form.")
    value: float | None = Field(description="The metric's value for this head on this text (the pattern query: the "
                                "matching pair's weight); null where the metric is not defined for the text.")
    pairs: list[CorpusPair] = Field(description="The head's strongest query -> key pairs on this text.")


class CorpusTopResponse(BaseModel):
    layer: int
    head: int
    by: str
    lowest: bool
    results: list[CorpusText] = Field(description="At most k texts, the highest (or lowest) value first.")


class CorpusPatternResponse(BaseModel):
    layer: int
    head: int
    query: str
    key: str
    results: list[CorpusText] = Field(description="At most k texts, the heaviest matching pair first.")


class CorpusHead(BaseModel):
    layer: int
    head: int
    x: float | None = Field(description="The head's mean of metric x over the corpus.")
    y: float | None = Field(description="The head's mean of metric y over the corpus.")


class CorpusHeadsResponse(BaseModel):
    x: str
    y: str
    points: list[CorpusHead] = Field(description="One point per head, layer by layer.")
