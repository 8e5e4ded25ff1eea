"""FlashAttention, tile by tile, in float64: the same answer as softmax attention without its N × N matrix.

Forward (Dao et al. 2022, in the form of FlashAttention-2): the queries are cut into blocks of Br rows and
the keys and values into blocks of Bc. For each query block a running row maximum m, a running sum
ℓ = Σ exp(s − m) and an unnormalised output O are kept; each key block's scores s (scaled, then masked)
update them:

    m_new = max(m, rowmax(s))          P = exp(s − m_new)
    ℓ     = exp(m − m_new) · ℓ + rowsum(P)
    O     = exp(m − m_new) · O + P · V_block

and after the last key block the output is O / ℓ. Only one tile of scores exists at a time; what is kept
per query is m and ℓ (2 numbers), not a row of N weights.

Backward by recomputation: from Q, K, V, the output O, its gradient dO and the saved m and ℓ only, each
tile's weights are computed again as P = exp(s − (m + log ℓ)), and with D = rowsum(dO ⊙ O):

    dV_block += Pᵀ · dO_rows        dP = dO_rows · V_blockᵀ        dS = P ⊙ (dP − D)
    dQ_rows  += scale · dS · K_block        dK_block += scale · dSᵀ · Q_rows

A hidden score (−∞: the causal mask or a hidden key) gets weight 0; a row whose keys are all hidden has
ℓ = 0 and its output and gradients are zeros, as the toy's softmax gives. A tile whose scores are all
hidden changes nothing (FlashAttention skips it); it is still listed, marked `skipped`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from model.errors import ToyShapeError
from model.lab.toy import Matrix, prepare_toy, trace_toy

MAX_BLOCK = 64  # the most rows or keys in one block: the toy's largest side


@dataclass(frozen=True)
class Tile:
    """One tile of the forward: query rows [i0, i1) against keys [j0, j1) (ends exclusive), its scores
    (scaled and masked, −∞ where hidden) and the query block's state m, ℓ, O after it."""

    row_block: int
    col_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    scores: torch.Tensor  # (Br, Bc)
    m: torch.Tensor  # (Br,)
    l: torch.Tensor  # (Br,)  # noqa: E741 (the paper's ℓ)
    o: torch.Tensor  # (Br, Dv), not yet divided by ℓ
    skipped: bool


@dataclass(frozen=True)
class BackwardTile:
    """One tile of the backward: the recomputed weights P and the scores' gradient dS of its rows and keys."""

    row_block: int
    col_block: int
    rows: tuple[int, int]
    cols: tuple[int, int]
    p: torch.Tensor  # (Br, Bc)
    ds: torch.Tensor  # (Br, Bc)
    skipped: bool


@dataclass(frozen=True)
class Forward:
    tiles: list[Tile]
    output: torch.Tensor  # (L, Dv)
    m: torch.Tensor  # (L,) the row maxima of the scores (−∞ for a row with every key hidden)
    l: torch.Tensor  # (L,)  # noqa: E741 Σ exp(s − m) per row (0 for a row with every key hidden)


@dataclass(frozen=True)
class Backward:
    tiles: list[BackwardTile]
    dq: torch.Tensor  # (L, Dk)
    dk: torch.Tensor  # (S, Dk)
    dv: torch.Tensor  # (S, Dv)


def blocks(n: int, size: int) -> list[tuple[int, int]]:
    """[start, end) of each block of `size` over 0..n−1 (the last one shorter when size does not divide n)."""
    return [(start, min(start + size, n)) for start in range(0, n, size)]


def _tile_scores(q: torch.Tensor, k: torch.Tensor, scale: float, mask: torch.Tensor | None,
                 rows: tuple[int, int], cols: tuple[int, int]) -> torch.Tensor:
    s = (q[rows[0]:rows[1]] @ k[cols[0]:cols[1]].T) * scale  # (Br, Bc)
    return s if mask is None else s + mask[rows[0]:rows[1], cols[0]:cols[1]]


def _exp_below(s: torch.Tensor, top: torch.Tensor) -> torch.Tensor:
    """exp(s − top) by row, 0 where s is −∞ (also when the whole row is, where s − top would be NaN)."""
    return torch.where(torch.isneginf(s), torch.zeros_like(s), torch.exp(s - top[:, None]))


def tiled_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, mask: torch.Tensor | None,
                  block_rows: int, block_cols: int) -> Forward:
    """Softmax attention softmax(q kᵀ · scale + mask) v computed tile by tile (see the module's docstring).
    q (L, Dk), k (S, Dk), v (S, Dv), mask (L, S) additive (0 or −∞) or None."""
    L, S = q.shape[0], k.shape[0]
    tiles: list[Tile] = []
    output = torch.zeros(L, v.shape[1], dtype=q.dtype)
    m_all = torch.full((L,), float("-inf"), dtype=q.dtype)
    l_all = torch.zeros(L, dtype=q.dtype)
    for bi, rows in enumerate(blocks(L, block_rows)):
        n = rows[1] - rows[0]
        m = torch.full((n,), float("-inf"), dtype=q.dtype)
        l = torch.zeros(n, dtype=q.dtype)  # noqa: E741
        o = torch.zeros(n, v.shape[1], dtype=q.dtype)
        for bj, cols in enumerate(blocks(S, block_cols)):
            s = _tile_scores(q, k, scale, mask, rows, cols)  # (Br, Bc)
            skipped = bool(torch.isneginf(s).all())
            if not skipped:
                m_new = torch.maximum(m, s.max(dim=1).values)  # (Br,)
                # how much the old sums shrink under the new maxima; 1 while a row has seen no key yet
                alpha = torch.where(torch.isneginf(m_new), torch.ones_like(m), torch.exp(m - m_new))
                p = _exp_below(s, m_new)  # (Br, Bc)
                l = alpha * l + p.sum(dim=1)  # noqa: E741
                o = alpha[:, None] * o + p @ v[cols[0]:cols[1]]
                m = m_new
            tiles.append(Tile(bi, bj, rows, cols, s, m.clone(), l.clone(), o.clone(), skipped))
        seen = l > 0
        output[rows[0]:rows[1]] = torch.where(seen[:, None], o / torch.where(seen, l, 1.0)[:, None], 0.0)
        m_all[rows[0]:rows[1]], l_all[rows[0]:rows[1]] = m, l
    return Forward(tiles, output, m_all, l_all)


def tiled_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, d_out: torch.Tensor,
                   m: torch.Tensor, l: torch.Tensor, scale: float, mask: torch.Tensor | None,  # noqa: E741
                   block_rows: int, block_cols: int) -> Backward:
    """dQ, dK, dV of softmax attention from the output, its gradient and the forward's m and ℓ, each tile's
    weights recomputed (see the module's docstring)."""
    L, S = q.shape[0], k.shape[0]
    dq, dk, dv = torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    seen = l > 0
    logsumexp = torch.where(seen, m + torch.log(torch.where(seen, l, 1.0)), torch.zeros_like(m))  # (L,)
    d_rows = (d_out * out).sum(dim=1)  # (L,) D = rowsum(dO ⊙ O)
    tiles: list[BackwardTile] = []
    for bi, rows in enumerate(blocks(L, block_rows)):
        r0, r1 = rows
        for bj, cols in enumerate(blocks(S, block_cols)):
            c0, c1 = cols
            s = _tile_scores(q, k, scale, mask, rows, cols)  # (Br, Bc)
            skipped = bool(torch.isneginf(s).all())
            p = _exp_below(s, logsumexp[r0:r1])  # (Br, Bc) the weights, as the forward's softmax had them
            dp = d_out[r0:r1] @ v[c0:c1].T  # (Br, Bc)
            ds = p * (dp - d_rows[r0:r1, None])  # (Br, Bc)
            if not skipped:
                dv[c0:c1] += p.T @ d_out[r0:r1]
                dq[r0:r1] += scale * (ds @ k[c0:c1])
                dk[c0:c1] += scale * (ds.T @ q[r0:r1])
            tiles.append(BackwardTile(bi, bj, rows, cols, p, ds, skipped))
    return Backward(tiles, dq, dk, dv)


def check_block(field: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BLOCK:
        raise ToyShapeError("flash_block", (field,), f"{field} is {value!r}; use a whole number from 1 to {MAX_BLOCK}",
                            value=value, max=MAX_BLOCK)


def flash_values(rows: int, keys: int, d_values: int, block_rows: int, block_cols: int, backward: bool) -> int:
    """How many numbers a /flash answer of these sizes holds (the JSON cap is checked before computing)."""
    tiles = math.ceil(rows / block_rows) * math.ceil(keys / block_cols)
    per_tile = block_rows * block_cols + 2 * block_rows + block_rows * d_values
    total = tiles * per_tile + 2 * rows * d_values + 2 * rows
    if backward:
        total += tiles * 2 * block_rows * block_cols + 2 * (rows + 2 * keys) * d_values
    return total


def run_flash(queries: Matrix | None = None, keys: Matrix | None = None, values: Matrix | None = None,
              n_heads: int | None = None, weights: dict[str, Matrix] | None = None, causal: bool = False, *,
              hidden_keys: tuple[int, ...] | list[int] = (), block_rows: int = 2, block_cols: int = 2, head: int = 0,
              backward: bool = False, upstream: Matrix | None = None) -> dict[str, Any]:
    """One head of the toy's layer (the /toy request: the worked example by default) through FlashAttention:
    its q, k, v and mask as the toy computes them, then tiled_forward (and tiled_backward, with dO =
    `upstream`, L × d_values, default all ones). The toy's own softmax attention of that head is returned
    beside it as `reference`."""
    check_block("block_rows", block_rows)
    check_block("block_cols", block_cols)
    setup = prepare_toy(queries, keys, values, n_heads, weights, causal, hidden_keys=hidden_keys)
    n = setup.layer.n_heads
    if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < n:
        raise ToyShapeError("flash_head", ("head",), f"head {head!r} is out of range; this layer has heads 0..{n - 1}",
                            head=head, n_heads=n)
    traced = trace_toy(setup)
    split = traced["steps"]["split"]
    q, k, v = split["q"][head], split["k"][head], split["v"][head]  # (L, Dk), (S, Dk), (S, Dv)
    scale = float(setup.layer.scale)
    mask = setup.mask  # (L, S) or None: the causal mask and the hidden keys (no positions here)
    forward = tiled_forward(q, k, v, scale, mask, block_rows, block_cols)
    reference = traced["steps"]["weighted_sum"][head]  # (L, Dv) the toy's softmax attention of this head
    result: dict[str, Any] = {
        "head": head, "n_heads": n, "block_rows": block_rows, "block_cols": block_cols, "scale": scale,
        "q": q, "k": k, "v": v, "tiles": forward.tiles, "output": forward.output, "reference": reference,
        "max_abs_diff": float((forward.output - reference).abs().max()), "m": forward.m, "l": forward.l,
        "backward": None,
    }
    if backward:
        d_out = _upstream(upstream, q.shape[0], v.shape[1])
        grads = tiled_backward(q, k, v, forward.output, d_out, forward.m, forward.l, scale, mask,
                               block_rows, block_cols)
        ref = _autograd(q, k, v, scale, mask, d_out)
        result["backward"] = {
            "upstream": d_out, "tiles": grads.tiles, "dq": grads.dq, "dk": grads.dk, "dv": grads.dv,
            "reference": {"dq": ref[0], "dk": ref[1], "dv": ref[2]},
            "max_abs_diff": max(float((a - b).abs().max()) for a, b in zip((grads.dq, grads.dk, grads.dv), ref,
                                                                            strict=True)),
        }
    return result


def _upstream(upstream: Matrix | None, rows: int, cols: int) -> torch.Tensor:
    if upstream is None:
        return torch.ones(rows, cols, dtype=torch.float64)
    d_out = torch.tensor(upstream, dtype=torch.float64)
    if d_out.shape != (rows, cols):
        raise ToyShapeError("flash_upstream_shape", ("upstream",),
                            f"upstream is {tuple(d_out.shape)[0]}x{tuple(d_out.shape)[-1]}; send {rows}x{cols} "
                            "(one row per query, one number per value dimension of the head)",
                            rows=rows, cols=cols)
    return d_out


def _autograd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, mask: torch.Tensor | None,
              d_out: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The reference gradients: torch.autograd through softmax attention written out (the N × N matrix)."""
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (q, k, v))
    with torch.enable_grad():
        s = q @ k.T * scale
        if mask is not None:
            s = s + mask
        hidden = torch.isneginf(s).all(dim=1, keepdim=True)
        weights = torch.softmax(s.masked_fill(hidden, 0.0), dim=1).masked_fill(hidden, 0.0)
        (weights @ v).backward(d_out)
    assert q.grad is not None and k.grad is not None and v.grad is not None
    return q.grad, k.grad, v.grad
