"""Every step of /toy tells and draws what is true for its variant: for each setup the walkthrough is
walked step by step in real Chromium, and the numbers each step draws are recomputed here (numpy) from
the numbers drawn before it, with the formula its title and captions name: additive scores through tanh,
no √d_k for dot and additive, the temperature, ALiBi's bias in the mask, RoPE's rotation, one-hot rows
for the hard variants, per-head widths. Where a caption says what rows sum to, the drawn rows are summed.
The weights (W_q, W_k, W_v, W_o and the additive ones) are taken from the answer the page drew."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
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


def gumbel_noise(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """g = −log(−log u), u from the documented generator (seed + stream 0, float64), written here from the
    API's description rather than taken from model/lab/variants.py."""
    u = torch.rand(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).numpy()
    return -np.log(-np.log(np.maximum(u, np.finfo(np.float64).tiny)))


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
    if answer["positions"] == "rope":  # what the body claims of the rotated dot product, checked with numpy
        at = lambda x, p: rope(np.vstack([np.zeros((p, x.size)), x]))[p]  # noqa: E731 (x rotated at position p)
        q2, k0, q1 = P["q"][2, h * dk:(h + 1) * dk], P["k"][0, h * dk:(h + 1) * dk], P["q"][1, h * dk:(h + 1) * dk]
        assert abs(at(q2, 3) @ at(k0, 1) - at(q2, 2) @ at(k0, 0)) < 1e-12  # the same i − j: the same score
        assert abs(at(q2, 3) @ at(k0, 0) - at(q2, 2) @ at(k0, 0)) > 1e-3  # another i − j: another score
        assert abs(at(q1, 2) @ at(k0, 0) - at(q2, 2) @ at(k0, 0)) > 1e-3  # other contents: another score
        said = {"en": page.locator("#stage-body").inner_text(), "zh": page.evaluate(
            "async () => (await import('/static/js/i18n/zh.js')).default['step.split.rope.body']")}
        assert "contents" in said["en"] and "i − j" in said["en"] and "distance" not in said["en"]
        assert "内容" in said["zh"] and "i − j" in said["zh"] and "只取决于" not in said["zh"]

    show_step(page, "scores")
    S = grid(page, "scores")
    if variant == "additive":
        assert "tanh" in title(page) and "K_hᵀ" not in title(page)
        assert "q·W + k·U" in title(page) and "W_q" not in title(page)
        v = np.array(answer["additive"]["v"][h])
        # the scorer's own W and U are drawn, as the API used them, and a = q·W, B = K·U hold in the drawn numbers
        Wa, Ua = grid(page, "additive-w"), grid(page, "additive-u")
        assert same(Wa, answer["additive"]["w_q"][h]) and same(Ua, answer["additive"]["w_k"][h])
        assert caption(page, "additive-w").startswith("W:") and f"head {h}" in caption(page, "additive-w")
        assert caption(page, "additive-u").startswith("U:") and "W_q" not in caption(page, "additive-a")
        a, B, H = grid(page, "additive-a"), grid(page, "additive-b"), grid(page, "additive-h")
        assert same(a, split["q"][q:q + 1] @ Wa) and same(B, split["k"] @ Ua)
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
    if variant == "gumbel":  # softmax(masked + g/τ) = softmax((s + g)/τ + M), s the scaled scores before τ
        g = gumbel_noise((1, heads, L, L), answer["seed"])[0, h]
        soft = grid(page, "softmax-soft") if one_hot else A
        s_before = S * (1.0 / np.sqrt(dk))
        assert same(soft, softmax_rows(masked + g / tau), 1e-12) and same(soft, softmax_rows((s_before + g) / tau + M), 1e-12)
        body = page.locator("#stage-body").inner_text()
        assert "(s + g)/τ + M" in body and f"τ = {tau:g}" in body
        if not one_hot:
            assert "softmax(masked scores + g/τ) = softmax((s + g)/τ + M)" in words
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



CHAPTER_OF = "async (view) => (await import('/static/js/learn/chapters.js')).CHAPTERS.find((c) => c.view.name === view).n"


def test_the_learn_variants_chapter_draws_s_and_counts_what_its_cells_read(page: Page, api):
    """The variants chapter of /learn (found by its view: chapters move) with Gumbel, τ = 0.1, seed 0: the
    scores panel is s = q·k/√d_k itself, not s/τ (the formula beside it divides by τ once), the weights are the
    API's softmax((s + g)/τ), and the caption's counts are those of the drawn cells at two decimals (most read
    0.00, though none is 0); with straight-through every row is exactly one-hot and the caption says so."""
    page.goto("/learn")
    n = page.evaluate(CHAPTER_OF, "variantsView")
    page.goto(f"/learn/{n}?variant=gumbel&temperature=0.1&seed=0")
    expect(page.locator("#chapter-view")).to_have_attribute("data-drawn", re.compile(rf"^/learn/{n}\?"))
    answer = api.post("/api/v1/toy", json={"variant": "gumbel", "temperature": 0.1, "seed": 0}).json()
    q, k = np.array(answer["steps"]["split"]["q"][0]), np.array(answer["steps"]["split"]["k"][0])
    s = q @ k.T / np.sqrt(q.shape[1])
    g = gumbel_noise((1, answer["n_heads"], len(q), len(k)), 0)[0, 0]
    weights = softmax_rows((s + g) / 0.1)
    assert same(grid(page, "learn-variant-scores"), s) and same(grid(page, "learn-variant-weights"), weights, 1e-12)
    about = page.locator("#learn-variant-about").inner_text()
    assert "softmax((s + g) / τ)" in about and "τ = 0.1" in about and "seed 0" in about
    said = page.locator("#chapter-caption").inner_text()
    shown = np.round(weights, 2)
    zeros = int((shown == 0).sum())
    one_hot = sum(1 for row in shown if (row == 1).sum() == 1 and ((row == 0) | (row == 1)).all())
    assert zeros > 0 and (weights > 0).all()  # the case the caption once got wrong: no exact 0, many 0.00
    assert f"{zeros} of the {weights.size} weights read 0.00" in said and f"largest reads {weights.max():.2f}" in said
    assert f"{one_hot} of the {len(weights)} rows read one-hot" in said and "every key gets some weight" not in said

    page.locator("#learn-straight").check()
    expect(page.locator("#chapter-view")).to_have_attribute("data-drawn", re.compile(r"straight=1"))
    hot = grid(page, "learn-variant-weights")
    assert same(grid(page, "learn-variant-soft"), weights, 1e-12)
    assert ((hot == 0) | (hot == 1)).all() and (hot.argmax(axis=1) == weights.argmax(axis=1)).all()
    assert f"all {len(hot)} rows put all their weight on one key" in page.locator("#chapter-caption").inner_text()

    # The Gumbel tip, as the page shows it (and in 中文), against the API for seeds 0–9 at every τ the chapter
    # offers: lowering τ with the seed kept makes each row's largest weight grow (or stay at 1); at the lowest τ
    # most rows read one-hot at two decimals; the seed the tip names still splits as many rows as it says.
    temperatures = sorted((float(x) for x in page.locator("#learn-temperatures button").evaluate_all(
        "(buttons) => buttons.map((b) => b.dataset.value)")), reverse=True)
    tips = {"en": page.locator("#chapter-try li").filter(has_text="Gumbel").inner_text(), "zh": page.evaluate(
        "async () => (await import('/static/js/i18n/learn-zh.js')).default['learn.c3.try2']")}
    named_en = re.search(r"with seed (\d+), (\w+) rows still split their weight between two keys", tips["en"])
    named_zh = re.search(r"随机种子为 (\d+) 时，仍有(.)行把权重分给两个", tips["zh"])
    seed, rows_split = int(named_en.group(1)), {"one": 1, "two": 2, "three": 3}[named_en.group(2)]
    assert (int(named_zh.group(1)), "一两三".index(named_zh.group(2)) + 1) == (seed, rows_split)
    assert f"from {temperatures[0]:g} to {temperatures[-1]:g}" in tips["en"]

    one_hot = rows = 0
    for each in range(10):
        tops = []
        for tau in temperatures:
            w = np.array(api.post("/api/v1/toy", json={"variant": "gumbel", "temperature": tau, "seed": each}).json()
                         ["steps"]["softmax"][0])
            tops.append(w.max(axis=1))
        for before, after in zip(tops, tops[1:], strict=False):  # τ lowered one step
            assert ((after > before) | ((before > 1 - 1e-9) & (after > 1 - 1e-9))).all(), (each, before, after)
        shown = np.round(w, 2)  # the lowest τ
        hot = [(row == 1).sum() == 1 and ((row == 0) | (row == 1)).all() for row in shown]
        one_hot, rows = one_hot + sum(hot), rows + len(hot)
        if each == seed:
            split = [row for row, h in zip(shown, hot, strict=True) if not h]
            assert len(split) == rows_split and all((row > 0).sum() == 2 for row in split), shown
    assert one_hot > rows / 2, (one_hot, rows)  # "most rows end one-hot"
