"""/steps after the attention: the rest of the Transformer block (static/js/figures/block.js) in real Chromium,
compared with /api/v1/trace fetched by the test. MiniLM (post-norm, LayerNorm, GELU) walks on from the output
projection to the layer's output in English and 中文, each caption's numbers recomputed here from the trace; a
small random Llama (pre-norm, RMSNorm, a gated SiLU MLP: local/test_steps_rope.py, on the Llama family's server)
shows its gate, SiLU and product and, on its last layer, the final norm; at 390 px and 512 tokens no block step
makes the page wider than the screen. The session's server and browser."""

from __future__ import annotations

import json
import math
import re
import struct
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect

from bench.common import TextMaker

from .helpers import STEPS, caption, drawn, english_left, max_abs_diff, stage

MINILM_BLOCK = ["add_1", "norm_1", "mlp_hidden", "mlp_act", "mlp_out", "add_2", "norm_2"]
SENTENCE = "The cat sat on the mat."
NUMBER = r"(−?[\d.]+(?:e[−+]?\d+)?)"


def trace(api, text: str, layer: int, model: str | None = None) -> dict:
    response = api.post("/api/v1/trace", json={"text": text, "layer": layer, "head": 0, "model": model, "block": True})
    assert response.status_code == 200, response.text
    return response.json()


def block_arrays_f32(api, text: str, layer: int) -> dict[str, list[list[float]]]:
    """The block's arrays from the f32 trace (the JSON answer of a 512-token block is over the JSON cap),
    decoded as docs/encoding.md lays it out: the header, then each array's float32 numbers in order."""
    response = api.post("/api/v1/trace?encoding=f32", json={"text": text, "layer": layer, "head": 0, "block": True})
    assert response.status_code == 200, response.text
    body = response.content
    magic, size = struct.unpack_from("<4sI", body, 0)
    assert magic == b"ATN1"
    header = json.loads(body[8 : 8 + size])
    offset, arrays = 8 + size, {}
    for entry in header["arrays"]:
        rows, cols = entry["shape"][-2:] if len(entry["shape"]) > 1 else (1, entry["shape"][0])
        count = math.prod(entry["shape"])
        if entry["step"] == "block":
            flat = struct.unpack_from(f"<{count}f", body, offset)
            arrays[entry["key"]] = [list(flat[r * cols:(r + 1) * cols]) for r in range(rows)]
        offset += 4 * count
    assert offset == len(body)
    return arrays


def steps_url(text: str, **params) -> str:
    return "/steps?" + "&".join([f"text={quote(text)}"] + [f"{key}={value}" for key, value in params.items()])


def said(text: str, name: str) -> float:
    """The number a caption writes after `name = ` (the page's true minus sign read back)."""
    found = re.search(re.escape(name) + r" = " + NUMBER, text)
    assert found, (name, text)
    return float(found.group(1).replace("−", "-"))


def norm(row: list[float]) -> float:
    return math.sqrt(sum(v * v for v in row))


def next_step(page: Page, step: str, language: str = "en") -> None:
    """Press Next and wait for `step`; in Chinese, no English may be left on the page."""
    page.locator("#step-next").click()
    expect(stage(page)).to_have_attribute("data-step", step)
    if language == "zh":
        assert re.search(r"[\u4e00-\u9fff]", page.locator("#stage-title").inner_text()), step
        assert english_left(page) == [], step


@pytest.mark.parametrize("language", ["en", "zh"])
def test_minilm_walks_from_the_output_to_the_layers_output_with_the_traces_numbers(page: Page, api, language: str):
    layer, q = 2, 3
    expected = trace(api, SENTENCE, layer)
    block = expected["block"]
    A = block["arrays"]
    assert [s["name"] for s in block["steps"]] == ["block_input", *MINILM_BLOCK]
    page.goto(steps_url(SENTENCE, layer=layer, head=0, query=q, step="output", lang=language))
    expect(stage(page)).to_have_attribute("data-step", "output")
    walk = page.locator("#step-list button.step-item").evaluate_all("(bs) => bs.map((b) => b.dataset.step)")
    assert walk == STEPS + MINILM_BLOCK  # post-norm: the block's steps after the attention's, in the model's order

    next_step(page, "add_1", language)  # x + attention(x): the three vectors of token q
    assert max_abs_diff(drawn(page, "block-add_1-x"), [A["block_input"][q]]) <= 1e-6
    assert max_abs_diff(drawn(page, "block-add_1-s"), [expected["steps"]["output"][q]]) <= 1e-6
    assert max_abs_diff(drawn(page, "block-add_1-y"), [A["add_1"][q]]) <= 1e-6
    assert said(caption(page, "block-add_1-y"), "‖·‖") == pytest.approx(norm(A["add_1"][q]), rel=1e-3)
    lines = page.evaluate("() => document.getElementById('plot-block-add_1-norms').data.slice(0, 2).map((d) => d.y)")
    assert lines[0] == pytest.approx([norm(r) for r in A["block_input"]], rel=1e-5)  # every token, before and after
    assert lines[1] == pytest.approx([norm(r) for r in A["add_1"]], rel=1e-5)

    next_step(page, "norm_1", language)  # LayerNorm of the sum: its mean and variance, γ and β from the trace's params
    x = A["add_1"][q]
    mean = sum(x) / len(x)
    variance = sum((v - mean) ** 2 for v in x) / len(x)
    stats = caption(page, "block-norm_1-xhat")
    assert said(stats, "μ") == pytest.approx(mean, rel=1e-3)
    assert said(stats, "σ²") == pytest.approx(variance, rel=1e-3)
    assert max_abs_diff(drawn(page, "block-norm_1-gamma"), [block["params"]["norm_1"]["weight"]]) <= 1e-6
    assert max_abs_diff(drawn(page, "block-norm_1-beta"), [block["params"]["norm_1"]["bias"]]) <= 1e-6
    assert max_abs_diff(drawn(page, "block-norm_1-y"), [A["norm_1"][q]]) <= 1e-6
    title = page.locator("#stage-title").inner_text()
    assert "LayerNorm" in title and ("post-norm" in title if language == "en" else "后归一化" in title)
    assert "1e−12" in page.locator("#stage-body").inner_text()  # the model's eps in the formula

    next_step(page, "mlp_hidden", language)
    assert max_abs_diff(drawn(page, "block-mlp_hidden-h"), [A["mlp_hidden"][q]]) <= 1e-5
    assert len(drawn(page, "block-mlp_hidden-h")[0]) == block["d_ff"] == 1536

    next_step(page, "mlp_act", language)  # GELU: the units left near zero, counted here from the trace
    row = A["mlp_act"][q]
    top = max(abs(v) for v in row)
    near = sum(1 for v in row if abs(v) < 0.01 * top)
    negative = sum(1 for v in A["mlp_hidden"][q] if v < 0)
    text = caption(page, "block-mlp_act-a")
    if language == "en":
        assert f"{near} of 1536 units near zero" in text and f"{negative} had a negative input" in text, text
    else:
        assert f"1536 个单元中有 {near} 个接近 0" in text and f"{negative} 个的输入为负" in text, text
    assert caption(page, "block-mlp_act-curve").count("✓") == 1  # the activation recomputed for every token agrees
    assert drawn(page, "block-mlp_act-curve", "x") == pytest.approx(sorted(A["mlp_hidden"][q]), abs=1e-6)  # the curve

    next_step(page, "mlp_out", language)
    assert max_abs_diff(drawn(page, "block-mlp_out-o"), [A["mlp_out"][q]]) <= 1e-5
    assert max_abs_diff(drawn(page, "block-mlp_out-in"), [A["norm_1"][q]]) <= 1e-6  # the only row it is made from
    alone = max(abs(a - b) for r1, r2 in zip(A["mlp_alone"], A["mlp_out"], strict=True)
                for a, b in zip(r1, r2, strict=True))  # the server's MLP on each row by itself
    assert alone <= 1e-5
    text = caption(page, "block-mlp_out-o")
    assert text.count("✓") == 1 and ("run again on each token's row alone" if language == "en" else "单独再送进 MLP") in text

    next_step(page, "add_2", language)
    next_step(page, "norm_2", language)  # the layer's output, and what reads it
    y = A["add_2"][q]
    m = sum(y) / len(y)
    assert said(caption(page, "block-norm_2-xhat"), "σ²") == pytest.approx(sum((v - m) ** 2 for v in y) / len(y), rel=1e-3)
    body = page.locator("#stage-body").inner_text()
    assert ("layer 3 reads it" in body) if language == "en" else ("第 3 层把它作为输入读取" in body), body
    expect(page.locator("#step-next")).to_be_disabled()
    assert "step=norm_2" in page.url


def test_at_390_px_and_512_tokens_no_block_step_is_wider_than_the_screen(page: Page, api):
    text = TextMaker(seed=11).text(512)
    layer, q = 4, 300
    A = block_arrays_f32(api, text, layer)
    assert len(A["norm_2"]) == 512
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(steps_url(text, layer=layer, head=0, query=q, step="add_1"))
    expect(stage(page)).to_have_attribute("data-step", "add_1", timeout=20_000)
    for step in MINILM_BLOCK:
        page.locator(f'#step-list button[data-step="{step}"]').click()
        expect(stage(page)).to_have_attribute("data-step", step)
        expect(page.locator("#stage-window")).to_be_hidden()  # one token's vectors: no window over a matrix
        widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        assert widths[0] <= widths[1], (step, widths)
        key = {"add_1": "y", "norm_1": "y", "mlp_hidden": "h", "mlp_act": "a", "mlp_out": "o", "add_2": "y", "norm_2": "y"}[step]
        assert max_abs_diff(drawn(page, f"block-{step}-{key}"), [A[step][q]]) <= 1e-5, step
        assert len(drawn(page, f"block-{step}-norms", "y")) == 512  # ‖·‖ of every token
