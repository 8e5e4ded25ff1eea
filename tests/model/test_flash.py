"""FlashAttention tile by tile (model/lab/flash.py) against softmax attention written out here: the output,
every tile's running state m, l, o (recomputed from the keys seen so far), and the backward by
recomputation against torch.autograd."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from model.errors import ToyShapeError
from model.lab.flash import blocks, run_flash, tiled_backward, tiled_forward
from tests.properties import examples


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, hidden: np.ndarray) -> np.ndarray:
    """softmax(q kᵀ · scale) v with the hidden entries left out; a row with every key hidden is zeros."""
    s = q @ k.T * scale
    out = np.zeros((q.shape[0], v.shape[1]))
    for i in range(q.shape[0]):
        seen = ~hidden[i]
        if seen.any():
            e = np.exp(s[i, seen] - s[i, seen].max())
            out[i] = (e / e.sum()) @ v[seen]
    return out


@st.composite
def setups(draw):
    L, S = draw(st.integers(1, 9)), draw(st.integers(1, 9))
    dk, dv = draw(st.integers(1, 5)), draw(st.integers(1, 5))
    numbers = st.floats(-3, 3, allow_nan=False, allow_infinity=False)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q, k, v = rng.uniform(-3, 3, (L, dk)), rng.uniform(-3, 3, (S, dk)), rng.uniform(-3, 3, (S, dv))
    hidden = np.zeros((L, S), dtype=bool)
    if draw(st.booleans()):  # causal, top-left aligned
        hidden |= np.triu(np.ones((L, S), dtype=bool), 1)
    for j in draw(st.lists(st.integers(0, S - 1), max_size=S)):
        hidden[:, j] = True
    scale = draw(numbers.filter(lambda x: abs(x) > 0.05))
    return q, k, v, hidden, scale, draw(st.integers(1, 10)), draw(st.integers(1, 10))


def as_mask(hidden: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.where(hidden, -np.inf, 0.0))


@examples(80)
@given(setups())
def test_the_tiles_give_softmax_attention_and_each_state_is_that_of_the_keys_seen(setup):
    q, k, v, hidden, scale, br, bc = setup
    t = [torch.from_numpy(x) for x in (q, k, v)]
    forward = tiled_forward(*t, scale, as_mask(hidden), br, bc)
    want = reference(q, k, v, scale, hidden)
    # |v| ≤ 3 and the weights sum to 1: rounding stays far below 1e-12
    assert np.abs(forward.output.numpy() - want).max() <= 1e-12
    assert len(forward.tiles) == len(blocks(q.shape[0], br)) * len(blocks(k.shape[0], bc))
    s = q @ k.T * scale
    for tile in forward.tiles:
        (i0, i1), (_, j1) = tile.rows, tile.cols
        assert tile.skipped == bool(hidden[i0:i1, tile.cols[0]:j1].all())
        for r, i in enumerate(range(i0, i1)):
            seen = ~hidden[i, :j1]  # every key up to the end of this tile's block
            if not seen.any():
                assert tile.m[r] == -np.inf and tile.l[r] == 0 and (tile.o[r] == 0).all()
                continue
            m = s[i, :j1][seen].max()
            e = np.exp(s[i, :j1][seen] - m)
            assert tile.m[r].item() == pytest.approx(m, abs=1e-12)
            assert tile.l[r].item() == pytest.approx(e.sum(), rel=1e-12)
            assert np.abs(tile.o[r].numpy() - e @ v[:j1][seen]).max() <= 1e-11 * max(1.0, e.sum())


@examples(60)
@given(setups(), st.integers(0, 2**32 - 1))
def test_the_backward_by_recomputation_equals_autograd(setup, seed):
    q, k, v, hidden, scale, br, bc = setup
    d_out = np.random.default_rng(seed).uniform(-2, 2, (q.shape[0], v.shape[1]))
    t = [torch.from_numpy(x) for x in (q, k, v)]
    mask = as_mask(hidden)
    forward = tiled_forward(*t, scale, mask, br, bc)
    grads = tiled_backward(*t, forward.output, torch.from_numpy(d_out), forward.m, forward.l, scale, mask, br, bc)
    leaves = [torch.from_numpy(x).requires_grad_(True) for x in (q, k, v)]
    scores = leaves[0] @ leaves[1].T * scale + mask
    rows_hidden = torch.from_numpy(hidden.all(axis=1))[:, None]
    weights = torch.softmax(scores.masked_fill(rows_hidden, 0.0), dim=1).masked_fill(rows_hidden, 0.0)
    (weights @ leaves[2]).backward(torch.from_numpy(d_out))
    for got, leaf in zip((grads.dq, grads.dk, grads.dv), leaves, strict=True):
        assert np.abs(got.numpy() - leaf.grad.numpy()).max() <= 1e-10


def test_a_layer_of_the_toy_tiled_equals_its_own_attention_and_names_bad_settings():
    answer = run_flash(block_rows=3, block_cols=3, causal=True, hidden_keys=[1], backward=True, head=1)
    assert answer["max_abs_diff"] <= 1e-12 and answer["backward"]["max_abs_diff"] <= 1e-10
    assert [t.skipped for t in answer["tiles"]] == [False, True, False, False]  # keys 3 are after queries 0..2
    for bad, field in (({"block_rows": 0}, "block_rows"), ({"block_cols": 65}, "block_cols"), ({"head": 2}, "head"),
                       ({"backward": True, "upstream": [[1.0, 2.0]]}, "upstream")):
        with pytest.raises(ToyShapeError) as refused:
            run_flash(**bad)
        assert refused.value.loc == (field,)
