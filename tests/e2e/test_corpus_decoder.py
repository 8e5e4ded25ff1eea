"""/corpus in Chromium over an index of the test GPT-2 (tests/checkpoints.py, written here with `attnscope corpus
index`): the page offers the metrics the index offers (no to_cls, to_sep or to_next, which are 0 on every text of a
causal model without special tokens), and a pattern RE2 refuses is refused on the page in the server's words."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import expect

from attnscope import cli
from bench.common import Server

LINES = ["The cat sat on the mat.", "Where is the dog?", "Hello world, attention is all you need."]


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory, checkpoint_dirs):
    root = tmp_path_factory.mktemp("gpt2-corpus-e2e")
    (root / "corpus.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    gpt2 = checkpoint_dirs["gpt2"]
    assert cli.main(["corpus", "index", str(root / "corpus.txt"), "--model", str(gpt2), "--out", str(root / "idx"),
                     "--quiet"]) == 0
    server = Server(ATTNSCOPE_CORPUS=str(root / "idx"), ATTNSCOPE_MODEL_PATHS=os.pathsep.join([str(gpt2)]))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server.base, root / "idx"
    finally:
        server.stop()


@pytest.fixture
def live_server(corpus_server) -> str:
    return corpus_server[0]


@pytest.fixture(scope="module")
def corpus_context(open_context, corpus_server):
    context = open_context(corpus_server[0])
    yield context
    context.close()


@pytest.fixture
def context(corpus_context):
    return corpus_context


@pytest.mark.expect_http_errors(422)
def test_the_page_offers_the_indexs_metrics_and_refuses_an_re2_pattern_in_its_words(page, corpus_server):
    base, index = corpus_server
    offered = json.loads((index / "manifest.json").read_text(encoding="utf-8"))["metrics"]
    assert not {"to_cls", "to_sep", "to_next"} & set(offered)
    page.goto("/corpus")
    for select in ("#corpus-by", "#corpus-x", "#corpus-y"):
        expect(page.locator(f"{select} option")).to_have_count(len(offered))
        assert page.locator(f"{select} option").evaluate_all("(os) => os.map((o) => o.value)") == offered
    with httpx.Client(base_url=base, trust_env=False, timeout=60) as client:
        said = client.get("/api/v1/corpus/pattern", params={"layer": 0, "head": 0, "query": "(?=a)b", "key": "a"})
    assert said.status_code == 422
    page.goto(f"/corpus?layer=0&head=0&query={quote('(?=a)b')}&key=a")
    expect(page.locator("body")).to_contain_text(said.json()["errors"][0]["msg"])
