"""The cost page (/cost) in real Chromium: the numbers shown against values worked out by hand here,
the plot against GET /api/v1/cost fetched by the test, the URL state, refusals, Chinese and 800 px."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese

SWEEP_FILE = Path(__file__).resolve().parents[2] / "static" / "data" / "flash-sweep.json"


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
    expect(page.locator("#cost-kv-heads")).to_have_value("64")
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
    assert shown(page, "kv_cache_bytes") == 2 * s * h * d * 2 == 1_638_400_000  # G = H = 64
    assert shown(page, "attention_matrix_bytes", "total") == matrix  # one layer
    expect(page.locator("#cost-gqa")).to_be_hidden()  # multi-head attention: nothing to compare
    expect(page.locator(".cost-mha")).to_have_count(0)

    # the plot draws the API's curve, fetched here
    curve = api.get("/api/v1/cost", params={"d_model": e, "n_heads": h, "seq_len": s, "bytes": 2}).json()["curve"]
    data = page.evaluate("() => document.getElementById('plot-memory').data.map((d) => ({x: d.x, y: d.y}))")
    assert data[0] == {"x": curve["seq_len"], "y": curve["attention_matrix_bytes"]}
    assert data[1] == {"x": curve["seq_len"], "y": curve["flash_attention_bytes"]}
    assert data[2] == {"x": curve["seq_len"], "y": curve["kv_cache_bytes"]}
    assert data[3] == {"x": [s, s, s], "y": [matrix, 844_800_000, 1_638_400_000]}  # the current S on each line
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
    assert legend[2].startswith("KV 缓存")
    # grouped-query attention's caption, and the measured sweep below, in Chinese
    page.locator("#cost-kv-heads").fill("8")
    wait_drawn(page, "?d_model=4096&n_heads=64&n_kv_heads=8&seq_len=100000&bytes=2")
    expect(page.locator("#cost-gqa")).to_contain_text("分组查询注意力")
    expect(page.locator("#sweep")).to_have_attribute("data-drawn", "true")
    assert english_left(page) == []
    # a refusal in Chinese, and a number out of range
    page.locator("#cost-heads").fill("7")
    expect(page.locator("#cost-invalid")).to_contain_text("H = 7 不能整除 E = 4096")
    assert english_left(page) == []
    page.locator("#cost-seq-len").fill("")
    expect(page.locator("#cost-invalid")).to_have_text("词元数 S 必须是 1 到 10,000,000 之间的整数。")
    assert english_left(page) == []


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("width", [800, 390])
def test_narrow_screens_have_no_horizontal_overflow(page: Page, lang: str, width: int):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/cost?d_model=4096&n_heads=64&n_kv_heads=8&seq_len=100000&bytes=2&n_layers=24&lang={lang}")
    wait_drawn(page)
    expect(page.locator("#sweep")).to_have_attribute("data-drawn", "true")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    table = page.locator("#cost-table").bounding_box()
    assert table["x"] + table["width"] <= width
    plot = page.locator("#plot-memory").bounding_box()
    assert plot["width"] > width * 0.75  # the plot takes the width it has
    for plot_id in ("plot-sweep-memory", "plot-sweep-time"):
        box = page.locator(f"#{plot_id}").bounding_box()
        assert box["x"] + box["width"] <= width and box["width"] > width * 0.75


# ---- grouped-query attention and the KV cache ------------------------------------------------------


def both_units(n: int) -> str:
    """n bytes as the page writes them: decimal and binary units, 3 significant digits, then the digits."""
    def unit(base: int, names: list[str]) -> str:
        i = 0
        while i < len(names) - 1 and n >= base ** (i + 1):
            i += 1
        return f"{float(f'{n / base**i:.3g}'):g} {names[i]}"
    return f"{unit(1000, ['B', 'kB', 'MB', 'GB', 'TB'])} · {unit(1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB'])} ({n:,} bytes)"


@pytest.mark.expect_http_errors(422)
def test_grouped_query_attention_shows_the_kv_cache_it_saves(page: Page):
    page.goto("/cost?n_kv_heads=2")
    wait_drawn(page, "?n_kv_heads=2", whole=True)
    expect(page.locator("#cost-kv-heads")).to_have_value("2")
    # E = 512, H = 8, G = 2, D = 64, S = 1024, fp32: K and V of 1024 tokens at 2 heads
    kv = 2 * 1024 * 2 * 64 * 4
    mha = 2 * 1024 * 8 * 64 * 4
    assert (kv, mha, mha // kv) == (1_048_576, 4_194_304, 4)
    assert shown(page, "kv_cache_bytes") == kv
    expect(cell(page, "kv_cache_bytes")).to_contain_text("2·B·S·G·D·b = 2·1·1024·2·64·4")
    expect(cell(page, "kv_cache_bytes")).to_contain_text("1.05 MB · 1 MiB")
    beside = cell(page, "kv_cache_bytes").locator(".cost-mha")
    expect(beside).to_have_attribute("data-mha", str(mha))
    expect(beside).to_have_text("multi-head attention (G = H = 8): 4.19 MB · 4 MiB (4,194,304 bytes), "
                                "H / G = 4 times as much")
    assert shown(page, "parameters") == 2 * 512**2 + 2 * 512 * 128 + 2 * 512 + 2 * 128
    expect(cell(page, "parameters")).to_contain_text("2·E² + 2·E·G·D + 2·E + 2·G·D = 2·512² + 2·512·2·64")
    caption = page.locator("#cost-gqa")
    expect(caption).to_be_visible()
    assert both_units(mha - kv) == "3.15 MB · 3 MiB (3,145,728 bytes)"
    expect(caption).to_contain_text(
        f"the H = 8 query heads share G = 2 key-value heads, 4 query heads each, so the KV cache holds G / H = 2/8 "
        f"of what multi-head attention keeps: {both_units(kv)} instead of {both_units(mha)} per layer, "
        f"{both_units(mha - kv)} less; for all L = 1 layers {both_units(kv)} instead of {both_units(mha)}.")
    data = page.evaluate("() => document.getElementById('plot-memory').data.map((d) => ({x: d.x, y: d.y}))")
    assert data[2]["y"] == [2 * n * 2 * 64 * 4 for n in data[2]["x"]]

    # G = H: multi-head attention, no comparison, no caption, and the URL leaves G out
    page.locator("#cost-kv-heads").fill("8")
    wait_drawn(page, "", whole=True)
    assert shown(page, "kv_cache_bytes") == mha
    expect(caption).to_be_hidden()
    expect(page.locator(".cost-mha")).to_have_count(0)
    expect(cell(page, "parameters")).to_contain_text("4·E² + 4·E = 4·512² + 4·512")

    # while G = H, a new H takes G with it
    page.locator("#cost-heads").fill("16")
    wait_drawn(page, "?n_heads=16", whole=True)
    expect(page.locator("#cost-kv-heads")).to_have_value("16")
    expect(caption).to_be_hidden()
    # a G that does not divide H is refused, worded from the rule
    page.locator("#cost-kv-heads").fill("3")
    expect(page.locator("#cost-invalid")).to_have_text(
        "G = 3 does not divide H = 16: each key-value head is shared by H / G query heads, so pick a divisor of H, "
        "e.g. 2 or 4.")
    expect(page.locator("#cost-kv-heads")).to_have_attribute("aria-invalid", "true")
    page.locator("#cost-kv-heads").fill("4")
    wait_drawn(page, "?n_heads=16&n_kv_heads=4", whole=True)
    assert shown(page, "kv_cache_bytes") == 2 * 1024 * 4 * 32 * 4
    expect(caption).to_contain_text("the H = 16 query heads share G = 4 key-value heads")
    assert shown(page, "kv_cache_bytes", "total") == 2 * 1024 * 4 * 32 * 4  # L = 1


# ---- measured here: the committed sweep -------------------------------------------------------------


def test_the_measured_sweep_is_the_committed_files(page: Page):
    sweep = json.loads(SWEEP_FILE.read_text(encoding="utf-8"))
    page.goto("/cost")
    expect(page.locator("#sweep")).to_have_attribute("data-drawn", "true")
    results = {(r["method"], r["n"]): r for r in sweep["results"]}
    lengths = sorted({n for _, n in results})
    assert lengths == sweep["lengths"]
    rows = page.locator("#sweep-rows tr")
    expect(rows).to_have_count(len(lengths))
    for n in lengths:
        for method in ("naive", "tiled", "sdpa"):
            td = page.locator(f'#sweep-rows tr[data-n="{n}"] td[data-method="{method}"]')
            r = results[(method, n)]
            if "refused" in r:
                expect(td).to_have_attribute("data-refused", "true")
                matrix_gib = 4 * n * n / 2**30
                expect(td).to_have_text(f"not run: a {matrix_gib:g} GiB matrix, over the bound of "
                                        f"{sweep['naive_max_matrix_bytes'] / 2**30:g} GiB")
            else:
                assert float(td.get_attribute("data-seconds")) == r["seconds"]
                assert int(td.get_attribute("data-bytes")) == r["peak_rss_bytes"]
    # the plots draw the file's numbers: every measured point (a peak of 0 bytes cannot sit on a log axis)
    memory = page.evaluate("() => document.getElementById('plot-sweep-memory').data.map((d) => ({x: d.x, y: d.y}))")
    times = page.evaluate("() => document.getElementById('plot-sweep-time').data.map((d) => ({x: d.x, y: d.y}))")
    for i, method in enumerate(("naive", "tiled", "sdpa")):
        ran = [n for n in lengths if "refused" not in results[(method, n)]]
        assert times[i] == {"x": ran, "y": [results[(method, n)]["seconds"] for n in ran]}
        kept = [n for n in ran if results[(method, n)]["peak_rss_bytes"] > 0]
        assert memory[i] == {"x": kept, "y": [results[(method, n)]["peak_rss_bytes"] for n in kept]}
    assert memory[3] == {"x": lengths, "y": [4 * n * n for n in lengths]}  # one N × N float32 matrix

    # the captions: recomputed here from the file
    top = max(n for n in lengths if all("refused" not in results[(m, n)] for m in ("naive", "tiled", "sdpa")))
    naive = results[("naive", top)]["peak_rss_bytes"]
    ratio = float(f"{naive / (4 * top * top):.3g}")
    expect(page.locator("#sweep-memory-caption")).to_contain_text(
        f"At N = {top:,} the naive computation’s peak memory grew by")
    expect(page.locator("#sweep-memory-caption")).to_contain_text(f"{ratio:g} times one N × N matrix")
    refused = [n for n in lengths if "refused" in results[("naive", n)]]
    if refused:
        expect(page.locator("#sweep-memory-caption")).to_contain_text(f"The naive one was not run at N = {refused[0]:,}")
    ranked = sorted(("naive", "tiled", "sdpa"), key=lambda m: results[(m, top)]["seconds"])
    names = {"naive": "naive (matrix written out)", "tiled": "tiled (FlashAttention)", "sdpa": "torch SDPA"}
    expect(page.locator("#sweep-time-caption")).to_contain_text(
        f"At N = {top:,} the fastest was {names[ranked[0]]}")
    expect(page.locator("#sweep-time-caption")).to_contain_text(f"and the slowest {names[ranked[-1]]}")
    machine = sweep["machine"]
    expect(page.locator("#sweep-machine")).to_contain_text(f"{machine['cpu_count']} CPUs · torch {machine['torch']}")
    if machine.get("note"):
        expect(page.locator("#sweep-machine")).to_contain_text("Measured under load")
    else:
        expect(page.locator("#sweep-machine")).not_to_contain_text("under load")
