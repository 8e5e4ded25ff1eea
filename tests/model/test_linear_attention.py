"""The toy's linear variant (Katharopoulos et al. 2020, φ(x) = elu(x) + 1) against linear attention written
here in its own two forms: φ(Q)·(φ(K)ᵀV) / φ(Q)·Σφ(K) without an N × N matrix, and, causal, the recurrence
of a running d × d state and normaliser, one token at a time."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from model.errors import ToyShapeError
from model.lab.toy import run_toy
from tests.properties import examples


def phi(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x + 1.0, np.exp(np.minimum(x, 0.0)))


def setups():
    numbers = st.floats(-4, 4, allow_nan=False, allow_infinity=False)
    return st.integers(1, 6).flatmap(lambda n: st.integers(1, 3).flatmap(lambda heads: st.tuples(
        st.lists(st.lists(numbers, min_size=2 * heads, max_size=2 * heads), min_size=n, max_size=n),
        st.just(heads))))


@examples(60)
@given(setups())
def test_linear_attention_is_phi_q_times_phi_k_v_summed_first(setup):
    queries, heads = setup
    out = run_toy(queries=queries, n_heads=heads, variant="linear")
    split = {m: out["steps"]["split"][m].numpy() for m in "qkv"}
    for h in range(heads):
        q, k, v = phi(split["q"][h]), phi(split["k"][h]), split["v"][h]
        state, norm = k.T @ v, k.sum(axis=0)  # d × d_v and d: no N × N matrix
        want = (q @ state) / (q @ norm)[:, None]
        got = out["steps"]["weighted_sum"][h].numpy()
        # φ > 0, |v| ≤ 4·(2·heads): rounding stays far below 1e-12 relative to the values
        assert np.abs(got - want).max() <= 1e-12 * max(1.0, np.abs(v).max())


@examples(60)
@given(setups())
def test_causal_linear_attention_is_a_recurrence_over_tokens(setup):
    queries, heads = setup
    out = run_toy(queries=queries, n_heads=heads, variant="linear", causal=True)
    split = {m: out["steps"]["split"][m].numpy() for m in "qkv"}
    for h in range(heads):
        q, k, v = phi(split["q"][h]), phi(split["k"][h]), split["v"][h]
        state, norm = np.zeros((k.shape[1], v.shape[1])), np.zeros(k.shape[1])
        got = out["steps"]["weighted_sum"][h].numpy()
        for t in range(q.shape[0]):  # token t adds its key and value, then reads with its query
            state, norm = state + np.outer(k[t], v[t]), norm + k[t]
            assert np.abs(got[t] - q[t] @ state / (q[t] @ norm)).max() <= 1e-12 * max(1.0, np.abs(v).max())


def test_linear_weights_are_flatter_than_softmax_on_the_worked_example():
    linear = run_toy(variant="linear")["steps"]["softmax"].numpy()
    soft = run_toy(variant="dot")["steps"]["softmax"].numpy()  # the same scores' softmax would be sharper still
    assert np.allclose(linear.sum(-1), 1) and (linear > 0).all()
    assert linear.max() < soft.max()


def test_linear_attention_takes_no_alibi_bias():
    with pytest.raises(ToyShapeError) as refused:
        run_toy(variant="linear", positions="alibi")
    assert refused.value.type == "toy_linear_alibi" and refused.value.loc == ("positions",)
