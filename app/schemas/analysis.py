"""Request and response models of the analysis routes (/aggregate, /metrics, /contributions, /lens,
/logit-attribution) and of an edit."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from model.analysis.lens import DEFAULT_TOP_K, MAX_TOP_K

from .api import AttentionEdit
from .common import ChosenHeads, ChosenLayers, Index, Indices, TextRequest, TokenInfo, examples


class AggregateRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "kind": "mean"},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "kind": "rollout", "residual": 0.5},
    ))

    kind: Literal["mean", "rollout"] = Field(
        "mean", description="`mean`: per layer the mean over heads. `rollout`: attention rollout up to each layer.")
    residual: float = Field(
        0.5, ge=0.0, le=1.0, allow_inf_nan=False,
        description="rollout only: the share of the identity (the residual connection), from 0 to 1.")


class AggregateResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    kind: str
    residual: float | None = Field(description="The residual share used by rollout; null for mean.")
    layers: list[int] = Field(description="Every layer, 0..L-1: maps[l] belongs to layer l.")
    maps: list[list[list[float]]] = Field(
        description="(layer, query, key). mean: mean_h A_l. rollout: R_l with Â_l = residual·I + "
        "(1 − residual)·mean_h A_l, rows renormalised to 1, R_0 = Â_0, R_l = Â_l·R_(l−1)."
    )


class MetricsRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat."},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "model": "minilm"},
    ))


class Threshold(BaseModel):
    metric: str = Field(description="The metric the label reads.")
    at_least: float = Field(description="The value the metric must reach, for this input's token count.")
    rule: str = Field(description="The rule in words.")


class RepeatedScores(BaseModel):
    ids: list[int] = Field(description="The input measured: R R (R: `half` different ids drawn with `seed` from the "
                                       "vocabulary's ids that are not added tokens, then R again) between the "
                                       "tokenizer's special tokens, R starting at `start`.")
    start: int
    half: int
    seed: int
    previous_token: list[list[float]] = Field(description="[layer][head]: the previous-token score.")
    induction: list[list[float]] = Field(description="[layer][head]: the induction score.")
    definitions: dict[str, str] = Field(description="score -> how it is computed.")


class MetricsResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    n_layers: int
    n_heads: int
    metrics: dict[str, list[list[float]]] = Field(
        description="metric -> [layer][head]: entropy, distance, to_cls, to_sep, to_self, to_previous, to_next, "
        "to_punctuation, to_first (definitions in `definitions`)."
    )
    definitions: dict[str, str] = Field(description="metric -> how it is computed.")
    labels: list[list[list[str]]] = Field(
        description="[layer][head]: the labels (broad, previous, next, cls, sep, self, sink) whose thresholds the "
        "head reaches; often none, sometimes several."
    )
    thresholds: dict[str, Threshold] = Field(description="label -> its rule.")
    source: str = Field(description="The study the labels follow, as a citation; the thresholds (`thresholds`) are "
                        "attnscope's own.")
    repeated: RepeatedScores = Field(
        description="Each head's previous-token and induction scores, measured not on `text` but on a repeated "
                    "random sequence (the same for every request to this model): which heads behave like the "
                    "induction lab's.")


class ContributionsRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat.", "layers": [2], "heads": [5]},
        {"text": "Where did the dog go?", "text_pair": "It went home.", "layers": [0, 5], "heads": [0, 1]},
    ))

    layers: ChosenLayers = None
    heads: ChosenHeads = None


class ContributionsResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    layers: list[int]
    heads: list[int]
    contributions: list[list[list[list[float]]]] = Field(
        description="(layer, head, query, key): ||a_ij f_h(x_j)|| = a_ij·||(x_j W_v^h + b_v^h) W_o^h||, the "
        "norm of what key j adds to query i's output through head h (bias b_o left out)."
    )
    layer_sum: list[list[list[float]]] = Field(
        description="(layer, query, key): ||Σ_h a_hij f_h(x_j)|| over every head of the layer (not only the "
        "chosen ones): what key j adds to query i through the whole attention layer."
    )


class LensRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "Hello world, attention is all you need."},
        {"text": "The cat sat on the mat.", "position": 2, "top_k": 10},
    ))

    model: str | None = Field(
        None, description="A model id from GET /api/v1/models whose `lm_head` is true; null: the first such "
        "model this server has.")
    position: Index | None = Field(
        None, description="The token position (0-based) whose next-token predictions to read, below the input's "
        "token count; null: the last token.")
    top_k: int = Field(DEFAULT_TOP_K, ge=1, le=MAX_TOP_K,
                       description=f"How many predictions per layer, most probable first: 1 to {MAX_TOP_K}.")


class LensPrediction(BaseModel):
    id: int = Field(description="The vocabulary id.")
    token: str = Field(description="The tokenizer's own token string, e.g. Ġworld.")
    display: str = Field(
        description="Readable text: the tokenizer's decoding of this one id (\" world\"). A byte-level token "
        "holding only part of a character's UTF-8 bytes shows the replacement character U+FFFD.")
    probability: float = Field(description="softmax over the whole vocabulary of this layer's logits.")
    logit: float = Field(description="The logit: the final LayerNorm of the residual stream times the token's "
                         "(tied) embedding.")


class LensLayer(BaseModel):
    layer: Literal["embeddings"] | int = Field(
        description="\"embeddings\": the stream before the first block (word + position embeddings); l: after "
        "block l.")
    predictions: list[LensPrediction] = Field(description="The top_k predictions, most probable first.")


class LensResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    position: int = Field(description="The position read (the last token when the request had none).")
    top_k: int
    layers: list[LensLayer] = Field(
        description="\"embeddings\" first, then every block 0..L-1; the last is the model's own next-token "
        "distribution.")


class EditEffectRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the mat because it was tired.", "edit": {"layer": 2, "kind": "probsparse",
                                                                          "factor": 1}},
        {"text": "The cat sat on the mat because it was tired.", "edit": {"layer": 0, "heads": [3], "ablate": True}},
    ))

    edit: AttentionEdit = Field(description="The what-if edit to measure (the `edit` of /attention, same rules).")


class TokenChoice(BaseModel):
    id: int = Field(description="The vocabulary id.")
    token: str = Field(description="The tokenizer's own token string.")
    display: str = Field(description="The token as readable text.")
    probability: float


class NextTokenChange(BaseModel):
    kl: float = Field(description="KL(p ‖ p') in nats: the next-token distribution at the last position without (p) "
                      "and with (p') the edit.")
    before: TokenChoice = Field(description="The most probable next token without the edit.")
    after: TokenChoice = Field(description="The most probable next token with the edit (its probability p').")
    before_probability_after: float = Field(description="p'(before): what the edit left of the unedited choice.")


class ProbSparseActive(BaseModel):
    factor: int
    seed: int
    heads: list[int] = Field(description="The edited heads, in the order of `measure` and `active`.")
    measure: list[list[float]] = Field(description="[head][query]: the sparsity measure M = max − sum / N of the "
                                       "query's unscaled scores on its sampled keys.")
    active: list[list[int]] = Field(description="[head]: the u = min(c·⌈ln N⌉, N) active queries, ascending.")
    lazy: Literal["mean", "sum"] = Field(description="What every other query gets: the mean of V (`mean`), or in a "
                                         "causal model the cumulative sum of V up to its position (`sum`).")


class EditEffectResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    edit: AttentionEdit
    layers: list[int] = Field(description="The edited layer and every later one.")
    row_change_mean: list[list[float]] = Field(description="[layer][head]: the mean over query rows of "
                                               "½ Σ_j |a'_ij − a_ij|, each row's total variation (0 to 1; a "
                                               "causal ProbSparse lazy row, which sums V, can exceed 1).")
    row_change_max: list[list[float]] = Field(description="[layer][head]: the largest row's change.")
    hidden_by_token: list[float] = Field(description="Per token ‖h'_t − h_t‖ / ‖h_t‖ of the final hidden state.")
    hidden_relative: float = Field(description="‖H' − H‖ / ‖H‖ over the whole final hidden state (Frobenius).")
    next_token: NextTokenChange | None = Field(description="A model with an LM head: the next token at the last "
                                               "position; null for an encoder.")
    probsparse: ProbSparseActive | None = Field(description="A ProbSparse edit: what it chose; null otherwise.")


# ---- /logit-attribution ----

AnswerIds = Annotated[Indices, Field(max_length=2)]


class LogitAttributionRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on", "answer": [262, 257]},
        {"text": "The cat sat on the mat.", "answer": [262], "position": 3},
    ))

    model: str | None = Field(
        None, description="A model id from GET /api/v1/models whose `lm_head` is true; null: the first such "
        "model this server has.")
    answer: AnswerIds = Field(
        description="[id]: the logit of that token; [good, bad]: the logit difference logit[good] − logit[bad]. "
        "Distinct vocabulary ids, each below the model's vocabulary size (GPT-2: 262 is \" the\", 257 \" a\"; "
        "POST /api/v1/token gives a word's id).")
    position: Index | None = Field(
        None, description="The token position (0-based) whose next-token logit to attribute, below the input's "
        "token count; null: the last token.")


class LogitAnswer(BaseModel):
    id: int = Field(description="The vocabulary id.")
    token: str = Field(description="The tokenizer's own token string, e.g. Ġworld.")
    display: str = Field(description="The tokenizer's decoding of this one id (\" world\").")


class LogitAttributionResponse(BaseModel):
    model: str
    tokens: list[TokenInfo]
    position: int = Field(description="The position read (the last token when the request had none).")
    answer: list[LogitAnswer] = Field(description="The answer's tokens: [id] or [good, bad].")
    heads: list[list[float]] = Field(
        description="[layer][head]: head h's share of layer l's output projection, z_h · W_O[h] at the position, "
        "through the final norm with its scale frozen, dotted with the answer's unembedding row (or the good "
        "row minus the bad one).")
    attention_bias: list[float] | None = Field(
        description="[layer]: the output projection's bias, the same way; null for a model without one (the "
        "Llama family).")
    mlp: list[float] = Field(description="[layer]: the MLP's output (Gemma 2: after its post-MLP norm), the same way.")
    embeddings: float = Field(description="The embeddings (word and position, scaled as the model scales them), "
                              "the same way.")
    norm_bias: float | None = Field(description="The final LayerNorm's bias · the answer's row; null for RMSNorm.")
    total: float = Field(description="The sum of every part above: equal to `logit` up to rounding.")
    logit: float = Field(description="The model's own logit (or logit difference) at the position, before any "
                         "soft-cap.")
    capped: float = Field(description="The same after the model's logit soft-cap (Gemma 2); equal to `logit` "
                          "where there is none.")
    softcap: float | None = Field(description="The cap of cap · tanh(logit / cap) (Gemma 2), not a sum of parts, so "
                                  "the parts attribute the logit before it; null without one.")
    norm: Literal["layer", "rms"] = Field(description="The final norm: LayerNorm (GPT-2) or RMSNorm (the Llama "
                                          "family).")
    scale: float = Field(description="Its frozen divisor at the position: √(var(x) + ε) (LayerNorm) or "
                         "√(mean(x²) + ε) (RMSNorm) of the whole residual stream x.")
