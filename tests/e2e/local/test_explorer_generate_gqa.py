"""The explorer's "Continue this text" for a grouped-query model in bfloat16: a server of its own (attnscope
serve --dtype bfloat16) with a small random Qwen3 checkpoint (tests/conftest.py llama_dirs: 4 query heads sharing
2 key-value heads). The KV cache's bytes (2 a number), what multi-head attention would keep and the words saying
so are checked against the formula worked out here from the model's sizes; the tokens and the chosen head's
new rows against the API's own stream."""

from __future__ import annotations

import os

import httpx
import pytest
from playwright.sync_api import Page, expect

from bench.common import Server

from .test_explorer_generate import events, grown_map, open_explorer, run_to_end, shown_tokens

QWEN3 = "tiny-qwen3"
TEXT = "Hello world, attention is"
LAYER, HEAD = 1, 3


@pytest.fixture(scope="module")
def gqa_server(llama_dirs):
    server = Server(ATTNSCOPE_MODEL_PATHS=os.pathsep.join([str(llama_dirs["qwen3"])]), ATTNSCOPE_DTYPE="bfloat16")
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def live_server(gqa_server) -> str:
    return gqa_server.base


@pytest.fixture(scope="module")
def context(open_context, gqa_server):
    context = open_context(gqa_server.base)
    yield context
    context.close()


@pytest.fixture(scope="module")
def gqa_api(gqa_server):
    with httpx.Client(base_url=gqa_server.base, trust_env=False, timeout=60) as client:
        yield client


def test_grouped_query_attention_keeps_a_smaller_cache_and_says_so(page: Page, gqa_api):
    answer = events(gqa_api, text=TEXT, model=QWEN3, max_new_tokens=10)
    prompt, new = answer[0][1], [d for name, d in answer if name == "token"]
    heads, kv = prompt["n_heads"], prompt["n_kv_heads"]
    assert kv < heads  # the checkpoint is grouped
    assert prompt["dtype"] == "bfloat16"
    assert {m["id"]: m["dtype"] for m in gqa_api.get("/api/v1/models").json()["models"]} == {
        "minilm": "bfloat16", QWEN3: "bfloat16"}
    open_explorer(page, TEXT, QWEN3, layer=LAYER, head=HEAD)
    run_to_end(page, 10)
    assert [t["id"] for t in shown_tokens(page)] == [e["token"]["id"] for e in new]
    z = grown_map(page)
    for event in new:
        assert z[event["index"]][: event["index"] + 1] == event["attention"][LAYER][HEAD]

    size = len(prompt["tokens"]) + len(new)
    grouped = 2 * prompt["n_layers"] * size * kv * prompt["d_head"] * 2  # bytes of a bfloat16 number: 2
    multi_head = 2 * prompt["n_layers"] * size * heads * prompt["d_head"] * 2
    cache = page.locator("#generate-cache")
    expect(cache).to_have_attribute("data-bytes", str(grouped))
    expect(cache).to_have_attribute("data-multi-head", str(multi_head))
    expect(page.locator("#generate-cache-formula")).to_contain_text(
        f"· {size} tokens · {kv} key-value heads · {prompt['d_head']} (d_head) · 2 bytes (bfloat16) = {grouped:,} bytes")
    compare = page.locator("#generate-cache-compare")
    expect(compare).to_contain_text("Multi-head attention would keep")
    expect(compare).to_contain_text(f"({multi_head:,} B): a key-value head for each of the {heads} query heads instead of {kv}.")
    expect(compare).to_contain_text(f"shares each key-value head among {heads // kv} query heads and saves")

