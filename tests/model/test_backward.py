"""attnscope's own backward pass of attention (model/lab/backward.py) against torch autograd in float64.

The reference is a forward written here with plain torch operations on the layer's parameters,
differentiated by torch.autograd; the worked example's numbers are also computed by hand here.
Tolerance, from float64's precision: two correct computations of a gradient differ by rounding alone, at most
ROUNDING_STEPS · n · ε · G, where n is the longest axis any product sums over, ε = 2⁻⁵² and G the size of the
largest gradient (every gradient is a sum of terms no larger than that). Measured over the examples (printed by
test_measured): well under one n · ε · G.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from model.lab import toy
from model.lab.backward import attention_backward, attention_forward
from model.lab.toy_backward import autograd_gradients, run_toy_backward
from model.lab.toy_backward import compare as page_check
from model.nets.attention import MultiHeadAttention
from tests.properties import examples

EPS = torch.finfo(torch.float64).eps
ROUNDING_STEPS = 64  # roundings along the longest chain of the backward, with room to spare
MEASURED: dict[str, float] = {"units": 0.0, "abs": 0.0}  # worst |diff| in units of n · ε · size, and absolute


def reference_forward(p: dict[str, torch.Tensor], x, keys, values, n_heads, scale, mask=None):
    """Plain scaled dot-product attention; weights in × out, as in the notes."""
    b, t, _ = x.shape
    s = keys.shape[1]
    q = (x @ p["w_q"] + p["b_q"]).reshape(b, t, n_heads, -1).permute(0, 2, 1, 3)
    k = (keys @ p["w_k"] + p["b_k"]).reshape(b, s, n_heads, -1).permute(0, 2, 1, 3)
    v = (values @ p["w_v"] + p["b_v"]).reshape(b, s, n_heads, -1).permute(0, 2, 1, 3)
    z = torch.einsum("bhtd,bhsd->bhts", q, k) * scale
    if mask is not None:
        z = z + mask
    hidden = torch.isneginf(z).all(-1, keepdim=True)
    z = torch.where(hidden, torch.zeros_like(z), z)
    a = torch.where(hidden, torch.zeros_like(z), torch.softmax(z, dim=-1))
    ctx = torch.einsum("bhts,bhsd->bhtd", a, v).permute(0, 2, 1, 3).reshape(b, t, -1)
    return ctx @ p["w_o"] + p["b_o"]


def parameters(layer: MultiHeadAttention) -> dict[str, torch.Tensor]:
    named = {"q": layer.query, "k": layer.key, "v": layer.value, "o": layer.output}
    out = {}
    for n, lin in named.items():
        out[f"w_{n}"] = lin.weight.detach().T.clone().requires_grad_(True)
        out[f"b_{n}"] = lin.bias.detach().clone().requires_grad_(True)
    return out


def random_layer(d_model, n_heads, d_keys, d_values, seed) -> MultiHeadAttention:
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, n_heads, d_keys=d_keys, d_values=d_values).double()
    with torch.no_grad():
        for lin in (layer.query, layer.key, layer.value, layer.output):
            lin.bias.normal_()
    return layer


def compare(mine: torch.Tensor, ref: torch.Tensor | None, name: str, n: int, size: float,
            record: bool = True) -> None:
    """|mine − ref| ≤ ROUNDING_STEPS · n · ε · max(size, max|ref|). `size` is the largest gradient of the
    example (or the output's size): a gradient that is zero in exact arithmetic (b_k: softmax ignores a
    shift of every key's score) holds rounding of terms that large."""
    ref = torch.zeros_like(mine) if ref is None else ref.detach()
    mine = mine.detach()
    assert mine.shape == ref.shape, name
    assert torch.isfinite(mine).all(), name
    diff = float((mine - ref).abs().max()) if mine.numel() else 0.0
    scale = max(size, float(ref.abs().max()) if ref.numel() else 0.0)
    if record:
        MEASURED["abs"] = max(MEASURED["abs"], diff)
        if scale > 0:
            MEASURED["units"] = max(MEASURED["units"], diff / (n * EPS * scale))
    assert diff <= ROUNDING_STEPS * n * EPS * scale, f"{name}: |diff| {diff:.3g} vs n·ε·size {n * EPS * scale:.3g}"


@examples(60)
@given(
    batch=st.integers(1, 3), t=st.integers(1, 6), s=st.integers(1, 6), n_heads=st.integers(1, 3),
    d_model=st.integers(1, 6), d_keys=st.integers(1, 4), d_values=st.integers(1, 4),
    mask_kind=st.sampled_from(["none", "causal", "hidden", "all_hidden_row"]),
    cross=st.booleans(), seed=st.integers(0, 10_000),
)
def test_core_matches_autograd(batch, t, s, n_heads, d_model, d_keys, d_values, mask_kind, cross, seed):
    if not cross:
        s = t
    layer = random_layer(d_model, n_heads, d_keys, d_values, seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, t, d_model, generator=g, dtype=torch.float64)
    keys = torch.randn(batch, s, d_model, generator=g, dtype=torch.float64) if cross else x.clone()
    values = torch.randn(batch, s, d_model, generator=g, dtype=torch.float64) if cross else x.clone()
    upstream = torch.randn(batch, t, d_model, generator=g, dtype=torch.float64)
    mask = None
    if mask_kind == "causal":
        mask = torch.zeros(t, s, dtype=torch.float64).masked_fill(torch.ones(t, s).triu(1).bool(), -math.inf)
    elif mask_kind == "hidden":
        mask = torch.zeros(t, s, dtype=torch.float64)
        mask[:, torch.randint(0, s, (1,), generator=g)] = -math.inf
    elif mask_kind == "all_hidden_row":
        mask = torch.zeros(batch, 1, t, s, dtype=torch.float64)
        mask[0, 0, 0, :] = -math.inf

    n = max(t, s, d_model, n_heads * d_keys, n_heads * d_values)  # the longest sum
    out, cache = attention_forward(layer, x, keys, values, mask)
    with torch.no_grad():
        assert torch.equal(out, layer(x, keys=keys, values=values, mask=mask))
    mine = attention_backward(layer, cache, upstream)

    p = parameters(layer)
    xs = [a.clone().requires_grad_(True) for a in (x, keys, values)]
    ref_out = reference_forward(p, *xs, n_heads, layer.scale, mask)
    ref_out.backward(upstream)
    grads = {**{name: p[name].grad for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")},
             **{name: leaf.grad for name, leaf in zip(("queries", "keys", "values"), xs, strict=True)}}
    size = max(float(g.abs().max()) for g in grads.values())
    compare(out, ref_out, "output", n, size)
    for name, g in grads.items():
        compare(mine[name], g, name, n, size)
    if mask_kind == "all_hidden_row":
        assert torch.equal(mine["scores"][0, :, 0], torch.zeros_like(mine["scores"][0, :, 0]))


def test_upstream_shape_is_checked():
    layer = random_layer(4, 2, None, None, 0)
    _, cache = attention_forward(layer, torch.ones(1, 3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="upstream is"):
        attention_backward(layer, cache, torch.ones(1, 2, 4, dtype=torch.float64))


# ---- The toy: every variant and option against autograd on a forward written here ----

F64 = torch.float64


def sinusoidal_table(n: int, d: int) -> torch.Tensor:
    """P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(p / 10000^(2i/d))."""
    p = torch.arange(n, dtype=F64)[:, None]
    i = torch.arange(d // 2, dtype=F64)[None, :]
    angle = p / 10000.0 ** (2 * i / d)
    return torch.stack((torch.sin(angle), torch.cos(angle)), dim=-1).reshape(n, d)


def rotate(x: torch.Tensor) -> torch.Tensor:
    """RoPE on (L, d): pair (a, b) at position p turned by θ = p·10000^(−2i/d)."""
    n, d = x.shape
    theta = torch.arange(n, dtype=F64)[:, None] * 10000.0 ** (-2 * torch.arange(d // 2, dtype=F64)[None, :] / d)
    a, b = x[:, 0::2], x[:, 1::2]
    return torch.stack((a * torch.cos(theta) - b * torch.sin(theta), a * torch.sin(theta) + b * torch.cos(theta)),
                       dim=-1).reshape(n, d)


def softmax_hidden(z: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis; a row of only −∞ is zeros."""
    hidden = torch.isneginf(z).all(-1, keepdim=True)
    safe = torch.where(hidden, torch.zeros_like(z), z)
    return torch.where(hidden, torch.zeros_like(z), torch.softmax(safe, dim=-1))


def reference_gradients(request: dict, forward: dict, upstream: torch.Tensor, together: bool = False) -> dict:
    """Autograd's gradients of sum(output ⊙ upstream) for a toy request, on a forward written here.

    The weights used, the additive parameters and (for hard, sample and straight-through gumbel) the
    one-hot rows are read from the forward answer as data. `together`: one input X for queries, keys
    and values (self-attention), so autograd's dX is the sum of the three.
    """
    variant = request.get("variant", "scaled_dot")
    tau = request.get("temperature", 1.0)
    positions = request.get("positions", "none")
    h_count, dk, dv = forward["n_heads"], forward["d_keys"], forward["d_values"]
    t = lambda a: torch.tensor(a, dtype=F64)  # noqa: E731
    raw_q = t(request["queries"])
    raw_k = t(request["keys"]) if "keys" in request else raw_q
    raw_v = t(request["values"]) if "values" in request else raw_k
    leaf = {"queries": raw_q.clone().requires_grad_(True)}
    if together:
        xq = xk = xv = leaf["queries"]
    else:
        leaf["keys"] = raw_k.clone().requires_grad_(True)
        leaf["values"] = raw_v.clone().requires_grad_(True)
        xq, xk, xv = leaf["queries"], leaf["keys"], leaf["values"]
    n_t, n_s, d = xq.shape[0], xk.shape[0], xq.shape[1]
    if positions == "sinusoidal":
        xq, xk, xv = xq + sinusoidal_table(n_t, d), xk + sinusoidal_table(n_s, d), xv + sinusoidal_table(n_s, d)
    p = {f"w_{n}": t(forward["weights"][n]).requires_grad_(True) for n in "qkvo"}
    p.update({f"b_{n}": torch.zeros(p[f"w_{n}"].shape[1], dtype=F64, requires_grad=True) for n in "qkvo"})
    add = {}
    if variant == "additive":
        add = {f"additive_{n}": t(forward["additive"][n]).requires_grad_(True) for n in ("w_q", "w_k", "v")}
    if variant == "general":
        add = {"general_w": torch.as_tensor(forward["general_w"], dtype=F64).detach().clone().requires_grad_(True)}
    ds_tau, ds_delta = request.get("tau", 1.0), request.get("delta", 0.0)  # the de-stationary factors
    ds_delta = t(ds_delta) if isinstance(ds_delta, list) else ds_delta
    q_all, k_all, v_all = xq @ p["w_q"] + p["b_q"], xk @ p["w_k"] + p["b_k"], xv @ p["w_v"] + p["b_v"]
    scale = (1.0 if variant in ("dot", "additive", "linear", "general") else 1 / math.sqrt(dk)) / tau
    if variant == "cosine":
        scale = request.get("scale", math.sqrt(dk)) / tau
    kept: dict[str, list[torch.Tensor]] = {n: [] for n in ("q", "k", "v", "scores", "softmax", "weighted_sum")}
    ctxs = []
    for h in range(h_count):
        qh, kh, vh = q_all[:, h * dk:(h + 1) * dk], k_all[:, h * dk:(h + 1) * dk], v_all[:, h * dv:(h + 1) * dv]
        for name, x in (("q", qh), ("k", kh), ("v", vh)):
            x.retain_grad()
            kept[name].append(x)
        if positions == "rope":
            qh, kh = rotate(qh), rotate(kh)
        if variant == "additive":
            hid = torch.tanh((qh @ add["additive_w_q"][h])[:, None, :] + (kh @ add["additive_w_k"][h])[None, :, :])
            s = hid @ add["additive_v"][h]
        elif variant == "linear":  # Katharopoulos et al.'s φ(x) = elu(x) + 1
            s = (torch.nn.functional.elu(qh) + 1) @ (torch.nn.functional.elu(kh) + 1).T
        elif variant == "general":  # Luong: q W_s kᵀ
            s = qh @ add["general_w"][h] @ kh.T
        elif variant == "cosine":
            s = torch.nn.functional.normalize(qh, dim=-1) @ torch.nn.functional.normalize(kh, dim=-1).T
        else:
            s = qh @ kh.T
        s = s * ds_tau + ds_delta  # Non-stationary Transformers: scores · τ + δ (the scores step shows these)
        s.retain_grad()
        kept["scores"].append(s)
        z = s * scale
        if request.get("causal"):
            z = z.masked_fill(torch.ones(n_t, n_s).triu(1).bool(), -math.inf)
        for j in request.get("hidden_keys", []):
            z = z.index_fill(1, torch.tensor([j]), -math.inf)
        if positions == "alibi":
            slope = 2.0 ** (-8.0 * (h + 1) / h_count)
            z = z - slope * (torch.arange(n_t, dtype=F64)[:, None] - torch.arange(n_s, dtype=F64)[None, :]).abs()
        one_hot = t(forward["steps"]["softmax"][h])
        if variant == "gumbel":
            u = torch.rand((1, h_count, n_t, n_s), generator=torch.Generator().manual_seed(request.get("seed", 0)),
                           dtype=F64).clamp_min(torch.finfo(F64).tiny)[0, h]
            soft = softmax_hidden(z + -torch.log(-torch.log(u)) / tau)
            a = one_hot + soft - soft.detach() if request.get("straight_through") else soft
        elif variant in ("hard", "sample"):
            a = one_hot
        elif variant == "probsparse":  # the active rows' softmax; the lazy rows' weights are data (constants)
            rows = torch.zeros(n_t, 1, dtype=torch.bool)
            rows[forward["probsparse"]["active"][h]] = True
            a = torch.where(rows, softmax_hidden(z), one_hot)
        elif variant == "linear":  # each row over its sum, hidden keys left out
            kept_z = torch.where(torch.isneginf(z), torch.zeros_like(z), z)
            sums = kept_z.sum(-1, keepdim=True)
            a = kept_z / torch.where(sums > 0, sums, torch.ones_like(sums))
        else:
            a = softmax_hidden(z)
        if a.requires_grad:
            a.retain_grad()
        kept["softmax"].append(a)
        c = a @ vh
        c.retain_grad()
        kept["weighted_sum"].append(c)
        ctxs.append(c)
    concat = torch.cat(ctxs, dim=1)
    concat.retain_grad()
    out = concat @ p["w_o"] + p["b_o"]
    out.backward(upstream)
    zero = lambda x: torch.zeros_like(x) if x.grad is None else x.grad  # noqa: E731
    grads = {name: zero(x) for name, x in {**p, **add, **leaf}.items()}
    for name, xs in kept.items():
        if name != "softmax" or xs[0].requires_grad:
            grads[name] = torch.stack([zero(x) for x in xs])
    grads["concat"] = concat.grad
    grads["output"] = upstream
    return grads


def as_tensors(answer: dict) -> dict:
    return {n: g if isinstance(g, torch.Tensor) else torch.tensor(g, dtype=F64)
            for n, g in answer.items() if g is not None}


def longest_sum(request: dict, forward: dict | None = None) -> int:
    """n of the bound: the longest axis of the toy request (rows, model width, heads' widths, the additive
    scorer's width, read from the forward answer)."""
    n_t, d = len(request["queries"]), len(request["queries"][0])
    n_s = len(request.get("keys", request["queries"]))
    w = request.get("weights")
    widths = (len(w["q"][0]), len(w["v"][0])) if w else ()
    additive = (forward or {}).get("additive")
    d_attn = len(additive["v"][0]) if additive else 0  # v: (heads, d_attn)
    return max(n_t, n_s, d, *widths, d_attn)


def check_against_reference(mine: dict, ref: dict, n: int) -> float:
    """Every gradient of `ref` in `mine`, within the rounding bound; returns the largest gradient's size."""
    size = max(float(g.abs().max()) for g in ref.values() if g.numel())
    for name, r in ref.items():
        compare(mine[name], r, name, n, size)
    return size


@st.composite
def toy_requests(draw):
    variant = draw(st.sampled_from(["scaled_dot", "dot", "additive", "hard", "sample", "gumbel", "linear", "general",
                                    "cosine"]))  # probsparse: its own rules (tests/model/test_probsparse.py)
    positions = draw(st.sampled_from(["none", "sinusoidal", "rope"] + ([] if variant == "linear" else ["alibi"])))
    n_heads = draw(st.integers(1, 3))
    d_model = draw(st.integers(1, 6))
    d_model += d_model % 2 if positions == "sinusoidal" else 0
    d_keys = 2 * draw(st.integers(1, 2)) if positions == "rope" else draw(st.integers(1, 4))
    d_values = draw(st.integers(1, 4))
    n_t, cross = draw(st.integers(1, 5)), draw(st.booleans())
    n_s = draw(st.integers(1, 5)) if cross else n_t
    seed = draw(st.integers(0, 1000))
    g = torch.Generator().manual_seed(seed)
    m = lambda r, c, s=1.0: (torch.randn(r, c, generator=g, dtype=F64) * s).tolist()  # noqa: E731
    req = {"queries": m(n_t, d_model), "n_heads": n_heads, "d_keys": d_keys, "d_values": d_values,
           "variant": variant, "positions": positions, "seed": seed,
           "temperature": draw(st.sampled_from([1.0, 0.5, 2.5])), "causal": draw(st.booleans()),
           "hidden_keys": draw(st.lists(st.integers(0, n_s - 1), unique=True, max_size=n_s)),
           "weights": {"q": m(d_model, n_heads * d_keys, 0.7), "k": m(d_model, n_heads * d_keys, 0.7),
                       "v": m(d_model, n_heads * d_values, 0.7), "o": m(n_heads * d_values, d_model, 0.7)}}
    if cross:
        req["keys"], req["values"] = m(n_s, d_model), m(n_s, d_model)
    if variant == "gumbel":
        req["straight_through"] = draw(st.booleans())
    return req, torch.tensor(m(n_t, d_model), dtype=F64)


def _run(req: dict, upstream: torch.Tensor | None = None) -> dict:
    kw = {k: v for k, v in req.items() if k not in ("queries", "keys", "values", "n_heads", "weights", "causal")}
    return run_toy_backward(req.get("queries"), req.get("keys"), req.get("values"), req.get("n_heads"),
                            req.get("weights"), req.get("causal", False),
                            upstream=None if upstream is None else upstream.tolist(), **kw)


def _forward_lists(forward: dict) -> dict:
    """The forward answer's tensors as lists, as the reference reads them."""
    additive = forward["additive"]
    return {**forward, "weights": {n: w.tolist() for n, w in forward["weights"].items()},
            "additive": None if additive is None else {n: a.tolist() for n, a in additive.items()},
            "steps": {"softmax": forward["steps"]["softmax"].tolist()}}

# Found on another machine at 1.16e-10 of a relative limit of 1e-10 that the last bits of float64 sums decided
# (scaled dot, ALiBi, temperature 0.5, d_keys = d_values = 1, five queries): the bound now follows from ε.
def rounding_case() -> tuple[dict, torch.Tensor]:
    """The toy_requests() draw with these choices and seed 4 (its matrices drawn in the same order)."""
    g = torch.Generator().manual_seed(4)
    m = lambda r, c, s=1.0: (torch.randn(r, c, generator=g, dtype=F64) * s).tolist()  # noqa: E731
    req = {"queries": m(5, 4), "n_heads": 2, "d_keys": 1, "d_values": 1, "variant": "scaled_dot",
           "positions": "alibi", "seed": 4, "temperature": 0.5, "causal": False, "hidden_keys": [],
           "weights": {"q": m(4, 2, 0.7), "k": m(4, 2, 0.7), "v": m(4, 2, 0.7), "o": m(2, 4, 0.7)}}
    return req, torch.tensor(m(5, 4), dtype=F64)


@example(rounding_case())
@examples(150)
@given(toy_requests())
def test_toy_backward_matches_autograd_for_every_variant(case):
    req, upstream = case
    answer = _run(req, upstream)
    forward = _forward_lists(answer["forward"])
    mine = as_tensors(answer["gradients"])
    n = longest_sum(req, forward)
    size = check_against_reference(mine, reference_gradients(req, forward, upstream), n)
    if "keys" not in req:  # self-attention: dL/dX is the sum of the three partial gradients
        together = reference_gradients(req, forward, upstream, together=True)
        compare(mine["input"], together["queries"], "input", n, size)
    if req["variant"] in ("hard", "sample"):
        assert answer["flow"] == "none"
        for name in ("scores", "q", "k", "w_q", "w_k", "b_q", "b_k"):
            assert not mine[name].any(), name
    check = answer["check"]  # what the page's "matches torch.autograd" stands on
    assert check["max_abs_diff"] <= ROUNDING_STEPS * n * EPS * size
    assert check["max_rel_diff"] <= check["bound"] == ROUNDING_STEPS * n * EPS
    for name, g in mine.items():
        assert torch.isfinite(g).all(), name


def test_fully_hidden_rows_get_zero_gradient_not_nan():
    req = {"queries": [[1.0, 2.0], [0.5, -1.0]], "keys": [[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]],
           "values": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], "n_heads": 1, "hidden_keys": [0, 1, 2]}
    answer = _run(req)
    g = as_tensors(answer["gradients"])
    for name in ("scores", "q", "k", "v", "w_q", "w_k", "w_v", "queries", "keys", "values"):
        assert torch.isfinite(g[name]).all() and not g[name].any(), name
    assert torch.equal(g["b_o"], torch.tensor([2.0, 2.0], dtype=F64))  # Σ_t upstream[t]: b_o still learns
    assert not g["w_o"].any()  # W_o's input, the context, is zeros
    # the page's check stands on torch.autograd through the same forward: finite there too, and equal
    setup = toy.prepare_toy(req["queries"], req["keys"], req["values"], 1, None, False, hidden_keys=[0, 1, 2])
    reference = autograd_gradients(setup, torch.ones(2, 2, dtype=F64))
    assert all(torch.isfinite(r).all() for r in reference.values() if r is not None)
    assert answer["check"]["max_rel_diff"] <= answer["check"]["bound"]


def test_a_nan_in_the_reference_fails_the_check():
    mine = {"scores": torch.zeros(2, 2, dtype=F64)}
    check = page_check(mine, {"scores": torch.tensor([[0.0, math.nan], [1.0, 0.0]], dtype=F64)}, n=2)
    assert check["max_rel_diff"] > check["bound"] and check["worst"] == "scores"


# ---- The worked example, by hand ----

SQ2 = math.sqrt(2.0)


def _softmax(row):
    e = [math.exp(x) for x in row]
    return [x / sum(e) for x in e]


def test_worked_example_by_hand(capsys):
    """queries X (4 x 4), keys = X, values V, identity weights, 2 heads (d_keys 2, scale 1/√2),
    upstream all ones. Head 0 reads columns 0 and 1: q = k = [1,0], [0,1], [1,1], [2,0];
    its values are V's columns 0, 1: [10,11], [12,13], [14,15], [16,17]."""
    answer = _run({})
    g = answer["gradients"]
    # head 0's raw scores q_t · k_j, row by row, then the weights A_t = softmax(scores_t / √2)
    scores = [[1, 0, 1, 2], [0, 1, 1, 0], [1, 1, 2, 2], [2, 0, 2, 4]]
    a = [_softmax([s / SQ2 for s in row]) for row in scores]
    v0 = [[10, 11], [12, 13], [14, 15], [16, 17]]
    # concat[t][0] = Σ_j A_t[j] · V[j][0]; dW_o[0][0] = Σ_t concat[t][0] · upstream[t][0] (upstream = 1)
    concat0 = [sum(a[t][j] * v0[j][0] for j in range(4)) for t in range(4)]
    dw_o_00 = sum(concat0[t] * 1.0 for t in range(4))
    # dctx = upstream · W_oᵀ = ones (W_o = I), so dV_0[j][c] = Σ_t A_t[j] · 1
    dv_00 = sum(a[t][0] for t in range(4))
    # dA_t[j] = Σ_c dctx[t][c] · V[j][c] = V[j][0] + V[j][1] = 21, 25, 29, 33 for every t
    da = [v0[j][0] + v0[j][1] for j in range(4)]
    assert da == [21, 25, 29, 33]
    # dS_0[j] = A_0[j] · (dA[j] − Σ_j' A_0[j'] · dA[j']) / √2 (the gradient of the raw scores)
    mean0 = sum(a[0][j] * da[j] for j in range(4))
    ds_0 = [a[0][j] * (da[j] - mean0) / SQ2 for j in range(4)]
    # dQ_0[0] = Σ_j dS_0[j] · K[j][0], K's column 0 = 1, 0, 1, 2
    dq_00 = ds_0[0] * 1 + ds_0[1] * 0 + ds_0[2] * 1 + ds_0[3] * 2
    got = {"dW_o[0][0]": (float(g["w_o"][0][0]), dw_o_00), "dV[h0][0][0]": (float(g["v"][0][0][0]), dv_00),
           "dS[h0][0][3]": (float(g["scores"][0][0][3]), ds_0[3]), "dQ[h0][0][0]": (float(g["q"][0][0][0]), dq_00)}
    worst = max(abs(x - y) for x, y in got.values())
    with capsys.disabled():
        print("\nworked example by hand: " + ", ".join(f"{k} {y:.6g}" for k, (_, y) in got.items())
              + f"; max |difference| {worst:.3g}; check.max_abs_diff {answer['check']['max_abs_diff']:.3g}")
    for name, (x, y) in got.items():
        assert abs(x - y) <= 1e-12 * max(1.0, abs(y)), name
    # the control: without the × scale factor dS would be √2 times larger, which the answer is not
    assert abs(float(g["scores"][0][0][3]) - ds_0[3] * SQ2) > 1e-3


def test_dropping_the_scale_factor_is_caught():
    """The control: a backward that forgets × scale differs from autograd by far more than the tolerance."""
    req = {"queries": [[1.0, 0.5, -1.0, 2.0], [0.0, 1.0, 1.5, -0.5], [2.0, -1.0, 0.0, 1.0]], "n_heads": 2}
    answer = _run(req)
    ref = reference_gradients(req, _forward_lists(answer["forward"]), torch.ones(3, 4, dtype=F64))
    mine = as_tensors(answer["gradients"])
    n, size = longest_sum(req), max(float(g.abs().max()) for g in ref.values())
    compare(mine["scores"], ref["scores"], "scores", n, size)
    wrong = mine["scores"] * math.sqrt(2.0)  # dZ without the factor 1/√d_keys
    with pytest.raises(AssertionError):
        compare(wrong, ref["scores"], "scores without the scale", n, size, record=False)


def test_measured(capsys):
    with capsys.disabled():
        print(f"\nbackward vs autograd over every run: max |diff| {MEASURED['units']:.3g} n·ε·size "
              f"(bound {ROUNDING_STEPS}), max abs {MEASURED['abs']:.3g}")
