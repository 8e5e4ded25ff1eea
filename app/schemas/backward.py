"""Request and response models of POST /api/v1/toy/backward: the toy's backward pass."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from . import Matrix, Stack, ToyMatrix, ToyRequest, ToyResponse, examples


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
    w_q: Matrix = Field(description="d_model x (n_heads·d_keys), in x out: Σ_t x[t]ᵀ · dq[t].")
    w_k: Matrix = Field(description="d_model x (n_heads·d_keys), in x out.")
    w_v: Matrix = Field(description="d_model x (n_heads·d_values), in x out.")
    b_q: list[float]
    b_k: list[float]
    b_v: list[float]
    queries: Matrix = Field(description="L x d_model: dL/d the queries' inputs, dq · W_qᵀ.")
    keys: Matrix = Field(description="S x d_model: dL/d the keys' inputs, dk · W_kᵀ.")
    values: Matrix = Field(description="S x d_model: dL/d the values' inputs, dv · W_vᵀ.")
    input: Matrix | None = Field(None, description="Self-attention (keys and values not sent): dL/dX, the sum "
                                 "of queries, keys and values; null otherwise.")
    additive_w_q: Stack | None = Field(None, description="variant additive: h x d_keys x d_attn; else null.")
    additive_w_k: Stack | None = Field(None, description="variant additive: h x d_keys x d_attn; else null.")
    additive_v: Matrix | None = Field(None, description="variant additive: h x d_attn; else null.")


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
    flow: Literal["softmax", "none", "straight_through"] = Field(
        description="How the scores get their gradient: `softmax` (through the weights' softmax or Gumbel-"
        "softmax), `none` (hard, sample: one-hot weights do not depend on the scores; scores, q, k, W_q, W_k, "
        "b_q, b_k get zeros), `straight_through` (gumbel: one-hot forward, the soft weights' gradient backward).")
    note: str = Field(description="The same in one English sentence.")
    upstream: Matrix = Field(description="The upstream gradient used (L x d_model).")
    upstream_default: bool = Field(description="Whether upstream is the default, all ones.")
