"""The toy's backward pass (POST /api/v1/toy/backward): the pure backward of model/lab/backward.py on the
toy's layer, every gradient checked against torch.autograd on the same forward, with a stated bound.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from model.errors import ToyShapeError
from model.lab import toy, variants
from model.lab.backward import attention_backward, attention_forward
from model.lab.toy import ToySetup
from model.nets.attention import split_heads
from model.trace import LayerRecorder

Tensor = torch.Tensor

REFERENCE = "torch.autograd float64"
NOTES = {
    "softmax": "The scores receive the softmax's gradient: dZ = A ⊙ (dA − rowsum(dA ⊙ A)), dS = dZ × scale.",
    "none": "The weights are one-hot rows that do not depend on the scores, so the scores, q, k, W_q, W_k, "
            "b_q and b_k receive no gradient (zeros); only the values' path carries one.",
    "straight_through": "Straight-through: the forward used the one-hot rows, the backward passes the "
                        "Gumbel-softmax weights' gradient to the scores.",
    "probsparse": "ProbSparse: only the active queries' rows went through a softmax, so only their scores get "
                  "the gradient dZ = A ⊙ (dA − rowsum(dA ⊙ A)), dS = dZ × scale; the lazy rows' weights are "
                  "constants (1/S, or 1 up to the row under a causal mask), so their scores get zero, while the "
                  "values still get Aᵀ·dctx from every row.",
    "linear": "Linear attention: each row was divided by its sum, so dZ = (dA − rowsum(dA ⊙ A)) / rowsum(Z), "
              "dS = dZ × scale, and q and k get it through φ'(x) (1 for x > 0, eˣ otherwise).",
}


def _flow(setup: ToySetup) -> str:
    if variants.is_hard(setup.variant, setup.straight_through):
        return "straight_through" if setup.straight_through else "none"
    return setup.variant if setup.variant in ("linear", "probsparse") else "softmax"


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
    score = layer.score
    if setup.adder is not None:
        extra = {f"additive_{n}": getattr(setup.adder, n).detach().clone().requires_grad_(True)
                 for n in ("w_q", "w_k", "v")}
        score = variants.AdditiveScore(w_q=extra["additive_w_q"], w_k=extra["additive_w_k"], v=extra["additive_v"])
    if setup.general is not None:
        extra = {"general_w": setup.general.w.detach().clone().requires_grad_(True)}
        score = variants.GeneralScore(extra["general_w"])
    if extra:  # the scorer's own parameters as leaves, inside the de-stationary factors when there are any
        wrapped = layer.score
        layer.score = variants.Destationary(score, wrapped.tau, wrapped.delta) if isinstance(
            wrapped, variants.Destationary) else score
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
