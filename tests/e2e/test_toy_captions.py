"""Every step of /toy tells and draws what is true for its variant: for each setup the walkthrough is
walked step by step in real Chromium, and the numbers each step draws are recomputed here (numpy) from
the numbers drawn before it, with the formula its title and captions name: additive scores through tanh,
no √d_k for dot and additive, the temperature, ALiBi's bias in the mask, RoPE's rotation, one-hot rows
for the hard variants, per-head widths. Where a caption says what rows sum to, the drawn rows are summed.
The weights (W_q, W_k, W_v, W_o and the additive ones) are taken from the answer the page drew."""

from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import Page, expect

from .helpers import STEPS, drawn, show_step, stage

TOL = 1e-9  # the numbers are float64 from the server and float64 in the page


def grid(page: Page, key: str) -> np.ndarray:
    """A drawn matrix with hidden entries (null, −∞) as NaN."""
    return np.array([[np.nan if v is None else v for v in row] for row in drawn(page, key)], dtype=float)


def caption(page: Page, key: str) -> str:
    return page.locator(f'[data-matrix="{key}"]').locator("xpath=ancestor::figure[1]").locator("figcaption").inner_text()


def title(page: Page) -> str:
    return page.locator("#stage-title").inner_text()


def same(a: np.ndarray, b: np.ndarray, tol: float = TOL) -> bool:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return a.shape == b.shape and bool((np.isnan(a) == np.isnan(b)).all()) and bool(
        np.nanmax(np.abs(np.nan_to_num(a - b)), initial=0.0) <= tol)


def softmax_rows(masked: np.ndarray) -> np.ndarray:
    out = np.zeros_like(masked)
    for i, row in enumerate(masked):
        seen = ~np.isnan(row)
        if seen.any():
            e = np.exp(row[seen] - row[seen].max())
            out[i, seen] = e / e.sum()
    return out


def sinusoidal(n: int, d: int) -> np.ndarray:
    p = np.arange(n)[:, None]
    freq = 10000.0 ** (-np.arange(0, d, 2) / d)
    table = np.zeros((n, d))
    table[:, 0::2], table[:, 1::2] = np.sin(p * freq), np.cos(p * freq)
    return table


def rope(x: np.ndarray) -> np.ndarray:
    """RoFormer's rotation of interleaved pairs: row p, pair i turned by p·10000^(−2i/d)."""
    n, d = x.shape
    angle = np.arange(n)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    a, b = x[:, 0::2], x[:, 1::2]
    out = np.empty_like(x)
    out[:, 0::2], out[:, 1::2] = a * np.cos(angle) - b * np.sin(angle), a * np.sin(angle) + b * np.cos(angle)
    return out


# (id, URL options): between them every telling of every step; the worked example's 4 queries and keys
# and 2 heads unless the options say otherwise
SETUPS = [
    ("scaled-dot-sinusoidal", "positions=sinusoidal&wq=1,0,2,0;0,1,0,1;1,1,0,0;0,0,1,2&wo=0,1,0,0;1,0,0,1;0,0,2,0;1,0,0,0"),
    ("dot-rope-causal", "variant=dot&positions=rope&causal=1"),
    ("additive", "variant=additive"),
    ("additive-narrow-hot", "variant=additive&d_keys=1&d_values=3&temperature=2"),
    ("hard-alibi-hidden-cold", "variant=hard&positions=alibi&hidden=1&temperature=0.5"),
    ("sample", "variant=sample&seed=3"),
    ("gumbel", "variant=gumbel&temperature=0.5&seed=2"),
    ("gumbel-straight-through", "variant=gumbel&straight_through=1"),
    ("every-key-hidden", "hidden=0,1,2,3"),
    ("linear-causal-hot", "variant=linear&causal=1&temperature=2"),
]


@pytest.mark.parametrize("options", [s[1] for s in SETUPS], ids=[s[0] for s in SETUPS])
def test_every_step_draws_what_it_names(page: Page, options: str):
    answers = []  # the page first asks for the worked example ({}), then for the setup it shows
    page.on("response", lambda r: answers.append(r) if r.url.endswith("/api/v1/toy") and r.request.method == "POST" else None)
    page.goto(f"/toy?step=input&head=1&query=2&{options}")
    expect(stage(page)).to_have_attribute("data-step", "input")
    answer = answers[-1].json()
    variant, tau, h, q = answer["variant"], answer["temperature"], 1, 2
    one_hot = variant in ("hard", "sample") or (variant == "gumbel" and answer["straight_through"])
    dk, dv, heads = answer["d_keys"], answer["d_values"], answer["n_heads"]
    W = {m: np.array(answer["weights"][m]) for m in "qkvo"}

    # input: what was sent, plus the sinusoidal table when the positions say so
    x = {m: grid(page, f"input-{m}") for m in "qkv"}
    sent = np.array([[1, 0, 2, 1], [0, 1, 1, 2], [1, 1, 0, 1], [2, 0, 1, 0]], dtype=float)
    added = sinusoidal(4, 4) if answer["positions"] == "sinusoidal" else 0.0
    assert same(x["q"], sent + added)
    assert ("P" in caption(page, "input-q")) == (answer["positions"] == "sinusoidal")

    show_step(page, "project")
    P = {m: grid(page, f"project-{m}") for m in "qkv"}
    for m in "qkv":
        assert same(P[m], x[m] @ W[m])
    assert f"4×{heads * dv}" in caption(page, "project-v")

    show_step(page, "split")
    split = {m: grid(page, f"split-{m}") for m in "qkv"}
    for m, width in (("q", dk), ("k", dk), ("v", dv)):
        part = P[m][:, h * width:(h + 1) * width]
        rotated = answer["positions"] == "rope" and m != "v"
        assert same(split[m], rope(part) if rotated else part), m
        assert ("RoPE" in caption(page, f"split-{m}")) == rotated

    show_step(page, "scores")
    S = grid(page, "scores")
    if variant == "additive":
        assert "tanh" in title(page) and "K_hᵀ" not in title(page)
        wq, wk = np.array(answer["additive"]["w_q"][h]), np.array(answer["additive"]["w_k"][h])
        v = np.array(answer["additive"]["v"][h])
        a, B, H = grid(page, "additive-a"), grid(page, "additive-b"), grid(page, "additive-h")
        assert same(a, split["q"][q:q + 1] @ wq) and same(B, split["k"] @ wk)
        assert same(H, np.tanh(a + B))
        assert same(grid(page, "additive-row")[:, 0], H @ v) and same(S[q], H @ v)
        expect(page.locator("#qk-panel")).to_be_hidden()  # no q·k to take apart
    elif variant == "linear":  # φ(Q_h)·φ(K_h)ᵀ, φ(x) = elu(x) + 1
        assert "φ(Q_h) · φ(K_h)ᵀ" in title(page)
        phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # noqa: E731
        assert same(grid(page, "scores-q"), phi(split["q"])) and same(grid(page, "scores-kt"), phi(split["k"]).T)
        assert same(S, phi(split["q"]) @ phi(split["k"]).T)
        expect(page.locator("#qk-panel")).to_be_hidden()
    else:
        assert "Q_h · K_hᵀ" in title(page)
        assert same(S, grid(page, "scores-q") @ grid(page, "scores-kt"))
        expect(page.locator("#qk-panel")).to_be_visible()

    show_step(page, "scale")
    scaled = grid(page, "scale")
    factor = (1.0 if variant in ("dot", "additive", "linear") else 1 / np.sqrt(dk)) / tau
    shown_factor = float(page.locator("#scale-factor").inner_text().replace("×", "").replace("−", "-"))
    assert abs(shown_factor - factor) < 5e-5 and same(scaled, S * factor)
    assert f"{factor:.4f}" in title(page) or (factor == 1 and "1" in title(page))
    effect = caption(page, "scale")
    assert ("shrink" in effect) == (factor < 1) and ("grow" in effect) == (factor > 1)

    show_step(page, "mask")
    M, masked = grid(page, "mask-matrix"), grid(page, "mask")
    assert same(masked, grid(page, "mask-before") + M)
    L = S.shape[0]
    expected = np.zeros((L, L))
    if answer["positions"] == "alibi":
        slope = 2.0 ** (-8.0 * (h + 1) / heads)
        expected = -slope * np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
        assert "ALiBi" in title(page) and "ALiBi" in caption(page, "mask-matrix")
    if "causal=1" in options:
        expected[np.triu_indices(L, 1)] = np.nan
    for key in answer["hidden_keys"]:
        expected[:, key] = np.nan
    assert same(M, expected)

    show_step(page, "softmax")
    A = grid(page, "softmax")
    words = caption(page, "softmax")
    if one_hot:
        rows = A[~np.isnan(masked).all(axis=1)]
        assert ((rows == 0) | (rows == 1)).all() and (rows.sum(axis=1) == 1).all() and "one-hot" in words
        soft = grid(page, "softmax-soft")
        if variant == "hard":
            assert "argmax" in title(page)
            assert (A.argmax(axis=1) == np.nanargmax(np.where(np.isnan(masked), -np.inf, masked), axis=1))[
                ~np.isnan(masked).all(axis=1)].all()
        else:  # the kept key is one the soft row gives weight to
            assert (soft[A == 1] > 0).all()
    elif variant == "gumbel":
        assert "Gumbel" in title(page) and "softmax(masked scores)" not in words
    elif variant == "linear":  # each row over its sum: no exponential
        assert "no softmax" in title(page) and "softmax" not in words
        kept = np.nan_to_num(masked, nan=0.0)
        assert same(A, kept / kept.sum(axis=1, keepdims=True), 1e-12)
    else:
        assert "softmax" in title(page).lower()
        assert same(A, softmax_rows(masked), 1e-12)
    every_row_sees = not np.isnan(masked).all(axis=1).any()
    sums = A.sum(axis=1)
    if every_row_sees:
        assert "each row sums to 1" in words and "except" not in words and np.allclose(sums, 1, atol=1e-12)
    else:
        assert "except" in words
        assert np.allclose(sums[np.isnan(masked).all(axis=1)], 0) and np.allclose(sums[~np.isnan(masked).all(axis=1)], 1)

    show_step(page, "weighted_sum")
    weights = grid(page, "ws-weights")[:, 0]
    Vh = grid(page, "ws-v")
    assert same(weights, A[q]) and same(Vh, split["v"])
    assert same(grid(page, "ws-rows"), weights[:, None] * Vh)
    out = grid(page, "ws-sum")[0]
    assert same(out, weights @ Vh) and f"1×{dv}" in caption(page, "ws-sum")
    if one_hot and weights.sum() == 1:
        assert "kept key" in title(page) and same(out, Vh[int(weights.argmax())])

    show_step(page, "concat")
    C = grid(page, "concat")
    assert same(C[q, h * dv:(h + 1) * dv], out) and C.shape == (4, heads * dv)

    show_step(page, "output")
    assert same(grid(page, "output"), grid(page, "output-concat") @ W["o"])
    assert page.locator("#stage").get_attribute("data-step") == STEPS[-1]

