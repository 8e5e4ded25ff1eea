"""The worked example from the course notes, and small hand-made inputs.

d_model 4, 2 heads, identity projections and zero biases, so every number can
be followed by hand. Computed in float64 so the example's numbers are exact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from .attention import MultiHeadAttention, causal_mask
from .errors import Ctx, ToyShapeError
from .trace import Trace, select

WORKED_QUERIES = [[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]]
WORKED_VALUES = [[10, 11, 20, 21], [12, 13, 22, 23], [14, 15, 24, 25], [16, 17, 26, 27]]
WORKED_N_HEADS = 2

MAX_SIDE = 64  # rows and columns of any toy matrix
MAX_ABS = 1e6  # largest magnitude of a toy number (keeps every step finite)
WEIGHT_NAMES = ("q", "k", "v", "o")

Matrix = Sequence[Sequence[float]]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _tensor(loc: tuple[str, ...], rows: Matrix) -> torch.Tensor:
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


def toy_layer(d_model: int, n_heads: int, weights: Mapping[str, Matrix] | None = None) -> MultiHeadAttention:
    """A float64 attention layer whose projections act as X W; missing weights are the identity."""
    if n_heads < 1 or d_model % n_heads:
        raise ToyShapeError("toy_heads_divide", ("n_heads",),
                            f"n_heads {n_heads} does not divide d_model {d_model}; pick a divisor of {d_model}",
                            n_heads=n_heads, d_model=d_model)
    given = weights or {}
    unknown = sorted(set(given) - set(WEIGHT_NAMES))
    if unknown:
        raise ToyShapeError("toy_weight_name", ("weights", unknown[0]),
                            f"unknown weights {unknown}; the weights are q, k, v and o", name=unknown[0])
    layer = MultiHeadAttention(d_model, n_heads).double()
    with torch.no_grad():
        for name, linear in zip(WEIGHT_NAMES, (layer.query, layer.key, layer.value, layer.output), strict=True):
            loc = ("weights", name)
            w = _tensor(loc, given[name]) if name in given else torch.eye(d_model, dtype=torch.float64)  # (D, D)
            if w.shape != (d_model, d_model):
                rows, cols = w.shape
                raise ToyShapeError("toy_weight_shape", loc, f"weights.{name} is {rows}x{cols}; it must be "
                                    f"{d_model}x{d_model}", rows=rows, cols=cols, d_model=d_model)
            linear.weight.copy_(w.T)  # nn.Linear computes x W^T; the toy's W is in x out
            linear.bias.zero_()
    return layer.eval()


def run_toy(
    queries: Matrix | None = None,
    keys: Matrix | None = None,
    values: Matrix | None = None,
    n_heads: int | None = None,
    weights: Mapping[str, Matrix] | None = None,
    causal: bool = False,
) -> dict[str, Any]:
    """One attention layer on small inputs with every step traced (batch axis dropped).

    With none of queries/keys/values given this is the worked example. Keys
    default to queries and values to keys. `input` holds the three inputs.
    Raises ToyShapeError (a ValueError) naming the rule (model/errors.py TOY_RULES), the field and the problem.
    """
    if queries is None and keys is None and values is None:
        queries, values = WORKED_QUERIES, WORKED_VALUES
    if queries is None:
        raise ToyShapeError("toy_no_queries", ("queries",),
                            "queries are missing; send queries along with keys or values")
    x_q = _tensor(("queries",), queries)  # (T, D)
    x_k = x_q if keys is None else _tensor(("keys",), keys)  # (S, D)
    x_v = x_k if values is None else _tensor(("values",), values)  # (S, D)
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

    layer = toy_layer(d_model, n_heads, weights)
    mask = causal_mask(x_q.shape[0], x_k.shape[0]).double() if causal else None  # (T, S)
    trace = Trace(layers=[0])
    with torch.no_grad():
        layer(x_q[None], keys=x_k[None], values=x_v[None], mask=mask, record=trace.recorder(0))
    steps = {**select(trace[0]), "input": {"q": x_q, "k": x_k, "v": x_v}}
    return {"d_model": d_model, "n_heads": n_heads, "d_head": layer.d_head, "scale": layer.scale, "steps": steps}

