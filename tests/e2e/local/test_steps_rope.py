"""Decoders of the Llama family on /steps and in the explorer: a server of its own with a small random Llama
checkpoint (tests/conftest.py llama_dirs: 4 query heads sharing 2 key-value heads, RoPE with llama3 scaling).
The split step draws each head's q and k before and after the rotation and the chosen query's angles, with
the numbers of /api/v1/trace fetched by the test and captions that say the model's own base, scaling and
key-value groups; the explorer's grid and head view group the query heads by key-value head. MiniLM, served
beside it, keeps the plain split step and an ungrouped grid."""

from __future__ import annotations

import os
from urllib.parse import quote

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from bench.common import Server

from ..helpers import drawn, english_left, max_abs_diff, show_step, stage, switch_to_chinese, wait_until

LLAMA = "tiny-llama"
TEXT = "Hello world, attention is all you need."
LAYER, HEAD, QUERY = 1, 3, 5


@pytest.fixture(scope="module")
def llama_server(llama_dirs):
    server = Server(ATTNSCOPE_MODEL_PATHS=os.pathsep.join([str(llama_dirs["llama"])]))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def live_server(llama_server) -> str:
    return llama_server.base


@pytest.fixture(scope="module")
def context(open_context, llama_server):
    context = open_context(llama_server.base)
    yield context
    context.close()


@pytest.fixture(scope="module")
def llama_api(llama_server):
    with httpx.Client(base_url=llama_server.base, trust_env=False, timeout=60) as client:
        yield client


def steps_url(model: str, text: str = TEXT, **params: object) -> str:
    query = "&".join([f"text={quote(text)}", f"model={model}"] + [f"{k}={v}" for k, v in params.items()])
    return f"/steps?{query}"


def caption(page: Page, key: str) -> str:
    return page.locator(f'figure:has([data-matrix="{key}"]) figcaption').inner_text()


def test_the_split_step_draws_q_and_k_before_and_after_the_rotation(page: Page, llama_api):
    trace = llama_api.post("/api/v1/trace", json={"text": TEXT, "model": LLAMA, "layer": LAYER, "head": HEAD}).json()
    model = next(m for m in llama_api.get("/api/v1/models").json()["models"] if m["id"] == LLAMA)
    page.goto(steps_url(LLAMA, layer=LAYER, head=HEAD, query=QUERY, step="split"))
    expect(stage(page)).to_have_attribute("data-step", "split")
    for m in "qk":
        assert max_abs_diff(drawn(page, f"split-{m}"), trace["steps"]["split"][m][0]) == 0
        assert max_abs_diff(drawn(page, f"split-{m}-rotated"), trace["rotated"][m][0]) == 0
    assert page.locator("#stage-grid [data-matrix=\"split-v-rotated\"]").count() == 0  # V is not turned
    # the angles p·f_i of the query's position, f_i the model's own frequencies
    frequencies = np.array(trace["rope"]["frequencies"], dtype=np.float64)
    angles = np.array(drawn(page, "split-angles"), dtype=np.float64)
    assert angles.shape == (1, 6) and np.abs(angles[0] - QUERY * frequencies).max() <= 1e-12
    assert angles[0, 0] == QUERY  # f_0 = θ^0 = 1: pair 0 turns by p radians
    said = caption(page, "split-angles")
    assert said.startswith(f"angles p·θ_i in radians at position p = {QUERY} (query “ all”)"), said
    assert f"i = 0: {QUERY} · i = 1: {float(f'{QUERY * frequencies[1]:.3g}'):g} · i = 5: {float(f'{QUERY * frequencies[5]:.3g}'):g}" in said
    assert said.endswith("θ_i = 10000^(−2i/12) (llama3 scaling: divided by 8 where the wavelength 2π/θ_i is over 32, "
                         "kept where it is under 8, blended between)"), said
    # head 3 reads key-value head 1: K's and V's columns 12–23 of 24
    group = model["n_heads"] // model["n_kv_heads"]
    kv = HEAD // group
    assert trace["kv_head"] == [kv] == [1]
    assert caption(page, "split-k").startswith("K[:, 12:24] · head 3 · 8×12 · before RoPE")
    assert caption(page, "split-v").startswith("V_h = V[:, 12:24] · head 3 · 8×12")
    assert caption(page, "split-k-full").startswith("K · 8×24: 2 slices of 12")
    body = page.locator("#stage-body")
    expect(body).to_contain_text("Q is cut into 4 slices of 12 columns, K and V into 2.")
    expect(body).to_contain_text("θ_i = 10000^(−2i/12) (llama3 scaling: divided by 8")
    expect(body).to_contain_text("Query head 3 reads key-value head 1: its K and V are shared with the other query "
                                 "heads of its group, 2 (grouped-query attention: 2 key-value heads serve 4 query heads).")
    # the scores are made of the rotated q and k
    show_step(page, "scores")
    assert max_abs_diff(drawn(page, "scores-q"), [row for row in trace["rotated"]["q"][0]]) == 0
    switch_to_chinese(page)
    expect(stage(page)).to_have_attribute("data-step", "scores")
    show_step(page, "split")
    expect(body).to_contain_text("查询头 3 读取键值头 1：它的 K 和 V 与同组的其他查询头 2 共用")
    assert english_left(page) == []


def test_the_group_sentence_lists_every_other_head_of_the_group(page: Page):
    page.goto(steps_url(LLAMA, layer=0, head=0, query=0, step="split"))
    expect(stage(page)).to_have_attribute("data-step", "split")
    expect(page.locator("#stage-body")).to_contain_text("Query head 0 reads key-value head 0: its K and V are shared "
                                                        "with the other query heads of its group, 1 (")
    # at position 0 nothing is turned
    assert drawn(page, "split-angles") == [[0] * 6]
    assert max_abs_diff([drawn(page, "split-q-rotated")[0]], [drawn(page, "split-q")[0]]) == 0


def test_a_model_without_rope_or_groups_keeps_the_plain_split_step(page: Page, llama_api):
    trace = llama_api.post("/api/v1/trace", json={"text": TEXT, "layer": 2, "head": 5}).json()
    assert "rotated" not in trace and "kv_head" not in trace
    page.goto(steps_url("minilm", layer=2, head=5, query=3, step="split"))
    expect(stage(page)).to_have_attribute("data-step", "split")
    keys = page.locator("#stage-grid [data-matrix]").evaluate_all("(els) => els.map((e) => e.dataset.matrix)")
    assert keys == ["split-q-full", "split-q", "split-k-full", "split-k", "split-v-full", "split-v"]
    assert max_abs_diff(drawn(page, "split-k"), trace["steps"]["split"]["k"][0][:]) == 0
    expect(page.locator("#stage-title")).to_have_text("Split into heads")
    expect(page.locator("#stage-body")).to_have_text("Q and K are cut into 12 slices of 32 columns, V into 12 slices "
                                                     "of 32; head 5 works only with its own slices.")
    assert caption(page, "split-k").startswith("K_h = K[:, 160:192]")


def explorer(page: Page, model: str) -> None:
    page.goto(f"/?text={quote(TEXT)}&model={model}&layer=1&head=3")
    wait_until(page, "() => { const gd = document.getElementById('heatmap'); return gd && gd.data; }")


@pytest.mark.parametrize("width", [1440, 390])
def test_the_explorer_groups_the_query_heads_by_key_value_head(page: Page, width):
    page.set_viewport_size({"width": width, "height": 1000})
    explorer(page, LLAMA)
    grid = page.locator("#overview")
    expect(grid).to_have_attribute("data-kv-groups", "2")
    labels = grid.locator(".kv-label")
    expect(labels).to_have_text(["KV 0", "KV 1"])
    assert labels.evaluate_all("(ls) => ls.map((l) => l.title)") == [
        "key-value head 0, shared by query heads 0, 1", "key-value head 1, shared by query heads 2, 3"]
    # each label stands over its own heads' columns, a gap with a line between the groups
    heads = grid.locator(".axis-label:not(.kv-label)").filter(has_text="H")
    boxes = {name: grid.locator(".axis-label", has_text=name).first.bounding_box() for name in ("H0", "H1", "H2", "H3")}
    assert heads.count() == 4
    for label, (first, last) in zip(["KV 0", "KV 1"], [("H0", "H1"), ("H2", "H3")], strict=True):
        box = labels.filter(has_text=label).bounding_box()
        assert box["x"] <= boxes[first]["x"] + 1 and box["x"] + box["width"] >= boxes[last]["x"] + boxes[last]["width"] - 1
    gap = grid.locator(".kv-gap").first.bounding_box()
    assert boxes["H1"]["x"] + boxes["H1"]["width"] <= gap["x"] <= boxes["H2"]["x"]
    thumbs = grid.locator("button.thumb[data-layer='0']").evaluate_all("(bs) => bs.map((b) => Number(b.dataset.head))")
    assert thumbs == [0, 1, 2, 3]
    # the head view: the toggles of one key-value head side by side, under its label
    page.locator("#head-view").scroll_into_view_if_needed()
    groups = page.locator("#head-view .head-view-kv")
    expect(groups).to_have_count(2)
    expect(groups.locator(".head-view-kv-label")).to_have_text(["KV 0", "KV 1"])
    assert groups.evaluate_all("(gs) => gs.map((g) => [...g.querySelectorAll('button')].map((b) => b.dataset.head))") == [
        ["0", "1"], ["2", "3"]]
    groups.nth(0).locator("button").nth(1).click()  # the toggles still toggle
    expect(page.locator('#head-view button.head-view-toggle[data-head="1"]')).to_have_attribute("aria-pressed", "true")
    switch_to_chinese(page)
    expect(grid.locator(".kv-label")).to_have_text(["KV 头 0", "KV 头 1"])
    assert english_left(page) == []


def test_a_multi_head_model_has_no_groups_in_the_explorer(page: Page):
    explorer(page, "minilm")
    grid = page.locator("#overview")
    expect(grid).to_have_attribute("data-kv-groups", "0")
    assert grid.locator(".kv-label, .kv-gap").count() == 0
    assert grid.evaluate("(g) => g.style.gridTemplateColumns") == ""
