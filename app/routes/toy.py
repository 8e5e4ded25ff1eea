"""REST API v1: the course's worked example, forward (/toy) and backward (/toy/backward), on small
matrices the user chooses; both run on the model worker."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from model.errors import BACKWARD_RULES, FLASH_RULES, TOY_RULES
from model.lab.flash import MAX_BLOCK, run_flash
from model.lab.toy import run_toy
from model.lab.toy_backward import run_toy_backward

from .. import serialize
from ..deps import ClientLeft, Hub, SettingsDep, ToyInput
from ..errors import refuse_over_cap
from ..hub import ModelHub
from ..schemas.common import (
    BODY_TOO_LARGE,
    INVALID_FIELD,
    NOT_UTF8,
    documented_error,
    documented_rules,
    openapi_examples,
)
from ..schemas.toy import FlashRequest, FlashResponse, ToyBackwardRequest, ToyBackwardResponse, ToyRequest, ToyResponse

router = APIRouter(
    prefix="/api/v1",
    tags=["attention"],
    responses={400: NOT_UTF8, 413: BODY_TOO_LARGE, 422: INVALID_FIELD},
)


@router.post(
    "/toy",
    response_model=ToyResponse,
    summary="Multi-head attention on small matrices you choose (default: the worked example)",
    description=(
        "`{}` is the worked example: d_model 4, 2 heads, identity weights, zero biases. Keys default to queries "
        "and values to keys; weights act as X W (in x out) and a missing one is the identity. Matrices are at "
        "most 64x64 with finite numbers of magnitude at most 1e6 (stated in the schema). Rules between fields, "
        "which the schema cannot state: every row of a matrix as long as its first row; keys and values have "
        "as many columns as queries (d_model); as many values as keys; each weight is d_model x d_model; "
        "n_heads divides d_model (an odd d_model needs n_heads, unless d_keys and d_values are sent). "
        "**Variants**: `scaled_dot` (q·kᵀ, scale 1/√d_keys), `dot` (scale 1), `additive` (Bahdanau: scores_ij = "
        "v[h]ᵀ tanh(q_i W[h] + k_j U[h]) on the split q and k, scale 1, with the scorer's own W, U, v, not the "
        "projections W_q, W_k: `additive.w_q` holds W, `additive.w_k` U, `additive.v` v; sent, or seeded with "
        "d_attn = d_keys), `hard` (one-hot argmax of each masked row, ties to the lowest index), "
        "`sample` (one-hot drawn from the softmax row), `gumbel` (softmax((s + g)/τ), g ~ Gumbel(0, 1); with "
        "`straight_through` the forward weights are its one-hot argmax), `linear` (Katharopoulos et al. 2020: scores "
        "φ(q)·φ(k)ᵀ with φ(x) = elu(x) + 1 > 0, scale 1; the `softmax` step holds each masked row divided by its sum "
        "over the visible keys, so the output equals φ(Q)·(φ(K)ᵀV) / φ(Q)·Σφ(K) without an N x N matrix; not with "
        "ALiBi), `probsparse` (Informer, as Time-Series-Library's ProbAttention: for each query U = min(c·⌈ln S⌉, "
        "S) keys sampled with replacement, one L × U index matrix shared by the heads, from stream 8 with "
        "`torch.randint`; M = max − Σ/S of the unscaled q·k on them; the u = min(c·⌈ln L⌉, L) queries of largest M "
        "per head get the scaled, masked softmax, the others the mean of V, or under `causal` the cumulative SUM of "
        "V up to their row; `factor` c, default 5; the answer adds `probsparse` and `factor`; at least 2 queries "
        "and keys, no `hidden_keys`, and as many keys as queries when causal), `general` (Luong: q W_s kᵀ per head, "
        "scale 1, W_s seeded from stream 9 and echoed as `general_w`), `cosine` (q·k / (|q||k|), each |x| clamped "
        "to at least 1e-12, times `scale`, default √d_keys). **De-stationary factors** (Non-stationary "
        "Transformers): `tau` τ and `delta` δ (one number, or one per key) make the `scores` step scores · τ + δ, "
        "before the scale and the mask, for every variant (ProbSparse's M is measured on q·k without them, as "
        "its source ignores them). **Temperature** τ divides the scaled "
        "scores: the `scale` step is scores × scale, and the answer's `scale` is that factor (1/√d_keys or 1, "
        "divided by τ); the mask and the ALiBi bias are added after it, unscaled. The `softmax` step holds the "
        "weights used; `hard`, `sample` and straight-through `gumbel` add `soft`, the softmax the one-hot rows "
        "came from. A row with every key hidden is zeros for every variant. **Seed**: each draw uses "
        "`torch.Generator().manual_seed(seed + stream)` and `torch.rand(..., dtype=float64)`: stream 0 is the "
        "noise (shape h × L × S for gumbel with g = −log(−log u); h × L × 1 for sample, which takes the first "
        "key whose cumulative weight exceeds u). **Widths**: W_q, W_k are d_model × (n_heads·d_keys), W_v "
        "d_model × (n_heads·d_values), W_o (n_heads·d_values) × d_model; a missing square weight is the "
        "identity, a missing non-square one is N(0, 1)/√rows rounded to 2 decimals from streams q 1, k 2, v 3, "
        "o 4 (additive defaults: W 5, U 6, v 7); the answer echoes every weight used. **Positions**: "
        "`sinusoidal` adds the table to the queries', keys' and values' inputs by row (the `input` step shows "
        "X + P; even d_model), `rope` rotates each head's q and k after the split (the `split` step shows "
        "them; even d_keys), `alibi` adds −m_h·|i−j|, m_h = 2^(−8(h+1)/H), in the `mask` step. "
        "`hidden_keys` hides those keys from every query, beside `causal`. A broken rule is answered 422 with "
        "`errors[0].loc` naming the field, row or cell, e.g. `[\"body\", \"values\"]` or "
        "`[\"body\", \"queries\", \"1\"]`, `errors[0].type` naming the rule and `errors[0].ctx` its numbers: "
        + documented_rules(TOY_RULES) + "."
    ),
)
def toy(req: ToyInput, hub: Hub, gone: ClientLeft) -> Response:
    return serialize.json_response(serialize.toy_answer(_run_toy(run_toy, req, hub, gone)))


def _run_toy(run: Any, req: ToyRequest, hub: ModelHub, gone: Callable[[], bool], **more: Any) -> Any:
    """run_toy or run_toy_backward on the model worker, with every field of a toy request."""
    weights = req.weights.model_dump(exclude_none=True) if req.weights else None
    additive = req.additive.model_dump() if req.additive else None
    bound = partial(run, variant=req.variant, temperature=req.temperature, seed=req.seed,
                    straight_through=req.straight_through, d_keys=req.d_keys, d_values=req.d_values,
                    additive=additive, positions=req.positions, hidden_keys=req.hidden_keys, factor=req.factor,
                    scale=req.scale, tau=req.tau, delta=req.delta, **more)
    return hub.run(bound, req.queries, req.keys, req.values, req.n_heads, weights, req.causal, gone=gone)


ToyBackwardInput = Annotated[ToyBackwardRequest, Body(openapi_examples=openapi_examples(ToyBackwardRequest))]


@router.post(
    "/toy/backward",
    response_model=ToyBackwardResponse,
    summary="The toy's backward pass: every gradient, checked against torch.autograd in the same request",
    description=(
        "The /api/v1/toy request (same fields, rules and defaults: `{}` is the worked example) plus `upstream`, "
        "dL/d output (L x d_model; default all ones, the gradient of the sum of the outputs). The answer holds "
        "`forward` (the /api/v1/toy answer), `gradients` named after the steps and weights and computed by "
        "attnscope's own backward in float64, in reverse order (A the attention weights, dA their gradient): "
        "W_o (dW_o = Σ concatᵀ·upstream, dconcat = upstream·W_oᵀ), per head dV = Aᵀ·dctx_h and dA = "
        "dctx_h·Vᵀ (`softmax`), dS = A ⊙ (dA − rowsum(dA ⊙ A)) × scale (`scores`, with respect to the raw "
        "scores q·kᵀ), dQ = dS·K and dK = dSᵀ·Q (`q`, `k`), then W_q, W_k, W_v from their outputs' "
        "gradients dQ, dK, dV (dW_q = X_qᵀ·dQ, db_q = Σ_t dQ[t], dX_q = dQ·W_qᵀ, likewise for k and v) and "
        "the inputs `queries`, `keys`, `values` (for self-attention `input` is their sum). Per-head gradients "
        "are [h][L][S], [h][L][d_keys] and so on; weights are in x out. `check` compares every gradient with "
        "torch.autograd run on the same forward in the same request (`max_abs_diff`, `max_rel_diff` relative "
        "to the largest gradient, `bound`: the most float64 rounding explains, 64 · n · ε; `reference`: "
        "\"torch.autograd float64\"). "
        "**Variants**: `additive` differentiates through the tanh into the scorer's own W, U, v "
        "(`additive_w_q`, `additive_w_k`, `additive_v`) and into q, k; `hard` and `sample` pass no gradient "
        "to the scores (`flow` \"none\": scores, q, k, W_q, W_k, b_q, b_k are zeros; the values still get "
        "theirs); `gumbel` differentiates the Gumbel-softmax, and with `straight_through` (`flow` "
        "\"straight_through\") the forward uses the one-hot rows while the backward passes the soft weights' "
        "gradient. The temperature is inside the scale factor; "
        "RoPE's rotation is turned back (`q_rotated`, `k_rotated` hold the gradients before that); the "
        "sinusoidal table is added to the inputs, so the inputs' gradient passes through it; the mask (causal, "
        "hidden keys, ALiBi's bias) is a constant and hidden entries get zero gradient. Errors are those of "
        "/api/v1/toy (422 with `errors[0].type` one of its rules), and: "
        + documented_rules(BACKWARD_RULES)
        + "; a non-finite or too large upstream number is `finite_number` or `toy_magnitude` at its cell."
    ),
    responses={422: documented_error("A field is invalid or does not fit the others (the /toy rules, or "
                                     "`toy_upstream_shape`: upstream is not L x d_model); `errors[0]` names the "
                                     "field (`loc`), the rule (`type`) and its numbers (`ctx`).")},
)
def toy_backward(req: ToyBackwardInput, hub: Hub, gone: ClientLeft) -> Response:
    result = _run_toy(run_toy_backward, req, hub, gone, upstream=req.upstream)
    return serialize.json_response(serialize.toy_backward_answer(result))


FlashInput = Annotated[FlashRequest, Body(openapi_examples=openapi_examples(FlashRequest))]


@router.post(
    "/flash",
    response_model=FlashResponse,
    summary="FlashAttention tile by tile on one head of the toy's layer, beside standard attention",
    description=(
        "The toy's layer and inputs (`queries`, `keys`, `values`, `weights`, `n_heads`, `causal`, `hidden_keys`: "
        "the /api/v1/toy fields, rules and defaults; `{}` is the worked example) and one `head`, whose q, k and v "
        f"(the toy's split step) go through FlashAttention's forward in blocks of `block_rows` Br queries and "
        f"`block_cols` Bc keys (1..{MAX_BLOCK}): per query block a running row maximum m, a running sum l = Σ "
        "exp(score − m) and an unnormalised output o, rescaled by exp(m_old − m_new) whenever a row's maximum "
        "grows, and output = o / l after the last key block. `tiles` lists every tile in the order computed with "
        "its scores (scaled, masked: hidden entries null) and the state m, l, o after it; a tile whose scores are "
        "all hidden is `skipped` (nothing changes). `reference` is the same head's standard softmax attention "
        "(the /toy weighted_sum step) and `max_abs_diff` their largest difference. A row whose keys are all hidden "
        "gives zeros (m null, l 0). `backward: true` adds the backward by recomputation: from q, k, v, the "
        "output, dO (`upstream`, L x d_values; default all ones) and m, l only, each tile's weights A = exp(score − "
        "m − log l) (the paper's P, the field `p`) and the scores' gradient dS = A ⊙ (dA − rowsum(dO ⊙ "
        "output)), dA = dO·Vᵀ, are recomputed (`tiles`), and "
        "dq, dk, dv summed, beside torch.autograd's through softmax attention written out (`reference`). Errors: "
        "those of /api/v1/toy (422 naming the field), and " + documented_rules(FLASH_RULES) + "; an answer over "
        "the JSON cap (ATTNSCOPE_MAX_JSON_VALUES) → 413 `answer_too_large`: raise the block sizes."
    ),
)
def flash(req: FlashInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    weights = req.weights.model_dump(exclude_none=True) if req.weights else None
    bound = partial(run_flash, hidden_keys=req.hidden_keys, block_rows=req.block_rows, block_cols=req.block_cols,
                    head=req.head, backward=req.backward, upstream=req.upstream)
    result = hub.run(bound, req.queries, req.keys, req.values, req.n_heads, weights, req.causal, gone=gone)
    values = _numbers(result["tiles"]) + (_numbers(result["backward"]["tiles"]) if result["backward"] else 0)
    refuse_over_cap(values, settings.max_json_values, f"{len(result['tiles'])} tiles",
                    "raise block_rows and block_cols, or send fewer queries or keys")
    return serialize.json_response(serialize.flash_answer(result))


def _numbers(tiles: list[Any]) -> int:
    """How many numbers the tiles hold (what the JSON cap counts)."""
    return sum(value.numel() for tile in tiles for value in vars(tile).values() if hasattr(value, "numel"))
