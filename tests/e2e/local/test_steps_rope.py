"""Decoders of the Llama family on /steps and in the explorer: the Llama family's server (conftest.py
llama_family_server) with small random Llama, Mistral and Gemma 2 checkpoints (tests/conftest.py llama_dirs: 4 query heads sharing 2 key-value heads; Llama with RoPE's
llama3 scaling, Mistral with a sliding window in every layer, Gemma 2 in its local layer 0 only).
The split step draws each head's q and k before and after the rotation and the chosen query's angles, with
the numbers of /api/v1/trace fetched by the test and captions that say the model's own base, scaling and
key-value groups; the mask step says a layer's sliding window, read here from the checkpoint's config.json and
counted in the drawn mask; the explorer's grid and head view group the query heads by key-value head, and its
model picker says each model in the page's language. MiniLM, served beside them, keeps the plain split step and an
ungrouped grid."""

from __future__ import annotations

import itertools
import json
import math
import re
from urllib.parse import quote

import httpx
import numpy as np
import pytest
from playwright.sync_api import Page, expect

from ..helpers import STEPS, caption, drawn, english_left, max_abs_diff, show_step, stage, switch_to_chinese, wait_until
from ..test_steps_block import SENTENCE, next_step, said
from ..test_steps_block import steps_url as block_steps_url
from ..test_steps_block import trace as block_trace

LLAMA = "tiny-llama"
TEXT = "Hello world, attention is all you need."
LAYER, HEAD, QUERY = 1, 3, 5


@pytest.fixture(scope="module")
def llama_server(llama_family_server):
    return llama_family_server


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


def listed_angles(page: Page, said: str, exact) -> list[int | None]:
    """The pairs the angles caption lists, in order (None: an ellipsis), each number checked against the one the
    chart writes in that pair's cell and against the exact angle `exact[i]` to the digits it shows."""
    listed = re.search(r": (i = .*?) · θ_i", said).group(1).split(" · ")
    cells = page.evaluate("() => document.querySelector('[data-matrix=\"split-angles\"]').data[0].text[0]")
    pairs: list[int | None] = []
    for part in listed:
        if part == "…":
            pairs.append(None)
            continue
        i, value = re.fullmatch(r"i = (\d+): (\S+)", part).groups()
        pairs.append(int(i))
        assert value == cells[int(i)], f"pair {i}: {value} in the caption, {cells[int(i)]} in the chart"
        decimals = len(value.split(".")[1]) if "." in value else 0
        assert abs(float(value.replace("−", "-")) - exact[int(i)]) <= 0.5 * 10**-decimals + 1e-12, (value, exact[int(i)])
    for before, after in itertools.pairwise(pairs):  # two listed pairs side by side are neighbours: no skip unsaid
        if before is not None and after is not None:
            assert after == before + 1, f"pairs {before + 1} to {after - 1} left out without an ellipsis"
    return pairs


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
    assert listed_angles(page, said, QUERY * frequencies) == [0, 1, None, 5]
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


def config_of(llama_dirs, kind: str) -> dict:
    return json.loads((llama_dirs[kind] / "config.json").read_text())


def window_of(config: dict, layer: int) -> int | None:
    """A layer's sliding window as the checkpoint's config.json gives it: sliding_window in every layer (Mistral), or
    in the layers that layer_types names sliding_attention (Gemma 2)."""
    types = config.get("layer_types")
    if types is not None and types[layer] != "sliding_attention":
        return None
    return config["sliding_window"]


@pytest.mark.parametrize("kind, layer", [("mistral", 1), ("gemma2", 0), ("gemma2", 1)])
def test_the_mask_step_says_the_layers_own_sliding_window(page: Page, llama_dirs, kind: str, layer: int):
    config = config_of(llama_dirs, kind)
    window = window_of(config, layer)
    page.goto(steps_url(f"tiny-{kind}", layer=layer, head=1, query=6, step="mask"))
    expect(stage(page)).to_have_attribute("data-step", "mask")
    # the drawn mask: the keys each query row keeps, counted in the matrix drawn (null: hidden)
    rows = drawn(page, "mask")
    assert len(rows) > config["sliding_window"]  # longer than the window: the band shows
    kept = [[j for j, v in enumerate(row) if v is not None] for row in rows]
    for i, keys in enumerate(kept):  # each row keeps a run of keys that ends at the query itself
        assert keys == list(range(keys[0], i + 1)), f"row {i} keeps {keys}"
    band = max(len(keys) for keys in kept)
    note = page.locator("#stage-note").inner_text()
    model_note = page.locator("#model-note").inner_text()
    if window is None:  # a global layer: the causal mask, every earlier key kept
        assert band == len(rows) and "W =" not in note and note.startswith("Causal mask")
        local = [i for i, t in enumerate(config["layer_types"]) if t == "sliding_attention"]
        where = f"layer {local[0]}" if len(local) == 1 else "layers " + ", ".join(map(str, local))
        assert f"sliding window of {config['sliding_window']} keys is in {where} only" in model_note
        return
    said = re.search(r"window W = (\d+): query i may only look at keys i − (\d+) … i", note)
    assert said, note
    assert int(said.group(1)) == window == band and int(said.group(2)) == window - 1
    assert f"band {band} keys wide" in note
    assert f"sliding window of {window} keys" in model_note and f"the {window - 1} tokens before it" in model_note
    if kind == "mistral":  # its RoPE has no scaling: the angles are p·θ^(−2i/d) with the config's own θ and d
        show_step(page, "split")
        theta, d = config["rope_parameters"]["rope_theta"], config["head_dim"]
        exact = [6 * theta ** (-2 * i / d) for i in range(d // 2)]
        assert listed_angles(page, caption(page, "split-angles"), exact) == [0, 1, None, d // 2 - 1]


def test_the_model_picker_and_the_intro_say_each_model_in_the_pages_language(page: Page, llama_api, llama_dirs):
    models = llama_api.get("/api/v1/models").json()["models"]
    page.goto("/?lang=zh&model=tiny-gemma2")
    expect(page.locator("#intro")).to_be_visible()
    titles = page.locator("#model-select option").evaluate_all("(os) => Object.fromEntries(os.map((o) => [o.value, o.title]))")
    assert set(titles) == {m["id"] for m in models}
    for model in models:
        title = titles[model["id"]]
        data = [model["name"].split(" (")[0], model["id"], model["architecture"]]  # the name, the id, the family
        rest = title
        for word in data:
            rest = rest.replace(word, "")
        assert re.findall(r"[A-Za-z]{2,}", rest) == [], f"English in {title!r}"
        assert re.search(r"[\u4e00-\u9fff]", rest), title
        kind = model["id"].removeprefix("tiny-")
        if kind in ("mistral", "gemma2"):  # the window, as config.json sets it, in the picker and the intro
            window = config_of(llama_dirs, kind)["sliding_window"]
            assert f"{window} 个键" in title and f"{window - 1} 个词元" in title, title
    gemma = config_of(llama_dirs, "gemma2")
    local = ", ".join(str(i) for i, t in enumerate(gemma["layer_types"]) if t == "sliding_attention")
    intro = page.locator("#intro-window")
    expect(intro).to_contain_text(f"第 {local} 层有 {gemma['sliding_window']} 个键的滑动窗口")  # its local layers only
    assert page.locator("#model-select").get_attribute("title") == titles["tiny-gemma2"]
    page.goto("/?lang=zh&model=tiny-llama")
    expect(page.locator("#intro")).to_be_visible()
    expect(intro).to_be_hidden()  # no window, nothing said


# ---- the rest of the block (../test_steps_block.py walks MiniLM's) ----

def test_a_gated_pre_norm_model_shows_its_gate_silu_product_and_the_final_norm(page: Page, llama_api):
    layer, q = 1, 2  # the checkpoint's last layer
    expected = block_trace(llama_api, SENTENCE, layer, LLAMA)
    block = expected["block"]
    A = block["arrays"]
    assert (block["order"], block["norm"], block["activation"], block["gated"]) == ("pre", "rms", "silu", True)
    page.goto(block_steps_url(SENTENCE, model=LLAMA, layer=layer, head=0, query=q, step="mlp_gate"))
    expect(stage(page)).to_have_attribute("data-step", "mlp_gate")
    walk = page.locator("#step-list button.step-item").evaluate_all("(bs) => bs.map((b) => b.dataset.step)")
    assert walk == ["block_input", "norm_1", *STEPS, "add_1", "norm_2", "mlp_gate", "mlp_gate_act", "mlp_hidden",
                    "mlp_act", "mlp_out", "add_2", "final_norm"]
    assert max_abs_diff(drawn(page, "block-mlp_gate-h"), [A["mlp_gate"][q]]) <= 1e-5

    next_step(page, "mlp_gate_act")
    expect(page.locator("#stage-title")).to_have_text("SiLU of the gate")
    silu = [g / (1 + math.exp(-g)) for g in A["mlp_gate"][q]]
    assert max_abs_diff(drawn(page, "block-mlp_gate_act-a"), [silu]) <= 1e-5

    next_step(page, "mlp_hidden")
    expect(page.locator("#stage-title")).to_have_text(re.compile(r"^MLP up: u = x·W_up"))
    next_step(page, "mlp_act")
    expect(page.locator("#stage-title")).to_have_text("Gated: SiLU(g) ⊙ u")
    product = [a * u for a, u in zip(A["mlp_gate_act"][q], A["mlp_hidden"][q], strict=True)]
    assert max_abs_diff(drawn(page, "block-mlp_act-a"), [product]) <= 1e-5
    assert "✓" in caption(page, "block-mlp_act-a")

    page.locator('#step-list button[data-step="add_2"]').click()
    expect(stage(page)).to_have_attribute("data-step", "add_2")
    expect(page.locator("#stage-body")).to_contain_text("the final norm (next step) still normalises it")
    next_step(page, "final_norm")
    expect(page.locator("#stage-title")).to_have_text("Final RMSNorm after the last block (pre-norm)")
    y = A["add_2"][q]
    assert said(caption(page, "block-final_norm-xhat"), "ms") == pytest.approx(sum(v * v for v in y) / len(y), rel=1e-3)
    assert max_abs_diff(drawn(page, "block-final_norm-y"), [A["final_norm"][q]]) <= 1e-5
    expect(page.locator('[data-matrix="block-final_norm-beta"]')).to_have_count(0)  # RMSNorm has no β
