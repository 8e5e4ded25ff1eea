"""The cost page (/cost) in real Chromium: the numbers shown against values worked out by hand here,
the plot against GET /api/v1/cost fetched by the test, the URL state, refusals, Chinese and 800 px."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese


def wait_drawn(page: Page, query: str = "", whole: bool = False) -> None:
    """Until the page has drawn the state whose URL starts with /cost + query (is exactly that, when whole)."""
    end = "$" if whole else ""
    expect(page.locator("#results")).to_have_attribute("data-drawn", re.compile(rf"^/cost{re.escape(query)}{end}"))


def cell(page: Page, quantity: str, column: str = "layer"):
    return page.locator(f'#cost-rows tr[data-quantity="{quantity}"] td[data-cell="{column}"]')


def shown(page: Page, quantity: str, column: str = "layer") -> int:
    return int(cell(page, quantity, column).get_attribute("data-value"))


def query_of(page: Page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def test_the_notes_example_reads_1192_gib(page: Page, api):
    page.goto("/cost")
    wait_drawn(page)
    page.locator('#cost-preset-buttons button[data-preset-id="notes"]').click()
    wait_drawn(page, "?d_model=4096&n_heads=64&seq_len=100000&bytes=2")
    expect(page.locator('button[data-preset-id="notes"]')).to_have_attribute("aria-pressed", "true")
    assert query_of(page) == {"d_model": "4096", "n_heads": "64", "seq_len": "100000", "bytes": "2"}
    expect(page.locator("#cost-seq-len")).to_have_value("100000")
    expect(page.locator("#cost-heads")).to_have_value("64")

    # 100000² x 64 x 2 bytes = 1.28e12 = 1192.09 GiB, computed here
    matrix = 100000**2 * 64 * 2
    assert matrix == 1_280_000_000_000 and f"{matrix / 2**30:.2f}" == "1192.09" and f"{matrix / 2**40:.3f}" == "1.164"
    assert shown(page, "attention_matrix_bytes") == matrix
    expect(cell(page, "attention_matrix_bytes")).to_contain_text("1,280,000,000,000 bytes = 1.28 × 10¹² bytes")
    expect(cell(page, "attention_matrix_bytes")).to_contain_text("1.28 TB · 1.16 TiB")
    expect(cell(page, "attention_matrix_bytes")).to_contain_text("B·H·S²·b = 1·64·100000²·2")
    units = page.locator("#cost-units")
    expect(units).to_contain_text("1,280,000,000,000 bytes = 1.28 × 10¹² bytes")
    expect(units).to_contain_text("1.28 TB = 1280 GB")
    expect(units).to_contain_text("1.164 TiB = 1192.09 GiB")

    # every other number by hand: E = 4096, H = 64, D = 64, S = 1e5, B = 1, b = 2
    e, h, d, s = 4096, 64, 64, 100_000
    assert shown(page, "parameters") == 4 * e * e + 4 * e == 67_125_248
    assert shown(page, "cache_bytes") == (5 * s * e + h * s * s) * 2
    assert shown(page, "flops") == 8 * s * e * e + 4 * s * s * e
    assert shown(page, "flash_attention_bytes") == (h * s * d + 2 * h * s) * 2 == 844_800_000
    assert shown(page, "attention_matrix_bytes", "total") == matrix  # one layer

    # the plot draws the API's curve, fetched here
    curve = api.get("/api/v1/cost", params={"d_model": e, "n_heads": h, "seq_len": s, "bytes": 2}).json()["curve"]
    data = page.evaluate("() => document.getElementById('plot-memory').data.map((d) => ({x: d.x, y: d.y}))")
    assert data[0] == {"x": curve["seq_len"], "y": curve["attention_matrix_bytes"]}
    assert data[1] == {"x": curve["seq_len"], "y": curve["flash_attention_bytes"]}
    assert data[2] == {"x": [s, s], "y": [matrix, 844_800_000]}  # the current S, marked on both lines
    assert page.evaluate("() => document.getElementById('plot-memory').layout.xaxis.type") == "log"
    assert page.evaluate("() => document.getElementById('plot-memory').layout.yaxis.type") == "log"


def test_the_iris_layer_and_each_served_model(page: Page, api):
    page.goto("/cost")
    wait_drawn(page)
    page.locator('button[data-preset-id="iris"]').click()
    wait_drawn(page, "?d_model=8&n_heads=2&seq_len=4&batch=16&bytes=8")
    assert shown(page, "parameters") == 4 * 8 * 8 + 4 * 8 == 288
    assert shown(page, "attention_matrix_bytes") == 16 * 2 * 4 * 4 * 8 == 4096
    expect(cell(page, "attention_matrix_bytes")).to_contain_text("4.1 kB · 4 KiB")
    expect(page.locator("#cost-units")).to_contain_text("4,096 bytes = 4.1 × 10³ bytes")
    # S = 4 < D + 2 = 6: the matrix (512 numbers) is smaller than FlashAttention's O, m and l (768)
    expect(page.locator("#cost-shares")).to_contain_text("smaller than FlashAttention’s working set")

    models = api.get("/api/v1/models").json()["models"]
    for model in models:
        expect(page.locator(f'button[data-preset-id="{model["id"]}"]')).to_have_count(1)
    page.locator('button[data-preset-id="minilm"]').click()
    wait_drawn(page, "?d_model=384&n_heads=12&seq_len=512&n_layers=6")
    minilm = next(m for m in models if m["id"] == "minilm")
    assert (minilm["d_model"], minilm["n_heads"], minilm["n_layers"], minilm["max_tokens"]) == (384, 12, 6, 512)
    assert shown(page, "parameters", "total") == 6 * (4 * 384**2 + 4 * 384) == 3_548_160
    assert shown(page, "attention_matrix_bytes", "total") == 6 * 12 * 512**2 * 4 == 75_497_472
    expect(page.locator("#cost-total-heading")).to_contain_text("L = 6")

    page.go_back()
    wait_drawn(page, "?d_model=8&n_heads=2")
    assert shown(page, "parameters") == 288


def test_typing_changes_the_url_and_the_numbers(page: Page):
    page.goto("/cost")
    wait_drawn(page)
    assert shown(page, "attention_matrix_bytes") == 8 * 1024**2 * 4  # the defaults: E 512, H 8, S 1024, fp32
    page.locator("#cost-seq-len").fill("2048")
    wait_drawn(page, "?seq_len=2048")
    assert query_of(page) == {"seq_len": "2048"}
    assert shown(page, "attention_matrix_bytes") == 8 * 2048**2 * 4 == 134_217_728
    page.locator("#cost-batch").fill("3")
    wait_drawn(page, "?seq_len=2048&batch=3")
    assert shown(page, "attention_matrix_bytes") == 3 * 8 * 2048**2 * 4

    page.locator("#cost-bytes").select_option("2")
    wait_drawn(page, "?seq_len=2048&batch=3&bytes=2")
    assert shown(page, "attention_matrix_bytes") == 3 * 8 * 2048**2 * 2
    page.locator("#cost-bias").uncheck()
    wait_drawn(page, "?seq_len=2048&batch=3&bytes=2&bias=false")
    assert shown(page, "parameters") == 4 * 512**2
    expect(cell(page, "parameters")).to_contain_text("4·E² = 4·512²")

    # out of range: said at once, nothing sent, the numbers before stay
    page.locator("#cost-layers").fill("0")
    expect(page.locator("#cost-invalid")).to_have_text("Layers L must be a whole number from 1 to 1,024.")
    expect(page.locator("#cost-layers")).to_have_attribute("aria-invalid", "true")
    assert query_of(page)["seq_len"] == "2048" and "n_layers" not in query_of(page)
    page.locator("#cost-layers").fill("4")
    wait_drawn(page, "?seq_len=2048&batch=3&n_layers=4&bytes=2&bias=false")
    expect(page.locator("#cost-invalid")).to_be_hidden()
    assert shown(page, "parameters", "total") == 4 * 4 * 512**2


@pytest.mark.expect_http_errors(422)
def test_heads_that_do_not_divide_the_width_are_worded_from_the_rule(page: Page):
    page.goto("/cost?d_model=384&n_heads=12")
    wait_drawn(page)
    page.locator("#cost-heads").fill("7")
    expect(page.locator("#cost-invalid")).to_have_text(
        "H = 7 does not divide E = 384: every head gets E / H dimensions, so pick a divisor of E, e.g. 6 or 8.")
    expect(page.locator("#cost-heads")).to_have_attribute("aria-invalid", "true")
    page.locator("#cost-heads").fill("8")  # the default H, so the URL leaves it out
    wait_drawn(page, "?d_model=384", whole=True)
    assert shown(page, "attention_matrix_bytes") == 8 * 1024**2 * 4
    expect(page.locator("#cost-invalid")).to_be_hidden()


@pytest.mark.expect_http_errors(422)
def test_chinese_has_no_english_left(page: Page):
    page.goto("/cost")
    wait_drawn(page)
    switch_to_chinese(page)
    wait_drawn(page)
    page.locator('button[data-preset-id="notes"]').click()
    wait_drawn(page, "?d_model=4096&n_heads=64&seq_len=100000&bytes=2")
    expect(page.locator("#cost-units")).to_contain_text("1,280,000,000,000 字节 = 1.28 × 10¹² 字节")
    expect(page.locator("#cost-units")).to_contain_text("1192.09 GiB")
    assert english_left(page) == []
    legend = page.evaluate("() => document.getElementById('plot-memory').data.map((d) => d.name)")
    assert legend[0].startswith("标准注意力") and legend[1].startswith("FlashAttention：")
    # a refusal in Chinese, and a number out of range
    page.locator("#cost-heads").fill("7")
    expect(page.locator("#cost-invalid")).to_contain_text("H = 7 不能整除 E = 4096")
    assert english_left(page) == []
    page.locator("#cost-seq-len").fill("")
    expect(page.locator("#cost-invalid")).to_have_text("词元数 S 必须是 1 到 10,000,000 之间的整数。")
    assert english_left(page) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_800_px_has_no_horizontal_overflow(page: Page, lang: str):
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"/cost?d_model=4096&n_heads=64&seq_len=100000&bytes=2&n_layers=24&lang={lang}")
    wait_drawn(page)
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
    table = page.locator("#cost-table").bounding_box()
    assert table["x"] + table["width"] <= 800
    plot = page.locator("#plot-memory").bounding_box()
    assert plot["width"] > 600  # the plot takes the width it has
