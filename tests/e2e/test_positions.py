"""The positional encodings page (/positions) in real Chromium, compared with GET /api/v1/positions
fetched by the test and with numpy references computed here."""

from __future__ import annotations

import re

import numpy as np
from playwright.sync_api import Page, expect


def table(api, **query) -> dict:
    response = api.get("/api/v1/positions", params=query)
    assert response.status_code == 200, response.text
    return response.json()


def drawn(page: Page, element: str, field: str = "z", trace: int = 0):
    return page.evaluate("([id, field, i]) => document.getElementById(id).data[i][field]", [element, field, trace])


def wait_drawn(page: Page) -> None:
    expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile(r"^/positions"))


def cosine_by_distance(matrix: np.ndarray) -> np.ndarray:
    """Mean over p of cos(P_p, P_p+k) for every k: written here, independently of the page."""
    unit = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    n = len(matrix)
    return np.array([np.mean(np.sum(unit[: n - k] * unit[k:], axis=1)) for k in range(n)])


def test_every_table_is_drawn_as_the_api_gives_it(page: Page, api):
    page.goto("/positions?length=40&d_model=32&heads=4&pair=3")
    wait_drawn(page)

    sinusoidal = table(api, kind="sinusoidal", length=40, d_model=32)
    learned = table(api, kind="learned", length=40)
    rope = table(api, kind="rope", length=40, d_model=32)
    alibi = table(api, kind="alibi", length=16, n_heads=4)

    assert np.allclose(drawn(page, "plot-sinusoidal"), sinusoidal["matrix"], atol=1e-12)
    assert np.allclose(drawn(page, "plot-learned"), learned["matrix"], atol=1e-12)
    assert np.array(drawn(page, "plot-learned")).shape == (40, 384)
    assert np.allclose(drawn(page, "plot-angles"), rope["angles"], atol=1e-12)

    # Similarity against distance: the page's curves equal numpy's on the same tables.
    for trace, name in ((0, "matrix"), (1, "matrix")):
        source = sinusoidal if trace == 0 else learned
        worst = np.max(np.abs(np.array(drawn(page, "plot-distance", "y", trace)) - cosine_by_distance(np.array(source[name]))))
        assert worst < 1e-9, worst
    # The sinusoidal dot products depend on the distance only: every p gives the same value at k = 5.
    unit = np.array(sinusoidal["matrix"]) / np.sqrt(16)
    assert np.ptp(np.sum(unit[:-5] * unit[5:], axis=1)) < 1e-9

    # RoPE's circle: pair 3 of the first 24 positions at (cos θ, sin θ).
    angles = np.array(rope["angles"])[:24, 3]
    assert np.allclose(drawn(page, "plot-rotation", "x", 1), np.cos(angles), atol=1e-12)
    assert np.allclose(drawn(page, "plot-rotation", "y", 1), np.sin(angles), atol=1e-12)
    expect(page.locator("#rotation-hint")).to_contain_text("6, 7")

    # RoPE's dot product, with the API's angles: the same q and k score the same at positions (5, 3) and (9, 7),
    # not at (9, 3); other contents at (5, 3) score otherwise. The hint says exactly that, in both languages.
    table_angles = np.array(rope["angles"])

    def rotated(x: np.ndarray, p: int) -> np.ndarray:
        c, s_ = np.cos(table_angles[p]), np.sin(table_angles[p])
        out = np.empty_like(x)
        out[0::2], out[1::2] = x[0::2] * c - x[1::2] * s_, x[0::2] * s_ + x[1::2] * c
        return out

    q, k, other = np.random.default_rng(0).normal(size=(3, 32))
    score = lambda a, b, i, j: rotated(a, i) @ rotated(b, j)  # noqa: E731
    assert abs(score(q, k, 5, 3) - score(q, k, 9, 7)) < 1e-12
    assert abs(score(q, k, 9, 3) - score(q, k, 5, 3)) > 1e-3 and abs(score(other, k, 5, 3) - score(q, k, 5, 3)) > 1e-3
    hint = page.locator("#rope-heading + .hint")
    assert "contents" in hint.inner_text() and "i − j" in hint.inner_text() and "only on their distance" not in hint.inner_text()

    # ALiBi: one plot per head, each the API's bias, which is -m_h |i - j| with the paper's slopes.
    plots = page.locator("#plot-alibi .alibi-plot")
    expect(plots).to_have_count(4)
    slopes = [2 ** (-8 * (h + 1) / 4) for h in range(4)]
    distance = np.abs(np.subtract.outer(np.arange(16), np.arange(16)))
    for h in range(4):
        z = np.array(plots.nth(h).evaluate("(gd) => gd.data[0].z"))
        assert np.allclose(z, alibi["bias"][h], atol=0)
        assert np.allclose(z, -slopes[h] * distance, atol=1e-12)

    page.goto("/positions?lang=zh")
    expect(page.locator("#rope-heading + .hint")).to_contain_text("内容")
    zh = page.locator("#rope-heading + .hint").inner_text()
    assert "i − j" in zh and "只取决于" not in zh


def test_the_sizes_live_in_the_url_and_back_works(page: Page, api):
    page.goto("/positions")
    wait_drawn(page)
    expect(page.locator("#positions-length")).to_have_value("64")
    assert np.array(drawn(page, "plot-sinusoidal")).shape == (64, 64)

    page.locator("#positions-length").fill("100")
    page.locator("#positions-d-model").fill("16")
    page.locator("#positions-heads").fill("2")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/positions\?length=100&d_model=16&heads=2$"))
    expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile(r"length=100"))
    assert np.array(drawn(page, "plot-sinusoidal")).shape == (100, 16)
    expect(page.locator("#plot-alibi .alibi-plot")).to_have_count(2)
    assert np.allclose(drawn(page, "plot-sinusoidal"), table(api, kind="sinusoidal", length=100, d_model=16)["matrix"])

    page.go_back()
    expect(page.locator("#positions-length")).to_have_value("64")
    expect(page.locator("#results")).to_have_attribute("data-drawn", "/positions")
    assert np.array(drawn(page, "plot-sinusoidal")).shape == (64, 64)


def test_sizes_out_of_range_in_the_link_are_brought_within_the_limits(page: Page):
    page.goto("/positions?length=9999&d_model=33&heads=0&pair=999")
    wait_drawn(page)
    expect(page.locator("#positions-length")).to_have_value("512")
    expect(page.locator("#positions-d-model")).to_have_value("32")  # even: sinusoidal and RoPE pair dimensions
    expect(page.locator("#positions-heads")).to_have_value("1")
    expect(page.locator("#positions-pair")).to_have_value("15")  # the last pair of 32 dimensions
    assert np.array(drawn(page, "plot-sinusoidal")).shape == (512, 32)
