"""/toy and /toy/backward: the worked example's request and answers (app/routes/toy.py)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

from model.lab.flash import MAX_BLOCK as FLASH_MAX_BLOCK
from model.lab.probsparse import MAX_FACTOR as TOY_MAX_FACTOR
from model.lab.toy import MAX_ABS as TOY_MAX_ABS
from model.lab.toy import MAX_SIDE as TOY_MAX_SIDE
from model.lab.variants import MAX_SEED as TOY_MAX_SEED
from model.lab.variants import MIN_TEMPERATURE as TOY_MIN_TEMPERATURE

from .common import QKV, FiniteNumber, Index, Matrix, Stack, Steps, StrictRequest, check_distinct, examples

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
    """The additive (Bahdanau) scorer's own parameters per head, W, U and v (not the projections W_q, W_k):
    scores_ij = v[h]ᵀ tanh(q_i W[h] + k_j U[h]) on the split q and k."""

    w_q: list[ToyMatrix] = Field(max_length=TOY_MAX_SIDE, description="W, applied to the queries: n_heads x d_keys "
                                 f"x d_attn; n_heads x d_attn at most {TOY_MAX_SIDE}.")
    w_k: list[ToyMatrix] = Field(max_length=TOY_MAX_SIDE, description="U, applied to the keys: n_heads x d_keys x "
                                 "d_attn.")
    v: ToyMatrix = Field(description="v, which turns each tanh vector into a score: n_heads x d_attn.")


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


ToyVariant = Literal["scaled_dot", "dot", "additive", "hard", "sample", "gumbel", "linear", "probsparse", "general",
                     "cosine"]


ToyPositions = Literal["none", "sinusoidal", "rope", "alibi"]


HiddenKeys = Annotated[
    list[Index], Field(max_length=TOY_MAX_SIDE, json_schema_extra={"uniqueItems": True}),
    AfterValidator(check_distinct),
]


class ToyLayerRequest(StrictRequest):
    """The toy's layer and inputs: what /toy and /flash share."""

    queries: ToyMatrix | None = Field(None, description="L x d_model inputs of the queries.")
    keys: ToyMatrix | None = Field(None, description="S x d_model inputs of the keys; default: queries.")
    values: ToyMatrix | None = Field(None, description="S x d_model inputs of the values; default: keys.")
    n_heads: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Must divide d_model; default 2.")
    weights: ToyWeights | None = None
    causal: bool = Field(False, description="Hide key j from query i when j > i.")
    hidden_keys: HiddenKeys = Field(default_factory=list, description="Distinct key indices hidden from every query.")


class ToyRequest(ToyLayerRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"queries": [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1]], "n_heads": 2, "causal": True,
         "weights": {"o": [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]}},
        {"queries": [[1, 0, 1]], "keys": [[1, 0, 1], [0, 1, 0]], "values": [[1, 2, 3], [4, 5, 6]], "n_heads": 3},
    ))

    variant: ToyVariant = Field("scaled_dot", description="How scores become weights (see the route).")
    temperature: Temperature = Field(1.0, description="Divides the scaled scores before the weights (every variant).")
    seed: int = Field(0, ge=0, le=TOY_MAX_SEED, description="The draw of sample and gumbel, and of seeded defaults.")
    straight_through: bool = Field(False, description="gumbel only: the forward weights are one-hot.")
    d_keys: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Per-head width of q and k; d_model/n_heads.")
    d_values: int | None = Field(None, ge=1, le=TOY_MAX_SIDE, description="Per-head width of v; d_model/n_heads.")
    additive: ToyAdditive | None = Field(None, description="variant additive only; default seeded, d_attn = d_keys.")
    positions: ToyPositions = Field("none", description="none, sinusoidal (X + P), rope (q, k rotated), alibi (bias).")
    factor: int | None = Field(None, ge=1, le=TOY_MAX_FACTOR, description="probsparse only: the sampling factor c "
                               "(U = min(c·⌈ln S⌉, S) keys sampled per query, u = min(c·⌈ln L⌉, L) active queries); "
                               "default 5.")
    scale: float | None = Field(None, gt=0, le=TOY_MAX_ABS, allow_inf_nan=False, description="cosine only: the "
                                "factor of the cosine scores (default √d_keys).")
    tau: float = Field(1.0, gt=0, le=TOY_MAX_ABS, allow_inf_nan=False, description="De-stationary τ (Non-stationary "
                       "Transformers): the scores become scores · τ + δ before the scale and the mask.")
    delta: FiniteNumber | list[FiniteNumber] = Field(0.0, description="De-stationary δ: one number for every key, "
                                                     "or one per key (S numbers).")


class ToySteps(Steps[QKV]):
    """The steps of multi-head attention in order; per-head stacks are (head, query, ...)."""

    input: QKV = Field(description="The three inputs before projection: q (L x d_model), k and v (S x d_model).")


class ToyWeightsUsed(BaseModel):
    q: Matrix
    k: Matrix
    v: Matrix
    o: Matrix


class ToyAdditiveUsed(BaseModel):
    w_q: Stack = Field(description="W (the additive scorer's weights for the queries): h x d_keys x d_attn.")
    w_k: Stack = Field(description="U (its weights for the keys): h x d_keys x d_attn.")
    v: Matrix = Field(description="v: h x d_attn.")


class ToyProbSparse(BaseModel):
    sampled_keys: list[list[int]] = Field(description="L x U: the keys sampled (with replacement) for each query, "
                                          "shared by the heads.")
    measure: Matrix = Field(description="h x L: M = max − (Σ over the sampled keys)/S of the unscaled q·k.")
    active: list[list[int]] = Field(description="h x u: the active queries of each head (largest M; ascending "
                                    "query order, equal M to the earlier query).")
    output_difference: list[float] = Field(description="L: ‖output − full softmax attention's output‖₂ per "
                                           "query, the same layer otherwise.")


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
    factor: int | None = Field(None, description="probsparse: the factor c used; null otherwise.")
    general_w: Stack | None = Field(None, description="general: Luong's W_s per head (h x d_keys x d_keys; seeded "
                                    "from stream 9); null otherwise.")
    tau: float = Field(1.0, description="De-stationary τ used (1: none).")
    delta: list[float] | None = Field(None, description="De-stationary δ used, one per key (S); null where the "
                                      "answer is not the toy's (the Iris trace).")
    probsparse: ToyProbSparse | None = Field(None, description="probsparse: the sample, the measure M, the "
                                             "active queries and the difference from full attention; null "
                                             "otherwise. The lazy rows of the softmax step hold the weights used: "
                                             "1/S (the mean of V), or under a causal mask 1 on keys 0..i (the "
                                             "cumulative sum of V).")
    soft: Stack | None = Field(None, description="Hard variants (hard, sample, straight-through gumbel): the "
                               "softmax (h x L x S) the one-hot weights came from; null otherwise.")
    steps: ToySteps


class ToyBackwardRequest(ToyRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"variant": "hard"},
        {"queries": [[1, 0, 1, 0], [0, 2, 0, 1]], "keys": [[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 0, 1]],
         "values": [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], "n_heads": 2, "d_keys": 2, "d_values": 1,
         "upstream": [[1, 0, 0, 0], [0, 0, 0, -1]]},
        {"variant": "gumbel", "straight_through": True, "positions": "rope", "causal": True, "seed": 3},
    ))

    upstream: ToyMatrix | None = Field(
        None, description="L x d_model: dL/d output, the gradient arriving at the layer's output (one row per "
        "query). Default: all ones, the gradient of the sum of the outputs.")


PerHead = Stack  # [h][rows][cols]


class ToyGradients(BaseModel):
    """Every gradient of the loss, named after the forward's steps and weights (batch axis dropped)."""

    output: Matrix = Field(description="L x d_model: the upstream gradient itself.")
    w_o: Matrix = Field(description="(n_heads·d_values) x d_model, in x out: Σ_t concat[t]ᵀ · upstream[t].")
    b_o: list[float] = Field(description="d_model: Σ_t upstream[t].")
    concat: Matrix = Field(description="L x (n_heads·d_values): upstream · W_oᵀ.")
    weighted_sum: PerHead = Field(description="h x L x d_values: head h's columns of concat's gradient.")
    v: PerHead = Field(description="h x S x d_values: Aᵀ · dctx_h.")
    softmax: PerHead = Field(description="h x L x S: the weights' gradient dA = dctx_h · V_hᵀ.")
    scores: PerHead = Field(description="h x L x S: with respect to the raw scores q·kᵀ (the scale factor "
                            "inside): A ⊙ (dA − rowsum(dA ⊙ A)) × scale; zeros for hard and sample.")
    q: PerHead = Field(description="h x L x d_keys: dS · K (before RoPE's rotation when positions is rope).")
    k: PerHead = Field(description="h x S x d_keys: dSᵀ · Q (before RoPE's rotation when positions is rope).")
    q_rotated: PerHead | None = Field(None, description="positions rope: the rotated q's gradient dS · K; else null.")
    k_rotated: PerHead | None = Field(None, description="positions rope: the rotated k's gradient dSᵀ · Q; else null.")
    w_q: Matrix = Field(description="d_model x (n_heads·d_keys), in x out: dW_q = Σ_t X_q[t]ᵀ · dQ[t] (dQ: the "
                        "gradient of X_q W_q).")
    w_k: Matrix = Field(description="d_model x (n_heads·d_keys), in x out.")
    w_v: Matrix = Field(description="d_model x (n_heads·d_values), in x out.")
    b_q: list[float]
    b_k: list[float]
    b_v: list[float]
    queries: Matrix = Field(description="L x d_model: dL/d the queries' inputs, dQ · W_qᵀ.")
    keys: Matrix = Field(description="S x d_model: dL/d the keys' inputs, dK · W_kᵀ.")
    values: Matrix = Field(description="S x d_model: dL/d the values' inputs, dV · W_vᵀ.")
    input: Matrix | None = Field(None, description="Self-attention (keys and values not sent): dL/dX, the sum "
                                 "of queries, keys and values; null otherwise.")
    additive_w_q: Stack | None = Field(None, description="variant additive: dW, the gradient of the scorer's W "
                                       "(h x d_keys x d_attn); else null.")
    additive_w_k: Stack | None = Field(None, description="variant additive: dU, the gradient of the scorer's U "
                                       "(h x d_keys x d_attn); else null.")
    additive_v: Matrix | None = Field(None, description="variant additive: dv, the gradient of the scorer's v "
                                      "(h x d_attn); else null.")
    general_w: Stack | None = Field(None, description="variant general: dW_s = Σ qᵀ·dS·k per head (h x d_keys x "
                                    "d_keys); else null.")


class BackwardCheck(BaseModel):
    max_abs_diff: float = Field(description="The largest |attnscope − autograd| over every compared gradient.")
    max_rel_diff: float = Field(description="max_abs_diff divided by the largest |autograd| of every gradient.")
    bound: float = Field(description="The largest max_rel_diff float64 rounding can explain: 64 · n · ε, n the "
                         "longest axis a product sums over, ε = 2⁻⁵²; the check passes when max_rel_diff ≤ bound.")
    worst: str | None = Field(description="The gradient with the largest difference; null when all are equal.")
    compared: list[str] = Field(description="The gradients compared (autograd has no gradient for one-hot weights).")
    reference: Literal["torch.autograd float64"] = "torch.autograd float64"


class ToyBackwardResponse(BaseModel):
    forward: ToyResponse = Field(description="The /api/v1/toy answer of the same request.")
    gradients: ToyGradients
    check: BackwardCheck = Field(description="attnscope's backward against torch.autograd on the same forward.")
    flow: Literal["softmax", "none", "straight_through", "linear", "probsparse"] = Field(
        description="How the scores get their gradient: `softmax` (through the weights' softmax or Gumbel-"
        "softmax), `none` (hard, sample: one-hot weights do not depend on the scores; scores, q, k, W_q, W_k, "
        "b_q, b_k get zeros), `straight_through` (gumbel: one-hot forward, the soft weights' gradient backward), "
        "`linear` (through each row's division by its sum, then φ'(q), φ'(k)), `probsparse` (the softmax's "
        "gradient on the active rows only; the lazy rows' scores get zeros).")
    note: str = Field(description="The same in one English sentence.")
    upstream: Matrix = Field(description="The upstream gradient used (L x d_model).")
    upstream_default: bool = Field(description="Whether upstream is the default, all ones.")


# ---- /flash: FlashAttention, tile by tile, on one head of the toy's layer ----------------------------------

MaskedMatrix = list[list[float | None]]


class FlashRequest(ToyLayerRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {},
        {"block_rows": 1, "block_cols": 3, "causal": True, "head": 1},
        {"block_rows": 2, "block_cols": 2, "hidden_keys": [0], "backward": True},
    ))

    block_rows: int = Field(2, ge=1, le=FLASH_MAX_BLOCK, description="Br, the query rows of one block.")
    block_cols: int = Field(2, ge=1, le=FLASH_MAX_BLOCK, description="Bc, the keys (and values) of one block.")
    head: Index = Field(0, description="The head whose attention is tiled (0..n_heads-1).")
    backward: bool = Field(False, description="Also the backward by recomputation, against torch.autograd.")
    upstream: ToyMatrix | None = Field(
        None, description="backward: dL/d the head's output, L x d_values; default all ones.")


class FlashTilePlace(BaseModel):
    """Where a tile sits: its query block and key block, and their index ranges."""

    row_block: int
    col_block: int
    rows: list[int] = Field(description="[i0, i1): the tile's query rows, i1 exclusive.")
    cols: list[int] = Field(description="[j0, j1): the tile's keys, j1 exclusive.")
    skipped: bool = Field(description="Every score of the tile is hidden: nothing changes (FlashAttention skips it).")


class FlashTile(FlashTilePlace):
    scores: MaskedMatrix = Field(description="Br x Bc: q·kᵀ × scale, masked; hidden entries are null (−∞).")
    m: list[float | None] = Field(description="Br: the running row maximum after this tile; null (−∞) while a "
                                  "row has seen no visible key.")
    l: list[float] = Field(description="Br: the running Σ exp(score − m) after this tile.")  # noqa: E741 (ℓ)
    o: Matrix = Field(description="Br x d_values: the running output after this tile, not yet divided by l.")


class FlashBackwardTile(FlashTilePlace):
    p: Matrix = Field(description="Br x Bc: the weights A (the paper's P) recomputed from the scores, m and l.")
    ds: Matrix = Field(description="Br x Bc: the scores' gradient A ⊙ (dA − D), dA = dO·Vᵀ, D = rowsum(dO ⊙ O).")


class FlashGradients(BaseModel):
    dq: Matrix = Field(description="L x d_keys.")
    dk: Matrix = Field(description="S x d_keys.")
    dv: Matrix = Field(description="S x d_values.")


class FlashBackward(FlashGradients):
    upstream: Matrix = Field(description="dO used (L x d_values).")
    tiles: list[FlashBackwardTile]
    reference: FlashGradients = Field(description="torch.autograd through softmax attention written out.")
    max_abs_diff: float


class FlashResponse(BaseModel):
    head: int
    n_heads: int
    block_rows: int
    block_cols: int
    scale: float = Field(description="1/√d_keys.")
    q: Matrix = Field(description="The head's queries, L x d_keys (the toy's split step).")
    k: Matrix = Field(description="The head's keys, S x d_keys.")
    v: Matrix = Field(description="The head's values, S x d_values.")
    tiles: list[FlashTile] = Field(description="In the order computed: query block by query block, each key "
                                   "block in turn.")
    output: Matrix = Field(description="L x d_values: O / l, the head's attention output.")
    reference: Matrix = Field(description="L x d_values: the same head's standard softmax attention (/toy).")
    max_abs_diff: float = Field(description="max |output − reference|.")
    m: list[float | None] = Field(description="L: each row's final maximum (null: every key hidden).")
    l: list[float] = Field(description="L: each row's final Σ exp(score − m) (0: every key hidden).")  # noqa: E741 (ℓ)
    backward: FlashBackward | None = None
