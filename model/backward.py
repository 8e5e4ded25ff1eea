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

Variants (model/variants.py), recognised from the layer's `score`, `weigh` and `rotate`:
  scoring   `attention_scores` (dot product) or an AdditiveScore (backward through the tanh into
            its w_q, w_k, v and into q, k);
  weighting `softmax_rows` (the formula above); `hard_weights` and `sample_weights` (one-hot rows
            that do not depend on the scores: the scores receive no gradient, zeros);
            `gumbel_weights` (the formula above with the Gumbel-softmax weights; with
            straight_through the forward uses the one-hot rows and the backward the soft weights);
  rotation  None or `positions.rope`: the rotation is linear and orthogonal, so the gradient of
            the un-rotated q is the gradient of the rotated q turned back by −θ.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch

from . import positions as pos
from . import toy, variants
from .attention import MultiHeadAttention, attention_scores, merge_heads, softmax_rows, split_heads
from .errors import ToyShapeError
from .toy import ToySetup
from .trace import LayerRecorder

Tensor = torch.Tensor

WEIGHINGS = ("softmax", "gumbel", "none")  # how the weights pass a gradient to the scores


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


def _weighing(weigh: Any) -> tuple[str, dict[str, Any]]:
    """Which backward the layer's weighting has: softmax, gumbel (with its keywords) or none."""
    func, keywords = (weigh.func, dict(weigh.keywords)) if isinstance(weigh, partial) else (weigh, {})
    if func is softmax_rows:
        return "softmax", keywords
    if func is variants.gumbel_weights:
        return "gumbel", keywords
    if func in (variants.hard_weights, variants.sample_weights):
        return "none", keywords
    raise ValueError(f"no backward for the weighting {weigh!r}; use a weighting of model/variants.py")


def scores_get_gradient(layer: MultiHeadAttention) -> bool:
    """Whether the layer's weights pass a gradient back to the scores (not for hard and sample)."""
    return _weighing(layer.weigh)[0] != "none"


def _check_score(layer: MultiHeadAttention) -> None:
    if layer.score is not attention_scores and not isinstance(layer.score, variants.AdditiveScore):
        raise ValueError(f"no backward for the scoring {layer.score!r}; use attention_scores or AdditiveScore")
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
    elif straight_through:
        soft = variants.gumbel_softmax(masked, mask is not None, seed=keywords.get("seed", 0),
                                       temperature=keywords.get("temperature", 1.0))  # (B, H, T, S)
    ctx = merge_heads(weights @ v)  # (B, T, H*Dv)
    out = layer.output(ctx)  # (B, T, D)
    hidden = _additive_hidden(layer.score, q, k) if isinstance(layer.score, variants.AdditiveScore) else None
    cache = AttentionCache(x=x, keys=keys, values=values, q_full=q_full, k_full=k_full, v_full=v_full,
                           q=q, k=k, v=v, weights=weights, soft=soft, ctx=ctx, scale=float(layer.scale),
                           weighing=weighing, straight_through=straight_through,
                           rotated=layer.rotate is not None, hidden=hidden)
    return out, cache


def rope_transpose(g: Tensor) -> Tensor:
    """The transpose of RoPE's rotation applied to a gradient (..., L, dim): each pair turned by −θ."""
    length, dim = g.shape[-2], g.shape[-1]
    angles = pos.rope_angles(length, dim)  # (L, dim/2)
    cos, sin = torch.cos(angles).to(g.dtype), torch.sin(angles).to(g.dtype)  # (L, dim/2) each
    a, b = g[..., 0::2], g[..., 1::2]  # (..., L, dim/2) each
    turned = torch.stack((a * cos + b * sin, b * cos - a * sin), dim=-1)  # (..., L, dim/2, 2)
    return turned.flatten(-2)  # (..., L, dim)


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
    else:
        d_masked = softmax_backward(cache.soft, d_weights)  # (B, H, T, S)
    d_scores = d_masked * cache.scale  # (B, H, T, S)
    grads["scores"] = d_scores
    if cache.hidden is None:
        d_q = d_scores @ cache.k  # (B, H, T, Dk): dS·K
        d_k = d_scores.transpose(-2, -1) @ cache.q  # (B, H, S, Dk): dSᵀ·Q
    else:
        score = layer.score
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


# ---- The toy's backward pass (POST /api/v1/toy/backward) ----

REFERENCE = "torch.autograd float64"
NOTES = {
    "softmax": "The scores receive the softmax's gradient: dZ = A ⊙ (dA − rowsum(dA ⊙ A)), dS = dZ × scale.",
    "none": "The weights are one-hot rows that do not depend on the scores, so the scores, q, k, W_q, W_k, "
            "b_q and b_k receive no gradient (zeros); only the values' path carries one.",
    "straight_through": "Straight-through: the forward used the one-hot rows, the backward passes the "
                        "Gumbel-softmax weights' gradient to the scores.",
}


def _flow(setup: ToySetup) -> str:
    if variants.is_hard(setup.variant, setup.straight_through):
        return "straight_through" if setup.straight_through else "none"
    return "softmax"


def _upstream(setup: ToySetup, upstream: Sequence[Sequence[float]] | None) -> Tensor:
    """The gradient of the output (T, D): the one sent, checked, or all ones."""
    t, d = setup.x_q.shape[0], setup.x_q.shape[1]
    if upstream is None:
        return torch.ones(t, d, dtype=torch.float64)  # (T, D): the gradient of the sum of the outputs
    given = toy.checked_matrix(("upstream",), upstream)  # (rows, cols)
    if tuple(given.shape) != (t, d):
        rows, cols = given.shape
        raise ToyShapeError("toy_upstream_shape", ("upstream",),
                            f"upstream is {rows}x{cols}; it is the gradient of the output, so it must be "
                            f"{t}x{d} (one row per query, d_model columns)",
                            rows=rows, cols=cols, want_rows=t, want_cols=d)
    return given


class _KeepGraph(LayerRecorder):
    """Keeps every step's tensor without detaching it, so autograd can differentiate with respect to it."""

    def __init__(self) -> None:
        super().__init__({}, frozenset())
        self.kept: dict[str, Any] = {}

    def wants(self, step: str) -> bool:
        return True  # also keeps the scale step out of place

    def __call__(self, step: str, value: Any) -> None:
        self.kept[step] = value


def _straight_through(seed: int, temperature: float) -> Any:
    """Gumbel straight-through for autograd: the one-hot rows forward, the soft weights' gradient backward."""
    def weigh(masked: Tensor, any_hidden: bool) -> Tensor:
        soft = variants.gumbel_softmax(masked, any_hidden, seed=seed, temperature=temperature)  # (B, H, T, S)
        hard = variants.one_hot_rows(soft.argmax(dim=-1, keepdim=True), masked)  # (B, H, T, S)
        return hard + (soft - soft.detach())
    return weigh


def autograd_gradients(setup: ToySetup, upstream: Tensor) -> dict[str, Tensor | None]:
    """The same gradients from torch.autograd on the layer's own forward (float64), None where autograd
    finds no path (a zero gradient). Names as attention_backward's, batch axis kept."""
    layer = copy.deepcopy(setup.layer)
    leaves = [t.detach().clone().requires_grad_(True) for t in setup.sent]  # (T, D), (S, D), (S, D)
    x_q, x_k, x_v = leaves if setup.table is None else (  # the sinusoidal table is added inside the graph
        leaf + p for leaf, p in zip(leaves, setup.table, strict=True))
    extra: dict[str, Tensor] = {}
    if setup.adder is not None:
        extra = {f"additive_{n}": getattr(setup.adder, n).detach().clone().requires_grad_(True)
                 for n in ("w_q", "w_k", "v")}
        layer.score = variants.AdditiveScore(w_q=extra["additive_w_q"], w_k=extra["additive_w_k"],
                                             v=extra["additive_v"])
    if setup.straight_through:
        layer.weigh = _straight_through(setup.seed, setup.temperature)
    keep = _KeepGraph()
    out = layer(x_q[None], keys=x_k[None], values=x_v[None], mask=setup.mask, record=keep)  # (1, T, D)
    steps = keep.kept
    linears = {"q": layer.query, "k": layer.key, "v": layer.value, "o": layer.output}
    wrt: dict[str, Tensor] = {
        **{f"w_{n}": lin.weight for n, lin in linears.items()}, **{f"b_{n}": lin.bias for n, lin in linears.items()},
        "queries": leaves[0], "keys": leaves[1], "values": leaves[2], **extra,
        "project_q": steps["project"]["q"], "project_k": steps["project"]["k"], "project_v": steps["project"]["v"],
        "split_q": steps["split"]["q"], "split_k": steps["split"]["k"], "v": steps["split"]["v"],
        "scores": steps["scores"], "softmax": steps["softmax"], "weighted_sum": steps["weighted_sum"],
        "concat": steps["concat"],
    }
    wrt = {name: t for name, t in wrt.items() if t.requires_grad}
    found = torch.autograd.grad(out, list(wrt.values()), grad_outputs=upstream[None], allow_unused=True)
    grads: dict[str, Tensor | None] = dict(zip(wrt, found, strict=True))
    for n in linears:
        g = grads[f"w_{n}"]
        grads[f"w_{n}"] = None if g is None else g.T  # nn.Linear keeps Wᵀ; the toy's weights are in x out
    for part in ("q", "k"):
        full = grads.pop(f"project_{part}")
        grads[part] = None if full is None else split_heads(full.contiguous(), layer.n_heads)  # (B, H, L, Dk)
        rotated = grads.pop(f"split_{part}")
        if setup.positions == "rope":
            grads[f"{part}_rotated"] = rotated
    grads.pop("project_v")
    grads["output"] = upstream[None]
    return grads


# float64 rounding between two correct backward passes: every gradient is a chain of fewer than ROUNDING_STEPS
# sums and products of at most n terms (n: the longest of the toy's axes), each rounded by at most ε = 2⁻⁵², and
# each term is at most the size of the largest gradient G (the gradients are those terms' sums). So the two can
# differ by at most ROUNDING_STEPS · n · ε · G. Measured (tests/model/test_backward.py under make test-explore,
# 4,200 random toys and layers): at most 3.6 · n · ε · G.
ROUNDING_STEPS = 64
EPS = torch.finfo(torch.float64).eps


def longest_sum(setup: toy.ToySetup) -> int:
    """n of the bound: the longest axis a matrix product of the forward or backward sums over."""
    layer = setup.layer
    widths = (layer.n_heads * layer.d_keys, layer.n_heads * layer.d_values)
    d_attn = () if setup.adder is None else (int(setup.adder.v.shape[-1]),)
    return max(setup.x_q.shape[0], setup.x_k.shape[0], setup.x_q.shape[1], *widths, *d_attn)


def compare(mine: dict[str, Tensor], reference: dict[str, Tensor | None], n: int) -> dict[str, Any]:
    """The largest |mine − reference| over every gradient the reference has; the same relative to the
    largest gradient G (max_rel_diff); and `bound`, the largest max_rel_diff float64 rounding can explain
    (ROUNDING_STEPS · n · ε). The check passes when max_rel_diff ≤ bound.

    Relative to G, not to each gradient's own size: a gradient that is zero in exact arithmetic (the key
    bias's: softmax ignores a shift of a whole row of scores) holds only rounding of terms as large as G.
    """
    pairs = {name: (mine[name].detach(), None if ref is None else ref.detach()) for name, ref in reference.items()}
    largest = max((float(ref.abs().max()) for _, ref in pairs.values() if ref is not None and ref.numel()),
                  default=0.0)
    worst_abs, worst_name = 0.0, ""
    for name, (got, ref) in pairs.items():
        ref_t = torch.zeros_like(got) if ref is None else ref
        diff = float((got - ref_t).abs().max()) if got.numel() else 0.0
        if math.isnan(diff):  # a NaN on either side is a failed check, never a skipped one
            diff = math.inf
        if diff > worst_abs:
            worst_abs, worst_name = diff, name
    worst_rel = worst_abs / largest if largest > 0 else (0.0 if worst_abs == 0 else math.inf)
    return {"max_abs_diff": worst_abs, "max_rel_diff": worst_rel, "bound": ROUNDING_STEPS * n * EPS,
            "worst": worst_name or None, "compared": sorted(reference), "reference": REFERENCE}


def run_toy_backward(
    queries: Sequence[Sequence[float]] | None = None,
    keys: Sequence[Sequence[float]] | None = None,
    values: Sequence[Sequence[float]] | None = None,
    n_heads: int | None = None,
    weights: Mapping[str, Sequence[Sequence[float]]] | None = None,
    causal: bool = False,
    *,
    upstream: Sequence[Sequence[float]] | None = None,
    **options: Any,
) -> dict[str, Any]:
    """The toy (run_toy's arguments) forward and backward: {"forward": the /toy answer, "gradients": every
    gradient of attention_backward with the batch axis dropped, "check": the comparison with
    torch.autograd on the same forward, "flow": how the scores get their gradient (softmax, none,
    straight_through), "note", "upstream" (T, D) used, "upstream_default"}.
    `gradients["input"]` is dL/dx of self-attention (queries + keys + values) when keys and values were
    not sent, else None. Raises ToyShapeError for a bad request (TOY_RULES, BACKWARD_RULES)."""
    setup = toy.prepare_toy(queries, keys, values, n_heads, weights, causal, **options)
    up = _upstream(setup, upstream)  # (T, D)
    forward = toy.trace_toy(setup)
    with torch.no_grad():
        _, cache = attention_forward(setup.layer, setup.x_q[None], setup.x_k[None], setup.x_v[None],
                                     setup.mask)
        grads = attention_backward(setup.layer, cache, up[None])
    check = compare(grads, autograd_gradients(setup, up), longest_sum(setup))
    batched = {"output", "concat", "weighted_sum", "v", "softmax", "scores", "q", "k", "q_rotated", "k_rotated",
               "queries", "keys", "values"}
    answer: dict[str, Tensor | None] = {name: g[0] if name in batched else g for name, g in grads.items()}
    self_attention = not setup.keys_sent and not setup.values_sent
    answer["input"] = grads["queries"][0] + grads["keys"][0] + grads["values"][0] if self_attention else None
    flow = _flow(setup)
    return {"forward": forward, "gradients": answer, "check": check, "flow": flow, "note": NOTES[flow],
            "upstream": up, "upstream_default": upstream is None}
