"""The worked example from the course notes, and small hand-made inputs.

d_model 4, 2 heads, identity projections and zero biases, so every number can
be followed by hand. Computed in float64 so the example's numbers are exact.

Beyond the example: the variants of model/lab/variants.py, per-head widths d_keys / d_values,
hidden keys beside the causal mask, and positions (sinusoidal, RoPE, ALiBi). A missing square
weight is the identity; a missing weight that is not square (d_keys or d_values off d_model / H)
is seeded: N(0, 1) / sqrt(rows) rounded to 2 decimals, drawn from
torch.Generator().manual_seed(seed + stream), streams q 1, k 2, v 3, o 4. The default additive
parameters (d_attn = d_keys) are drawn the same way, streams w_q 5, w_k 6, v 7.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import torch

from model.errors import Ctx, ToyShapeError
from model.lab import probsparse, variants
from model.lab.toy_options import (  # noqa: F401 (ADDITIVE_STREAMS: the toy's documented streams)
    ADDITIVE_STREAMS,
    GENERAL_STREAM,
    MAX_SIDE,
    POSITIONS,
    additive_parameters,
    check_settings,
    scoring_options,
    seeded,
)
from model.nets import positions as pos
from model.nets.attention import MultiHeadAttention, causal_mask
from model.trace import Trace, select

WORKED_QUERIES = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]]
WORKED_VALUES = [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]]
WORKED_N_HEADS = 2

MAX_ABS = 1e6  # largest magnitude of a toy number (keeps every step finite)
WEIGHT_NAMES = ("q", "k", "v", "o")
WEIGHT_STREAMS = {"q": 1, "k": 2, "v": 3, "o": 4}

Matrix = Sequence[Sequence[float]]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def checked_matrix(loc: tuple[str, ...], rows: Matrix) -> torch.Tensor:
    """A validated float64 matrix; ToyShapeError names the rule, and the field (`loc`), row or cell at fault."""
    name = ".".join(loc)
    if not rows or not rows[0]:
        raise ToyShapeError("toy_empty", loc, f"{name} is empty; send at least one row with one number")
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ToyShapeError("toy_ragged", (*loc, str(i)),
                                f"{name} is not rectangular: row 0 has {_count(width, 'number')}, "
                                f"row {i} has {_count(len(row), 'number')}", cols=len(row), first_cols=width)
    if len(rows) > MAX_SIDE or width > MAX_SIDE:
        raise ToyShapeError("toy_size", loc, f"{name} is {len(rows)}x{width}; toy matrices are at most "
                            f"{MAX_SIDE}x{MAX_SIDE}", rows=len(rows), cols=width, max=MAX_SIDE)
    t = torch.tensor(rows, dtype=torch.float64)  # (rows, width)
    rules: tuple[tuple[str, torch.Tensor, str, Ctx], ...] = (
        ("toy_not_finite", ~torch.isfinite(t), "a non-finite number; send finite numbers", {}),
        ("toy_magnitude", t.abs() > MAX_ABS, f"a number larger than {MAX_ABS:g} in magnitude; scale it down",
         {"max": MAX_ABS}),
    )
    for rule, bad, problem, ctx in rules:
        if bad.any():
            i, j = (int(x) for x in bad.nonzero()[0])
            raise ToyShapeError(rule, (*loc, str(i), str(j)), f"{name} holds {problem} (row {i}, column {j})", **ctx)
    return t


def _widths(d_model: int, n_heads: int, d_keys: int | None, d_values: int | None) -> tuple[int, int]:
    if n_heads < 1 or ((d_keys is None or d_values is None) and d_model % n_heads):
        raise ToyShapeError("toy_heads_divide", ("n_heads",),
                            f"n_heads {n_heads} does not divide d_model {d_model}; pick a divisor of {d_model}"
                            + (" or send d_keys and d_values" if n_heads >= 1 else ""),
                            n_heads=n_heads, d_model=d_model)
    dk = d_model // n_heads if d_keys is None else d_keys
    dv = d_model // n_heads if d_values is None else d_values
    for name, d in (("d_keys", dk), ("d_values", dv)):
        if d < 1 or n_heads * d > MAX_SIDE:
            raise ToyShapeError("toy_head_width", (name,),
                                f"{name} {d} gives weights {n_heads * d} wide with {n_heads} heads; "
                                f"send {name} from 1 to {MAX_SIDE // n_heads}",
                                width=n_heads * d, n_heads=n_heads, max=MAX_SIDE)
    return dk, dv


def toy_layer(d_model: int, n_heads: int, weights: Mapping[str, Matrix] | None = None,
              d_keys: int | None = None, d_values: int | None = None, seed: int = 0) -> MultiHeadAttention:
    """A float64 attention layer whose projections act as X W; missing square weights are the identity,
    missing non-square ones seeded (module docstring)."""
    dk, dv = _widths(d_model, n_heads, d_keys, d_values)
    given = weights or {}
    unknown = sorted(set(given) - set(WEIGHT_NAMES))
    if unknown:
        raise ToyShapeError("toy_weight_name", ("weights", unknown[0]),
                            f"unknown weights {unknown}; the weights are q, k, v and o", name=unknown[0])
    layer = MultiHeadAttention(d_model, n_heads, d_keys=dk, d_values=dv).double()
    shapes = {"q": (d_model, n_heads * dk), "k": (d_model, n_heads * dk),
              "v": (d_model, n_heads * dv), "o": (n_heads * dv, d_model)}
    widths_given = d_keys is not None or d_values is not None
    with torch.no_grad():
        for name, linear in zip(WEIGHT_NAMES, (layer.query, layer.key, layer.value, layer.output), strict=True):
            loc, want = ("weights", name), shapes[name]
            if name in given:
                w = checked_matrix(loc, given[name])  # (in, out)
            elif want[0] == want[1]:
                w = torch.eye(want[0], dtype=torch.float64)  # (D, D)
            else:
                w = seeded(want, seed, WEIGHT_STREAMS[name])  # (in, out)
            if w.shape != want:
                rows, cols = w.shape
                if widths_given:
                    raise ToyShapeError("toy_weight_widths", loc,
                                        f"weights.{name} is {rows}x{cols}; with n_heads {n_heads}, d_keys {dk} and "
                                        f"d_values {dv} it must be {want[0]}x{want[1]}; send that shape or change "
                                        "d_keys / d_values", rows=rows, cols=cols, want_rows=want[0], want_cols=want[1])
                raise ToyShapeError("toy_weight_shape", loc, f"weights.{name} is {rows}x{cols}; it must be "
                                    f"{d_model}x{d_model}", rows=rows, cols=cols, d_model=d_model)
            linear.weight.copy_(w.T)  # nn.Linear computes x W^T; the toy's W is in x out
            linear.bias.zero_()
    return layer.eval()


def _mask(t: int, s: int, n_heads: int, causal: bool, hidden_keys: Sequence[int],
          positions: str) -> torch.Tensor | None:
    """The additive mask (T, S), or (H, T, S) with ALiBi's bias: −inf where hidden, −m_h·|i−j| for ALiBi."""
    for i, key in enumerate(hidden_keys):
        if not 0 <= key < s:
            raise ToyShapeError("toy_hidden_key", ("hidden_keys", str(i)),
                                f"hidden key {key} is out of range; there are {_count(s, 'key')}, so hide "
                                f"keys 0..{s - 1}", key=key, keys=s)
    mask = causal_mask(t, s).double() if causal else None  # (T, S)
    if hidden_keys:
        hidden = torch.zeros(t, s, dtype=torch.float64)
        hidden[:, list(hidden_keys)] = float("-inf")  # (T, S)
        mask = hidden if mask is None else mask + hidden
    if positions == "alibi":
        bias = pos.alibi_bias(n_heads, t, s).double()  # (H, T, S)
        mask = bias if mask is None else mask + bias
    return mask


@dataclass(frozen=True)
class ToySetup:
    """A validated toy request: the float64 layer with its variant, the inputs and the mask.

    sent: the inputs as sent (queries (T, D), keys and values (S, D), defaults filled in);
    x_q, x_k, x_v: what enters the layer (sent + the sinusoidal table with positions="sinusoidal");
    table: that table for (queries, keys, values) or None; mask: (T, S), (H, T, S) or None.
    keys_sent, values_sent: whether keys and values were sent (else they are the queries / keys).
    """

    layer: MultiHeadAttention
    sent: tuple[torch.Tensor, torch.Tensor, torch.Tensor]
    x_q: torch.Tensor
    x_k: torch.Tensor
    x_v: torch.Tensor
    table: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None
    mask: torch.Tensor | None
    adder: variants.AdditiveScore | None
    keys_sent: bool
    values_sent: bool
    variant: str
    temperature: float
    seed: int
    straight_through: bool
    positions: str
    hidden_keys: tuple[int, ...]
    sparse: probsparse.ProbSparseChoice | None = None  # variant probsparse: its sample, measure and choice
    general: variants.GeneralScore | None = None  # variant general: Luong's W_s (H, Dk, Dk)
    tau: float = 1.0  # the de-stationary factors: scores · τ + δ
    delta: torch.Tensor | None = None  # (S,)


def prepare_toy(
    queries: Matrix | None = None,
    keys: Matrix | None = None,
    values: Matrix | None = None,
    n_heads: int | None = None,
    weights: Mapping[str, Matrix] | None = None,
    causal: bool = False,
    *,
    variant: str = "scaled_dot",
    temperature: float = 1.0,
    seed: int = 0,
    straight_through: bool = False,
    d_keys: int | None = None,
    d_values: int | None = None,
    additive: Mapping[str, object] | None = None,
    positions: str = "none",
    hidden_keys: Sequence[int] = (),
    factor: int | None = None,
    scale: float | None = None,
    tau: float = 1.0,
    delta: float | Sequence[float] = 0.0,
) -> ToySetup:
    """Check a toy request and build its layer, inputs and mask (run_toy's arguments).

    Raises ToyShapeError (a ValueError) naming the rule (model/errors.py TOY_RULES), the field and the problem.
    """
    check_settings(variant, positions, temperature, seed, straight_through, additive)
    if factor is not None and variant != "probsparse":
        raise ToyShapeError("toy_factor_variant", ("factor",), f"factor sent with variant {variant}; send variant "
                            "probsparse or remove factor", variant=variant)
    keys_sent, values_sent = keys is not None, values is not None
    if queries is None and keys is None and values is None:
        queries, values = WORKED_QUERIES, WORKED_VALUES
        values_sent = True
    if queries is None:
        raise ToyShapeError("toy_no_queries", ("queries",),
                            "queries are missing; send queries along with keys or values")
    x_q = checked_matrix(("queries",), queries)  # (T, D)
    x_k = x_q if keys is None else checked_matrix(("keys",), keys)  # (S, D)
    x_v = x_k if values is None else checked_matrix(("values",), values)  # (S, D)
    d_model = x_q.shape[1]
    for name, t in (("keys", x_k), ("values", x_v)):
        if t.shape[1] != d_model:
            raise ToyShapeError("toy_columns", (name,),
                                f"{name} have {_count(t.shape[1], 'column')} but queries have {d_model}; "
                                "use the same d_model", cols=t.shape[1], d_model=d_model)
    if x_k.shape[0] != x_v.shape[0]:
        raise ToyShapeError("toy_value_rows", ("values",),
                            f"keys have {_count(x_k.shape[0], 'row')} but values have {x_v.shape[0]}; "
                            "send one value per key", values=x_v.shape[0], keys=x_k.shape[0])
    if n_heads is None:
        if d_model % WORKED_N_HEADS:
            raise ToyShapeError("toy_odd_d_model", ("n_heads",),
                                f"d_model {d_model} is odd; send n_heads, a divisor of {d_model}", d_model=d_model)
        n_heads = WORKED_N_HEADS

    layer = toy_layer(d_model, n_heads, weights, d_keys, d_values, seed)
    sent = (x_q, x_k, x_v)
    table = None
    if positions == "sinusoidal":
        if d_model % 2:
            raise ToyShapeError("toy_sinusoidal_odd", ("positions",),
                                f"sinusoidal positions need an even d_model, not {d_model}; add a column or "
                                "pick other positions", d_model=d_model)
        table = (pos.sinusoidal(x_q.shape[0], d_model).double(),  # (T, D)
                 pos.sinusoidal(x_k.shape[0], d_model).double(),  # (S, D)
                 pos.sinusoidal(x_v.shape[0], d_model).double())  # (S, D)
        x_q, x_k, x_v = x_q + table[0], x_k + table[1], x_v + table[2]
    if positions == "rope":
        if layer.d_keys % 2:
            raise ToyShapeError("toy_rope_odd", ("d_keys",) if d_keys is not None else ("positions",),
                                f"RoPE needs an even d_keys, not {layer.d_keys}; send an even d_keys or pick "
                                "other positions", d_keys=layer.d_keys)
        layer.rotate = pos.rope
    adder = additive_parameters(additive, n_heads, layer.d_keys, seed) if variant == "additive" else None
    general = variants.GeneralScore(seeded((n_heads, layer.d_keys, layer.d_keys), seed, GENERAL_STREAM)) if (
        variant == "general") else None
    shift = scoring_options(variant, x_k.shape[0], scale, tau, delta)  # (S,)
    score, score_factor = variants.scoring(variant, layer.d_keys, adder, general, scale)
    layer.score = score if tau == 1.0 and not shift.any() else variants.Destationary(score, tau, shift)
    layer.scale = score_factor / temperature
    layer.weigh = variants.weighting(variant, seed, temperature, straight_through)
    mask = _mask(x_q.shape[0], x_k.shape[0], n_heads, causal, hidden_keys, positions)  # (T, S) or (H, T, S)
    sparse = None
    if variant == "probsparse":  # the active queries are chosen once, from q and k, and weigh as a constant
        c = probsparse.DEFAULT_FACTOR if factor is None else factor
        probsparse.check(x_q.shape[0], x_k.shape[0], causal, tuple(hidden_keys), c)
        sparse = probsparse.choose(layer, x_q, x_k, causal, c, seed)
        layer.weigh = partial(probsparse.probsparse_weights, active=sparse.active_rows, lazy=sparse.lazy)
    return ToySetup(layer=layer, sent=sent, x_q=x_q, x_k=x_k, x_v=x_v, table=table, mask=mask, adder=adder,
                    keys_sent=keys_sent, values_sent=values_sent, variant=variant, temperature=temperature,
                    seed=seed, straight_through=straight_through, positions=positions,
                    hidden_keys=tuple(hidden_keys), sparse=sparse, general=general, tau=tau, delta=shift)


def trace_toy(setup: ToySetup) -> dict[str, Any]:
    """The /toy answer of a prepared toy: every step traced (batch axis dropped), the settings and weights used."""
    layer, mask = setup.layer, setup.mask
    x_q, x_k, x_v = setup.x_q, setup.x_k, setup.x_v
    trace = Trace(layers=[0])
    with torch.no_grad():
        out = layer(x_q[None], keys=x_k[None], values=x_v[None], mask=mask, record=trace.recorder(0))[0]  # (T, D)
    steps = {**select(trace[0]), "input": {"q": x_q, "k": x_k, "v": x_v}}
    split = cast(dict[str, torch.Tensor], steps["split"])  # the toy shows q and k after RoPE's rotation
    steps["split"] = {name: split[name] for name in ("q", "k", "v")}
    used = {name: lin.weight.detach().T.clone() for name, lin in
            zip(WEIGHT_NAMES, (layer.query, layer.key, layer.value, layer.output), strict=True)}  # (in, out)
    variant, seed, temperature = setup.variant, setup.seed, setup.temperature
    result: dict[str, Any] = {
        "d_model": x_q.shape[1], "n_heads": layer.n_heads, "d_head": layer.d_keys, "d_keys": layer.d_keys,
        "d_values": layer.d_values, "scale": layer.scale, "variant": variant, "temperature": temperature,
        "seed": seed, "straight_through": setup.straight_through, "positions": setup.positions,
        "hidden_keys": list(setup.hidden_keys), "weights": used, "steps": steps, "soft": None, "additive": None,
        "factor": None, "probsparse": None, "general_w": None if setup.general is None else setup.general.w,
        "tau": setup.tau, "delta": setup.delta,
    }
    sparse = setup.sparse
    if sparse is not None:
        result["factor"] = sparse.factor
        result["probsparse"] = {"sampled_keys": sparse.sampled_keys, "measure": sparse.measure, "active": sparse.active,
                                "output_difference": probsparse.output_difference(layer, out, x_q, x_k, x_v, mask)}
    adder = setup.adder
    if adder is not None:
        result["additive"] = {"w_q": adder.w_q, "w_k": adder.w_k, "v": adder.v}
    if variants.is_hard(variant, setup.straight_through):
        masked = trace.tensor(0, "mask")  # (B, H, T, S)
        result["soft"] = variants.soft_weights(masked, variant, seed, temperature, mask is not None)[0]  # (H, T, S)
    return result


def run_toy(
    queries: Matrix | None = None,
    keys: Matrix | None = None,
    values: Matrix | None = None,
    n_heads: int | None = None,
    weights: Mapping[str, Matrix] | None = None,
    causal: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """One attention layer on small inputs with every step traced (batch axis dropped).

    With none of queries/keys/values given this is the worked example. Keys
    default to queries and values to keys. `input` holds the three inputs (plus
    the sinusoidal table with positions="sinusoidal"). The `scale` step is the
    scores times scale / temperature, and the answer's `scale` is that factor.
    Options (keyword only): variant, temperature, seed, straight_through, d_keys, d_values, additive,
    positions, hidden_keys, factor, scale (cosine), tau, delta (prepare_toy).
    Raises ToyShapeError (a ValueError) naming the rule (model/errors.py TOY_RULES), the field and the problem.
    """
    return trace_toy(prepare_toy(queries, keys, values, n_heads, weights, causal, **options))
