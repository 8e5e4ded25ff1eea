"""Luong's general score, cosine scores and the de-stationary factors τ, δ on the toy, against numpy written
here; and the claims the page's captions make about τ and δ, recomputed.

Largest deviations measured (float64, run with -s), limit 1e-12: general 6.7e-15, cosine 4.3e-15,
a δ equal for every key 1.1e-16, per-key δ ratios 2e-14 (τ as 1/temperature: limit 1e-12, not printed).
"""

import math

import numpy as np
import pytest

from model.lab.toy import run_toy
from model.lab.toy_options import GENERAL_STREAM, seeded

RNG = np.random.default_rng(4)
X = RNG.normal(size=(5, 6)).round(2)
KV = RNG.normal(size=(4, 6)).round(2)
W = {n: RNG.normal(size=(6, 6)).round(2) for n in "qkvo"}
H, DK = 3, 2


def softmax(a):
    e = np.exp(a - a.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def heads(x):
    return x.reshape(len(x), H, DK).transpose(1, 0, 2)  # (H, L, DK)


def toy(**options):
    return run_toy(X.tolist(), KV.tolist(), None, H, {n: m.tolist() for n, m in W.items()}, **options)


def arr(t):
    return t.numpy()


def output(weights):
    v = heads(KV @ W["v"])
    return (weights @ v).transpose(1, 0, 2).reshape(len(X), H * DK) @ W["o"]


def test_general_score_is_q_ws_kt_per_head_with_its_seeded_ws():
    out = toy(variant="general", seed=6)
    ws = arr(out["general_w"])
    assert np.array_equal(ws, seeded((H, DK, DK), 6, GENERAL_STREAM).numpy()) and ws.shape == (H, DK, DK)
    q, k = heads(X @ W["q"]), heads(KV @ W["k"])
    scores = np.einsum("htd,hde,hse->hts", q, ws, k)
    worst = max(np.abs(arr(out["steps"]["scores"]) - scores).max(),
                np.abs(arr(out["steps"]["softmax"]) - softmax(scores)).max(),  # scale 1, as Luong's
                np.abs(arr(out["steps"]["output"]) - output(softmax(scores))).max())
    print(f"general vs numpy: {worst:.2g}")
    assert out["scale"] == 1.0 and worst <= 1e-12


@pytest.mark.parametrize("scale", [None, 4.0])
def test_cosine_scores_are_unit_dot_products_times_the_scale(scale):
    out = toy(variant="cosine", **({} if scale is None else {"scale": scale}))
    q, k = heads(X @ W["q"]), heads(KV @ W["k"])
    unit = lambda x: x / np.linalg.norm(x, axis=-1, keepdims=True)  # noqa: E731
    cosines = unit(q) @ unit(k).transpose(0, 2, 1)
    factor = math.sqrt(DK) if scale is None else scale
    worst = max(np.abs(arr(out["steps"]["scores"]) - cosines).max(),
                np.abs(arr(out["steps"]["softmax"]) - softmax(cosines * factor)).max(),
                np.abs(arr(out["steps"]["output"]) - output(softmax(cosines * factor))).max())
    print(f"cosine scale={scale} vs numpy: {worst:.2g}")
    assert out["scale"] == factor and worst <= 1e-12 and np.abs(cosines).max() <= 1


@pytest.mark.parametrize("variant", ["scaled_dot", "general", "cosine", "additive"])
def test_tau_multiplies_the_scores_like_one_over_a_temperature(variant):
    plain, tau = toy(variant=variant), toy(variant=variant, tau=2.5)
    np.testing.assert_allclose(arr(tau["steps"]["scores"]), arr(plain["steps"]["scores"]) * 2.5, rtol=1e-14)
    hot = toy(variant=variant, temperature=1 / 2.5)
    worst = np.abs(arr(tau["steps"]["softmax"]) - arr(hot["steps"]["softmax"])).max()
    assert worst <= 1e-12
    sharp = lambda a: a.max(-1).mean()  # noqa: E731
    assert sharp(arr(tau["steps"]["softmax"])) > sharp(arr(plain["steps"]["softmax"]))  # τ > 1 sharpens
    assert sharp(arr(toy(variant=variant, tau=0.4)["steps"]["softmax"])) < sharp(arr(plain["steps"]["softmax"]))


def test_a_delta_equal_for_every_key_changes_no_weight():
    plain, shifted = toy(causal=True), toy(causal=True, delta=3.0)
    assert np.abs(arr(shifted["steps"]["scores"]) - arr(plain["steps"]["scores"]) - 3.0).max() <= 1e-12
    worst = np.abs(arr(shifted["steps"]["softmax"]) - arr(plain["steps"]["softmax"])).max()
    print(f"delta equal for every key, weights moved by {worst:.2g}")
    assert worst <= 1e-12 and list(arr(shifted["delta"])) == [3.0] * 4


def test_a_per_key_delta_multiplies_each_weight_by_exp_of_its_scaled_shift():
    delta = np.array([0.0, 1.0, -0.5, 2.0])
    plain, shifted = toy(), toy(delta=delta.tolist())
    a, b = arr(plain["steps"]["softmax"]), arr(shifted["steps"]["softmax"])
    ratio = (b / a) / (b / a)[..., :1]  # each key's weight change relative to key 0's
    worst = np.abs(ratio - np.exp(plain["scale"] * delta)).max()
    print(f"per-key delta ratios: {worst:.2g}")
    assert worst <= 1e-12
    assert (b[..., 3] > a[..., 3]).all() and (b[..., 2] < a[..., 2]).all()  # weight moves to the larger δ
