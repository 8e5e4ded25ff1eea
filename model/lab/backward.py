"""The backward pass of multi-head attention, step by step, with the formulas of the notes.

`attention_forward` runs a MultiHeadAttention layer (its own step functions, so the output equals
`layer(x, ...)`) and keeps what the backward needs in an AttentionCache: the inputs, the full
projections Q, K, V, the per-head q, k (after a rotation such as RoPE), the weights A and the
concatenated context. `attention_backward` then walks the steps in reverse, from the gradient of
the output (`upstream`, dL/d output):

    W_o:           dW_o = Σ concatᵀ·upstream, db_o = Σ upstream, dconcat = upstream·W_oᵀ
    per head h:    dctx_h = dconcat[:, h] ; dV_h = Aᵀ·dctx_h ; dA = dctx_h·V_hᵀ
    softmax:       dZ = A ⊙ (dA − rowsum(dA ⊙ A))          (Z the scaled, masked scores)
    scale:         dS = dZ × scale                          (S the raw scores q·kᵀ)
    scores:        dq_h = dS·k_h ; dk_h = dSᵀ·q_h
    projections:   dW = Σ xᵀ·dProj, db = Σ dProj, dx = dProj·Wᵀ   (for W_q, W_k, W_v)

Sums run over the batch and the rows. Weights are in × out (X·W), the transpose of
nn.Linear.weight. A hidden key (−∞ in the mask) has weight 0, so its gradient is 0; a row whose
keys are all hidden has zero weights and zero gradients, never NaN. The mask itself is a constant
(causal, hidden keys, ALiBi's bias): nothing flows into it.

Variants (model/lab/variants.py), recognised from the layer's `score`, `weigh` and `rotate`:
  scoring   `attention_scores` (dot product), a GeneralScore (q W_s kᵀ: dq = dS·K·W_sᵀ, dk = dSᵀ·Q·W_s,
            dW_s = Σ Qᵀ·dS·K), `cosine_scores` (through x̂ = x/|x|: dx = (dx̂ − x̂(x̂·dx̂))/|x|), any of them
            inside a Destationary (scores · τ + δ: the inner scores get dS · τ), an AdditiveScore (backward
            through the tanh into its w_q, w_k, v and into q, k) or `kernel_scores` (linear attention's φ(q)·φ(k)ᵀ: dq =
            (dS·φ(k)) ⊙ φ'(q), φ'(x) = 1 for x > 0 and eˣ otherwise; dk likewise);
  weighting `softmax_rows` (the formula above); `hard_weights` and `sample_weights` (one-hot rows
            that do not depend on the scores: the scores receive no gradient, zeros);
            `gumbel_weights` (the formula above with the Gumbel-softmax weights; with
            straight_through the forward uses the one-hot rows and the backward the soft weights);
            `linear_weights` (A = Z / rowsum(Z) over the visible keys: dZ = (dA − rowsum(dA ⊙ A)) / rowsum(Z),
            0 where hidden); `probsparse_weights` (the softmax formula on the active rows; the lazy rows'
            weights are constants, so their scores get zero);
  rotation  None or `positions.rope`: the rotation is linear and orthogonal, so the gradient of
            the un-rotated q is the gradient of the rotated q turned back by −θ.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from model.lab import probsparse, variants
from model.nets import positions as pos
from model.nets.attention import MultiHeadAttention, attention_scores, merge_heads, softmax_rows, split_heads

Tensor = torch.Tensor

WEIGHINGS = ("softmax", "gumbel", "linear", "probsparse", "none")  # how the weights pass a gradient to the scores


@dataclass(frozen=True)
class AttentionCache:
    """What the forward keeps for the backward (batched, batch axis first).

    x, keys, values: the layer's inputs (B, T, D), (B, S, D), (B, S, D).
    q_full, k_full, v_full: the projections Q (B, T, H·Dk), K (B, S, H·Dk), V (B, S, H·Dv).
    q, k: per head, after the rotation if any (B, H, T, Dk), (B, H, S, Dk); v (B, H, S, Dv).
    weights: A, the weights used (B, H, T, S); soft: the weights the backward differentiates
    (A itself for softmax, the Gumbel-softmax for straight-through gumbel, None when the scores
    get no gradient). ctx: the concatenated context (B, T, H·Dv).
    hidden: the tanh layer of additive scoring (B, H, T, S, A), else None.
    """

    x: Tensor
    keys: Tensor
    values: Tensor
    q_full: Tensor
    k_full: Tensor
    v_full: Tensor
    q: Tensor
    k: Tensor
    v: Tensor
    weights: Tensor
    soft: Tensor | None
    ctx: Tensor
    scale: float
    weighing: str
    straight_through: bool
    rotated: bool
    hidden: Tensor | None = None
    row_sums: Tensor | None = None  # linear weighting: each row's sum of the visible masked scores (B, H, T, 1)


def _weighing(weigh: Any) -> tuple[str, dict[str, Any]]:
    """Which backward the layer's weighting has: softmax, gumbel (with its keywords) or none."""
    func, keywords = (weigh.func, dict(weigh.keywords)) if isinstance(weigh, partial) else (weigh, {})
    if func is softmax_rows:
        return "softmax", keywords
    if func is variants.gumbel_weights:
        return "gumbel", keywords
    if func is variants.linear_weights:
        return "linear", keywords
    if func is probsparse.probsparse_weights:
        return "probsparse", keywords
    if func in (variants.hard_weights, variants.sample_weights):
        return "none", keywords
    raise ValueError(f"no backward for the weighting {weigh!r}; use a weighting of model/lab/variants.py")


def scores_get_gradient(layer: MultiHeadAttention) -> bool:
    """Whether the layer's weights pass a gradient back to the scores (not for hard and sample)."""
    return _weighing(layer.weigh)[0] != "none"


def _inner_score(score: Any) -> Any:
    """The scoring inside a de-stationary wrapper (scores · τ + δ), or the scoring itself."""
    return score.inner if isinstance(score, variants.Destationary) else score


def _check_score(layer: MultiHeadAttention) -> None:
    score = _inner_score(layer.score)
    if score not in (attention_scores, variants.kernel_scores, variants.cosine_scores) and not isinstance(
            score, (variants.AdditiveScore, variants.GeneralScore)):
        raise ValueError(f"no backward for the scoring {layer.score!r}; use attention_scores, kernel_scores, "
                         "cosine_scores, AdditiveScore or GeneralScore (optionally in Destationary)")
    if layer.rotate is not None and layer.rotate is not pos.rope:
        raise ValueError(f"no backward for the rotation {layer.rotate!r}; use positions.rope or none")


def _additive_hidden(score: variants.AdditiveScore, q: Tensor, k: Tensor) -> Tensor:
    """tanh(q W_q + k W_k) of every (query, key) pair, as AdditiveScore computes it."""
    qa = torch.einsum("bhtd,hda->bhta", q, score.w_q)  # (B, H, T, A)
    ka = torch.einsum("bhsd,hda->bhsa", k, score.w_k)  # (B, H, S, A)
    return torch.tanh(qa[:, :, :, None, :] + ka[:, :, None, :, :])  # (B, H, T, S, A)


def attention_forward(layer: MultiHeadAttention, x: Tensor, keys: Tensor | None = None,
                      values: Tensor | None = None, mask: Tensor | None = None) -> tuple[Tensor, AttentionCache]:
    """The layer's output (B, T, D), equal to layer(x, keys, values, mask), and the cache for the backward.

    x: (B, T, D) inputs of the queries; keys, values (B, S, D) default to x and to keys.
    mask: additive, broadcasting to (B, H, T, S): 0 visible, −∞ hidden, or a constant bias.
    """
    _check_score(layer)
    weighing, keywords = _weighing(layer.weigh)
    keys = x if keys is None else keys
    values = keys if values is None else values
    q_full = layer.query(x)  # (B, T, H*Dk)
    k_full = layer.key(keys)  # (B, S, H*Dk)
    v_full = layer.value(values)  # (B, S, H*Dv)
    q = split_heads(q_full, layer.n_heads)  # (B, H, T, Dk)
    k = split_heads(k_full, layer.n_heads)  # (B, H, S, Dk)
    v = split_heads(v_full, layer.n_heads)  # (B, H, S, Dv)
    if layer.rotate is not None:
        q, k = layer.rotate(q), layer.rotate(k)  # (B, H, T, Dk), (B, H, S, Dk)
    scores = layer.score(q, k)  # (B, H, T, S)
    masked = scores * layer.scale  # (B, H, T, S)
    if mask is not None:
        masked = masked + mask  # (B, H, T, S)
    weights = layer.weigh(masked, mask is not None)  # (B, H, T, S)
    straight_through = bool(keywords.get("straight_through", False))
    soft: Tensor | None = weights
    if weighing == "none":
        soft = None
    elif weighing == "probsparse":  # the lazy rows' weights are constants: only the active rows pass a gradient
        soft = weights * keywords["active"][..., None].to(weights.dtype)  # (B, H, T, S), lazy rows zero
    elif straight_through:
        soft = variants.gumbel_softmax(masked, mask is not None, seed=keywords.get("seed", 0),
                                       temperature=keywords.get("temperature", 1.0))  # (B, H, T, S)
    ctx = merge_heads(weights @ v)  # (B, T, H*Dv)
    out = layer.output(ctx)  # (B, T, D)
    inner = _inner_score(layer.score)
    hidden = _additive_hidden(inner, q, k) if isinstance(inner, variants.AdditiveScore) else None
    row_sums = None
    if weighing == "linear":
        row_sums = masked.masked_fill(torch.isneginf(masked), 0.0).sum(dim=-1, keepdim=True)  # (B, H, T, 1)
    cache = AttentionCache(x=x, keys=keys, values=values, q_full=q_full, k_full=k_full, v_full=v_full,
                           q=q, k=k, v=v, weights=weights, soft=soft, ctx=ctx, scale=float(layer.scale),
                           weighing=weighing, straight_through=straight_through,
                           rotated=layer.rotate is not None, hidden=hidden, row_sums=row_sums)
    return out, cache


def rope_transpose(g: Tensor) -> Tensor:
    """The transpose of RoPE's rotation applied to a gradient (..., L, dim): each pair turned by −θ."""
    length, dim = g.shape[-2], g.shape[-1]
    angles = pos.rope_angles(length, dim)  # (L, dim/2)
    cos, sin = torch.cos(angles).to(g.dtype), torch.sin(angles).to(g.dtype)  # (L, dim/2) each
    a, b = g[..., 0::2], g[..., 1::2]  # (..., L, dim/2) each
    turned = torch.stack((a * cos + b * sin, b * cos - a * sin), dim=-1)  # (..., L, dim/2, 2)
    return turned.flatten(-2)  # (..., L, dim)


def _feature_slope(x: Tensor) -> Tensor:
    """φ'(x) for φ(x) = elu(x) + 1: 1 where x > 0, eˣ elsewhere."""
    return torch.where(x > 0, torch.ones_like(x), torch.exp(x))


def _unit_backward(x: Tensor, unit: Tensor, d_unit: Tensor) -> Tensor:
    """The gradient of x from that of x̂ = x / max(|x|, ε): (dx̂ − x̂ (x̂·dx̂)) / |x| where |x| > ε, dx̂ / ε elsewhere."""
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)  # (..., 1)
    along = (unit * d_unit).sum(dim=-1, keepdim=True)  # (..., 1)
    return torch.where(norm > variants.COSINE_EPS, (d_unit - unit * along) / norm.clamp_min(variants.COSINE_EPS),
                       d_unit / variants.COSINE_EPS)


def softmax_backward(weights: Tensor, upstream: Tensor) -> Tensor:
    """dZ = A ⊙ (dA − rowsum(dA ⊙ A)): the gradient of softmax's input from that of its output."""
    rowsum = (upstream * weights).sum(dim=-1, keepdim=True)  # (B, H, T, 1)
    return weights * (upstream - rowsum)  # (B, H, T, S)


def _linear_backward(x: Tensor, d_out: Tensor, linear: torch.nn.Linear) -> tuple[Tensor, Tensor, Tensor]:
    """For y = x·W + b (W in × out): dW = Σ xᵀ·dy, db = Σ dy, dx = dy·Wᵀ."""
    flat_x = x.reshape(-1, x.shape[-1])  # (B*T, in)
    flat_d = d_out.reshape(-1, d_out.shape[-1])  # (B*T, out)
    d_w = flat_x.T @ flat_d  # (in, out)
    d_b = flat_d.sum(dim=0)  # (out,)
    d_x = d_out @ linear.weight  # (B, T, in): nn.Linear.weight is Wᵀ, so this is dy·Wᵀ
    return d_w, d_b, d_x


def attention_backward(layer: MultiHeadAttention, cache: AttentionCache, upstream: Tensor) -> dict[str, Tensor]:
    """Every gradient of the layer from upstream = dL/d output (B, T, D), batched.

    Weights in × out: w_q, w_k (D, H·Dk), w_v (D, H·Dv), w_o (H·Dv, D); biases b_q, b_k, b_v, b_o.
    Inputs: queries (B, T, D), keys and values (B, S, D) (for self-attention dL/dx is their sum).
    Steps: output (B, T, D) = upstream, concat (B, T, H·Dv), weighted_sum (B, H, T, Dv),
    v (B, H, S, Dv), softmax (B, H, T, S) the weights' gradient, scores (B, H, T, S) the raw
    scores' (the scale factor inside), q (B, H, T, Dk), k (B, H, S, Dk) before the rotation.
    With RoPE also q_rotated, k_rotated; with additive scoring additive_w_q, additive_w_k (H, Dk, A)
    and additive_v (H, A).
    """
    if upstream.shape != cache.ctx.shape[:-1] + (layer.output.out_features,):
        raise ValueError(f"upstream is {tuple(upstream.shape)}; it must be the output's shape "
                         f"{tuple(cache.ctx.shape[:-1]) + (layer.output.out_features,)}")
    grads: dict[str, Tensor] = {"output": upstream}
    grads["w_o"], grads["b_o"], d_ctx = _linear_backward(cache.ctx, upstream, layer.output)
    grads["concat"] = d_ctx  # (B, T, H*Dv)
    d_mixed = split_heads(d_ctx, layer.n_heads)  # (B, H, T, Dv)
    grads["weighted_sum"] = d_mixed
    grads["v"] = cache.weights.transpose(-2, -1) @ d_mixed  # (B, H, S, Dv): Aᵀ·dctx_h
    d_weights = d_mixed @ cache.v.transpose(-2, -1)  # (B, H, T, S): dctx_h·V_hᵀ
    grads["softmax"] = d_weights
    if cache.soft is None:
        d_masked = torch.zeros_like(d_weights)  # (B, H, T, S): one-hot rows do not depend on the scores
    elif cache.row_sums is not None:  # linear: A = Z / rowsum(Z); hidden keys (A = 0 there) get nothing
        sums = cache.row_sums
        centred = d_weights - (d_weights * cache.weights).sum(dim=-1, keepdim=True)  # (B, H, T, S)
        visible = cache.weights > 0  # every visible kernel score is positive, so its weight is too
        d_masked = torch.where(visible, centred / torch.where(sums > 0, sums, torch.ones_like(sums)), 0.0)
    else:
        d_masked = softmax_backward(cache.soft, d_weights)  # (B, H, T, S)
    d_scores = d_masked * cache.scale  # (B, H, T, S)
    grads["scores"] = d_scores
    score = layer.score
    if isinstance(score, variants.Destationary):  # the step's scores are inner · τ + δ: δ is a constant
        d_scores, score = d_scores * score.tau, score.inner  # (B, H, T, S)
    if isinstance(score, variants.GeneralScore):  # S = q W_s kᵀ
        qw = torch.einsum("bhtd,hde->bhte", cache.q, score.w)  # (B, H, T, Dk)
        grads["general_w"] = torch.einsum("bhtd,bhts,bhse->hde", cache.q, d_scores, cache.k)  # (H, Dk, Dk)
        d_q = torch.einsum("bhts,bhse,hde->bhtd", d_scores, cache.k, score.w)  # (B, H, T, Dk): dS·K·W_sᵀ
        d_k = d_scores.transpose(-2, -1) @ qw  # (B, H, S, Dk): dSᵀ·(Q W_s)
    elif score is variants.cosine_scores:  # S = q̂·k̂ᵀ, x̂ = x / max(|x|, ε)
        q_hat, k_hat = variants.unit_rows(cache.q), variants.unit_rows(cache.k)
        d_q = _unit_backward(cache.q, q_hat, d_scores @ k_hat)  # (B, H, T, Dk)
        d_k = _unit_backward(cache.k, k_hat, d_scores.transpose(-2, -1) @ q_hat)  # (B, H, S, Dk)
    elif score is variants.kernel_scores:  # S = φ(q)·φ(k)ᵀ
        d_q = (d_scores @ variants.feature_map(cache.k)) * _feature_slope(cache.q)  # (B, H, T, Dk)
        d_k = (d_scores.transpose(-2, -1) @ variants.feature_map(cache.q)) * _feature_slope(cache.k)  # (B, H, S, Dk)
    elif cache.hidden is None:
        d_q = d_scores @ cache.k  # (B, H, T, Dk): dS·K
        d_k = d_scores.transpose(-2, -1) @ cache.q  # (B, H, S, Dk): dSᵀ·Q
    else:
        assert isinstance(score, variants.AdditiveScore)
        h = cache.hidden  # (B, H, T, S, A)
        grads["additive_v"] = torch.einsum("bhts,bhtsa->ha", d_scores, h)  # (H, A)
        d_pre = d_scores[..., None] * score.v[None, :, None, None, :] * (1 - h * h)  # (B, H, T, S, A)
        d_qa, d_ka = d_pre.sum(dim=3), d_pre.sum(dim=2)  # (B, H, T, A), (B, H, S, A)
        grads["additive_w_q"] = torch.einsum("bhtd,bhta->hda", cache.q, d_qa)  # (H, Dk, A)
        grads["additive_w_k"] = torch.einsum("bhsd,bhsa->hda", cache.k, d_ka)  # (H, Dk, A)
        d_q = torch.einsum("bhta,hda->bhtd", d_qa, score.w_q)  # (B, H, T, Dk)
        d_k = torch.einsum("bhsa,hda->bhsd", d_ka, score.w_k)  # (B, H, S, Dk)
    if cache.rotated:
        grads["q_rotated"], grads["k_rotated"] = d_q, d_k
        d_q, d_k = rope_transpose(d_q), rope_transpose(d_k)  # (B, H, T, Dk), (B, H, S, Dk)
    grads["q"], grads["k"] = d_q, d_k
    grads["w_q"], grads["b_q"], grads["queries"] = _linear_backward(cache.x, merge_heads(d_q), layer.query)
    grads["w_k"], grads["b_k"], grads["keys"] = _linear_backward(cache.keys, merge_heads(d_k), layer.key)
    grads["w_v"], grads["b_v"], grads["values"] = _linear_backward(cache.values, merge_heads(grads["v"]),
                                                                   layer.value)
    return grads
