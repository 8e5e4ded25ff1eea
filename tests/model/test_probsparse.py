"""ProbSparse (Informer) on the toy, against references that are not the code under test: a numpy
re-implementation written here from the notes' source (Time-Series-Library's ProbAttention), on the
answer's own sampled keys; transformers' InformerProbSparseAttention; torch.autograd for the backward.

Largest deviations measured here (float64, run with -s): numpy 1.4e-14 (limit 1e-12); transformers 8.9e-16
(limit 1e-6); backward max_rel_diff 0 to 2e-16 (limit: its own rounding bound, ~1e-13).
"""

import math

import numpy as np
import pytest
import torch

from model.lab import probsparse
from model.lab.toy import run_toy
from model.lab.toy_backward import run_toy_backward
from model.nets import sparse

RNG = np.random.default_rng(38)


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def reference(xq, xkv, w, n_heads, factor, sampled, causal):
    """ProbSparse in numpy, as the notes' source computes it, with the sample given (L x U)."""
    q, k, v = xq @ w["q"], xkv @ w["k"], xkv @ w["v"]
    length, keys = xq.shape[0], xkv.shape[0]
    dh = q.shape[1] // n_heads
    u = min(factor * math.ceil(math.log(length)), length)
    measures, actives, weights = [], [], []
    for h in range(n_heads):
        qh, kh = q[:, h * dh:(h + 1) * dh], k[:, h * dh:(h + 1) * dh]
        picked = np.stack([qh[i] @ kh[sampled[i]].T for i in range(length)])  # (L, U) unscaled
        m = picked.max(-1) - picked.sum(-1) / keys
        active = np.sort(np.argsort(-m, kind="stable")[:u])
        scores = qh @ kh.T / math.sqrt(dh)
        if causal:
            scores = np.where(np.triu(np.ones((length, keys)), 1) > 0, -np.inf, scores)
        a = np.tril(np.ones((length, keys))) if causal else np.full((length, keys), 1.0 / keys)
        a[active] = softmax(scores[active])
        measures.append(m)
        actives.append(active)
        weights.append(a)
    heads_out = [weights[h] @ v[:, h * dh:(h + 1) * dh] for h in range(n_heads)]
    out = np.concatenate(heads_out, axis=1) @ w["o"]
    full = []
    for h in range(n_heads):
        qh, kh = q[:, h * dh:(h + 1) * dh], k[:, h * dh:(h + 1) * dh]
        s = qh @ kh.T / math.sqrt(dh)
        if causal:
            s = np.where(np.triu(np.ones((length, keys)), 1) > 0, -np.inf, s)
        full.append(softmax(s) @ v[:, h * dh:(h + 1) * dh])
    difference = np.linalg.norm(out - np.concatenate(full, axis=1) @ w["o"], axis=1)
    return np.array(measures), np.array(actives), np.array(weights), out, difference


def random_case(length, keys, d_model, causal):
    xq = RNG.normal(size=(length, d_model)).round(2)
    xkv = xq if causal else RNG.normal(size=(keys, d_model)).round(2)
    w = {n: RNG.normal(size=(d_model, d_model)).round(2) for n in "qkvo"}
    return xq, xkv, w


@pytest.mark.parametrize(("length", "keys", "n_heads", "factor", "causal"), [
    (12, 9, 2, 1, False), (20, 20, 4, 2, True), (7, 30, 1, 1, False), (16, 16, 2, 1, True), (5, 5, 2, 5, False),
])
def test_probsparse_equals_the_numpy_reference_on_its_own_sample(length, keys, n_heads, factor, causal):
    xq, xkv, w = random_case(length, keys, 8, causal)
    out = run_toy(xq.tolist(), None if causal else xkv.tolist(), None, n_heads, {n: m.tolist() for n, m in w.items()},
                  causal, variant="probsparse", factor=factor, seed=3)
    sparse = out["probsparse"]
    sampled = sparse["sampled_keys"].numpy()
    assert sampled.shape == (length, min(factor * math.ceil(math.log(keys)), keys))
    measure, active, weights, output, difference = reference(xq, xkv, w, n_heads, factor, sampled, causal)
    assert np.array_equal(sparse["active"].numpy(), active)
    worst = max(np.abs(sparse["measure"].numpy() - measure).max(),
                np.abs(out["steps"]["softmax"].numpy() - weights).max(),
                np.abs(out["steps"]["output"].numpy() - output).max(),
                np.abs(sparse["output_difference"].numpy() - difference).max())
    print(f"probsparse L={length} S={keys} c={factor} causal={causal}: {worst:.2g}")
    assert worst <= 1e-12
    if active.shape[1] == length:  # u ≥ L: every query active, which is full attention (the page says so)
        assert difference.max() <= 1e-12


def test_the_sample_is_seeded_shared_by_the_heads_and_drawn_from_its_own_stream():
    a = run_toy(variant="probsparse", factor=1, seed=4)["probsparse"]["sampled_keys"]
    b = run_toy(variant="probsparse", factor=1, seed=4, n_heads=1)["probsparse"]["sampled_keys"]
    generator = torch.Generator().manual_seed(4 + sparse.SAMPLE_STREAM)
    assert torch.equal(a, b) and torch.equal(a, torch.randint(4, (4, 2), generator=generator))


def test_causal_lazy_rows_are_cumulative_sums_that_grow_with_position():
    xq, _, _ = random_case(10, 10, 4, True)
    xq = np.abs(xq) + 1  # positive values: a lazy row's sum grows with every key it adds
    out = run_toy(xq.tolist(), n_heads=1, causal=True, variant="probsparse", factor=1)
    active = set(out["probsparse"]["active"][0].tolist())
    mixed = out["steps"]["weighted_sum"][0].numpy()  # (L, Dv)
    v = out["steps"]["split"]["v"][0].numpy()
    lazy = [i for i in range(10) if i not in active]
    for i in lazy:
        assert np.allclose(mixed[i], v[:i + 1].sum(0), rtol=0, atol=1e-12)
    sums = [mixed[i].sum() for i in lazy]
    assert sums == sorted(sums) and len(lazy) == 10 - 3  # u = ⌈ln 10⌉ = 3


class _Every:
    """torch.randint for transformers' single key sample: every key once (size == number of keys)."""

    def __init__(self, real):
        self.real = real

    def __call__(self, low, high=None, size=None, **kw):
        if high is not None and size is not None and size[0] == high:
            return torch.arange(high)
        return self.real(low, high, size, **kw)


def test_probsparse_equals_transformers_informer_where_both_sample_every_key(monkeypatch):
    from transformers.models.informer.modeling_informer import InformerProbSparseAttention

    # transformers differs from the notes' source in two ways: it draws ONE key sample of
    # min(c·L·⌈ln(1 + S)⌉, S) keys for all queries (the source: U keys per query), and it takes ⌈ln(1 + n)⌉
    # where the source takes ⌈ln n⌉. So the inputs are chosen where both sample every key and pick the same u:
    # S = 3, c = 2 → U = min(2·⌈ln 3⌉, 3) = 3 = S for us, min(2·16·⌈ln 4⌉, 3) = 3 for transformers;
    # L = 16 → u = 2·⌈ln 16⌉ = 6 for us and 2·⌈ln 17⌉ = 6 for transformers. Both samples are set to every key
    # (ours per query, transformers' once); transformers' M is of the scaled queries, the same ranking.
    length, keys, d_model, n_heads, factor = 16, 3, 8, 2, 2
    xq, xkv, w = random_case(length, keys, d_model, False)
    monkeypatch.setattr(probsparse, "sample_keys",
                        lambda n_q, n_k, c, seed: torch.arange(n_k).repeat(n_q, 1))  # (L, S): every key
    ours = run_toy(xq.tolist(), xkv.tolist(), None, n_heads, {n: m.tolist() for n, m in w.items()},
                   variant="probsparse", factor=factor)
    layer = InformerProbSparseAttention(d_model, n_heads, sampling_factor=factor).double().eval()
    with torch.no_grad():
        for name, lin in (("q", layer.q_proj), ("k", layer.k_proj), ("v", layer.v_proj), ("o", layer.out_proj)):
            lin.weight.copy_(torch.tensor(w[name]).T)
            lin.bias.zero_()
        monkeypatch.setattr(torch, "randint", _Every(torch.randint))
        theirs, _ = layer(torch.tensor(xq)[None], key_value_states=torch.tensor(xkv)[None])
    assert len(ours["probsparse"]["active"][0]) == 6
    diff = float((ours["steps"]["output"] - theirs[0]).abs().max())
    print(f"probsparse vs transformers Informer: {diff:.2g}")
    assert diff <= 1e-6
    assert float(ours["probsparse"]["output_difference"].max()) > 1e-3  # a control: ProbSparse is not full here


@pytest.mark.parametrize("options", [
    {"factor": 1}, {"factor": 1, "causal": True}, {"factor": 1, "positions": "rope", "temperature": 0.5},
])
def test_the_backward_equals_autograd_and_lazy_rows_get_no_score_gradient(options):
    xq, _, _ = random_case(9, 9, 4, True)
    answer = run_toy_backward(xq.tolist(), variant="probsparse", **options)
    check = answer["check"]
    assert answer["flow"] == "probsparse" and check["max_rel_diff"] <= check["bound"]
    active = answer["forward"]["probsparse"]["active"]
    scores = answer["gradients"]["scores"]  # (H, L, S)
    for h in range(scores.shape[0]):
        lazy = [i for i in range(9) if i not in set(active[h].tolist())]
        assert scores[h, lazy].abs().max() == 0
        assert scores[h, active[h]].abs().max() > 0
    assert answer["gradients"]["values"].abs().max() > 0
