"""/api/v1/corpus over a small index built by model/corpus/index.py (MiniLM, 60 short texts, a markup line, an
empty line and a line over the model's limit): each answer equals the same query recomputed here from the index's
Parquet files with pyarrow and plain Python (no DuckDB, no query.py), the refusals name the field and what to
send, and a server without a corpus answers 409 saying how to start one."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from attnscope import cli
from model.corpus.index import build
from model.corpus.query import CorpusError

SUBJECTS = ["The cat", "A dog", "My sister", "The old man", "Our teacher", "The small bird"]
VERBS = ["saw", "followed", "painted", "helped", "heard"]
OBJECTS = ["the river.", "her friend.", "a red car.", "the tall tree.", "John and Mary.", "it again and again."]
MARKUP = "<img src=x onerror=alert(1)>"  # must be shown as text on the page, never as HTML


def corpus_lines() -> list[str]:
    """60 texts to index (58 short sentences, the markup line, one longer sentence) and 2 lines to skip."""
    lines = [f"{SUBJECTS[i % 6]} {VERBS[i % 5]} {OBJECTS[(i // 2) % 6]}" for i in range(58)]
    lines.insert(3, MARKUP)
    lines.insert(10, "   ")  # empty: skipped
    lines.insert(20, "word " * 600)  # over MiniLM's 512 tokens: skipped, never truncated
    lines.insert(30, "When Mary went to the store, she bought milk because she had none left, and then she walked "
                     "back along the long road by the river while the sun set slowly behind the hills.")
    return lines


def write_index(root: Path) -> Path:
    """The test corpus and its MiniLM index under `root`; returns the index's directory."""
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(corpus_lines()) + "\n", encoding="utf-8")
    build(corpus, "minilm", root / "index")
    return root / "index"


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory) -> Path:
    return write_index(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def corpus_client(index_dir):
    with TestClient(create_app(Settings(allowed_hosts=["testserver"], corpus=index_dir))) as c:
        yield c


# ---- the reference: the Parquet files read with pyarrow, the queries written out in Python ----------------------

@pytest.fixture(scope="session")
def tables(index_dir):
    heads = pq.read_table(index_dir / "heads").to_pylist()
    texts = {row["text_id"]: row for row in pq.read_table(index_dir / "texts").to_pylist()}
    return heads, texts


def defined(value) -> bool:
    return value is not None and not math.isnan(value)


def reference_top(tables, layer, head, by, k, lowest=False):
    heads, texts = tables
    rows = [r for r in heads if r["layer"] == layer and r["head"] == head and defined(r[by])]
    rows.sort(key=lambda r: ((r[by] if lowest else -r[by]), r["text_id"]))
    return [{"text_id": r["text_id"], "text": texts[r["text_id"]]["text"], "tokens": texts[r["text_id"]]["tokens"],
             "value": r[by], "pairs": [pair_of(p, texts[r["text_id"]]["tokens"]) for p in r["pairs"]]}
            for r in rows[:k]]


def pair_of(p, tokens):
    return {"query": p["query"], "key": p["key"], "query_token": tokens[p["query"]],
            "key_token": tokens[p["key"]], "weight": p["weight"]}


def reference_pattern(tables, layer, head, query, key, k):
    heads, texts = tables
    found = []
    for r in heads:
        if r["layer"] != layer or r["head"] != head:
            continue
        tokens = texts[r["text_id"]]["tokens"]
        matching = [p for p in r["pairs"] if re.search(query, tokens[p["query"]]) and re.search(key, tokens[p["key"]])]
        if matching:
            matching.sort(key=lambda p: (-p["weight"], p["query"], p["key"]))
            found.append({"text_id": r["text_id"], "text": texts[r["text_id"]]["text"], "tokens": tokens,
                          "value": matching[0]["weight"], "pairs": [pair_of(p, tokens) for p in matching]})
    found.sort(key=lambda f: (-f["value"], f["text_id"]))
    return found[:k]


def reference_heads(tables, x, y):
    heads, _ = tables
    points = []
    for layer in range(6):
        for head in range(12):
            rows = [r for r in heads if r["layer"] == layer and r["head"] == head]
            xs = [r[x] for r in rows if defined(r[x])]
            ys = [r[y] for r in rows if defined(r[y])]
            if xs and ys:
                points.append({"layer": layer, "head": head, "x": sum(xs) / len(xs), "y": sum(ys) / len(ys)})
    return points


# ---- answers ------------------------------------------------------------------------------------------------------

def test_the_corpus_answer_says_what_is_open(corpus_client, tables):
    heads, texts = tables
    body = corpus_client.get("/api/v1/corpus").json()
    assert body["model"] == "minilm" and (body["n_layers"], body["n_heads"]) == (6, 12)
    assert body["texts"] == len(texts) == 60
    assert body["skipped"] == 2  # the empty line and the one over the limit
    assert {"entropy", "to_previous", "to_first", "induction"} <= set(body["metrics"])
    assert set(body["metrics"]) <= set(heads[0])  # every metric is a column of the heads table


@pytest.mark.parametrize("layer, head, by, k, lowest", [
    (0, 0, "to_previous", 20, False), (3, 7, "entropy", 5, True), (5, 11, "induction", 100, False),
    (2, 4, "to_first", 1, False),
])
def test_top_equals_the_parquet_files(corpus_client, tables, layer, head, by, k, lowest):
    answer = corpus_client.get("/api/v1/corpus/top", params={
        "layer": layer, "head": head, "by": by, "k": k, "lowest": str(lowest).lower()})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["layer"], body["head"], body["by"], body["lowest"]) == (layer, head, by, lowest)
    expected = reference_top(tables, layer, head, by, k, lowest)
    assert body["results"] == expected
    assert len(expected) == min(k, 20 if by == "induction" else 60)  # induction: defined on 20 texts (a repeat)
    # the control: the other order, or the next head, is a different answer
    assert body["results"] != reference_top(tables, layer, head, by, k, not lowest) or k == 100
    assert body["results"] != reference_top(tables, layer, (head + 1) % 12, by, k, lowest)


def test_pattern_equals_the_parquet_files(corpus_client, tables):
    """"Texts where L5 H3 attends from a pronoun to a word": recomputed with Python's re over the tokens."""
    params = {"layer": 5, "head": 3, "query": "^(she|he|it|her)$", "key": "^[a-z]+$", "k": 10}
    body = corpus_client.get("/api/v1/corpus/pattern", params=params).json()
    expected = reference_pattern(tables, 5, 3, params["query"], params["key"], 10)
    assert len(expected) == 10 and body["results"] == expected
    assert (body["query"], body["key"]) == (params["query"], params["key"])
    assert all(re.search(params["key"], p["key_token"]) for r in body["results"] for p in r["pairs"])
    assert body["results"] != reference_pattern(tables, 5, 3, params["query"], "^(mary|john)$", 10)  # the control


def test_heads_equal_the_parquet_files(corpus_client, tables):
    body = corpus_client.get("/api/v1/corpus/heads", params={"x": "entropy", "y": "induction"}).json()
    expected = reference_heads(tables, "entropy", "induction")
    assert len(body["points"]) == len(expected) == 72
    for got, want in zip(body["points"], expected, strict=True):
        assert (got["layer"], got["head"]) == (want["layer"], want["head"])
        assert got["x"] == pytest.approx(want["x"], rel=1e-9) and got["y"] == pytest.approx(want["y"], rel=1e-9)
    swapped = reference_heads(tables, "induction", "entropy")
    assert [p["x"] for p in body["points"]] != pytest.approx([p["x"] for p in swapped])  # the control


def test_the_markup_line_comes_back_as_the_text_it_is(corpus_client):
    found = corpus_client.get("/api/v1/corpus/top", params={
        "layer": 0, "head": 0, "by": "entropy", "k": 100}).json()["results"]
    assert len(found) == 60
    markup = next(r for r in found if r["text"] == MARKUP)
    assert markup["tokens"][:4] == ["[CLS]", "<", "im", "##g"]


# ---- refusals -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, params, field, rule, words", [
    ("/top", {"layer": 6, "head": 0, "by": "entropy"}, "layer", "index_out_of_range", "layers 0..5"),
    ("/top", {"layer": 0, "head": 12, "by": "entropy"}, "head", "index_out_of_range", "heads 0..11"),
    ("/top", {"layer": 0, "head": 0, "by": "nope"}, "by", "unknown_metric", "use one of: entropy"),
    ("/top", {"layer": 0, "head": 0, "by": "entropy", "k": 0}, "k", "greater_than_equal", "1"),
    ("/top", {"layer": 0, "head": 0, "by": "entropy", "k": 101}, "k", "less_than_equal", "100"),
    ("/top", {"layer": 0, "head": 0, "by": "entropy", "lowest": "yes"}, "lowest", "bool_parsing", "true or false"),
    ("/top", {"layer": "1.0", "head": 0, "by": "entropy"}, "layer", "int_parsing", "whole digits"),
    ("/top", {"head": 0, "by": "entropy"}, "layer", "missing", "required"),
    ("/pattern", {"layer": 0, "head": 0, "query": "(", "key": "a"}, "query", "bad_pattern", "not a regular"),
    ("/pattern", {"layer": 0, "head": 9, "query": "a"}, "key", "missing", "required"),
    ("/heads", {"x": "entropy", "y": "nope"}, "y", "unknown_metric", "use one of"),
    ("/heads", {"x": "entropy", "y": "to_self", "z": "1"}, "z", "extra_forbidden", "unknown field"),
])
def test_a_bad_query_is_refused_naming_the_field(corpus_client, path, params, field, rule, words):
    answer = corpus_client.get(f"/api/v1/corpus{path}", params=params)
    assert answer.status_code == 422, answer.text
    error = answer.json()["errors"][0]
    assert error["loc"] == ["query", field] and error["type"] == rule
    assert words in error["msg"] or words in str(error.get("ctx", ""))
    assert field in answer.json()["detail"] or error["type"] in ("index_out_of_range", "unknown_metric")


@pytest.mark.parametrize("path", ["", "/top?layer=0&head=0&by=entropy", "/pattern?layer=0&head=0&query=a&key=b",
                                  "/heads?x=entropy&y=to_self"])
def test_without_a_corpus_every_route_says_how_to_serve_one(client, path):
    answer = client.get(f"/api/v1/corpus{path}")
    assert answer.status_code == 409
    body = answer.json()
    assert body["errors"][0]["type"] == "no_corpus"
    assert "attnscope serve --corpus DIR" in body["detail"] and "attnscope corpus index" in body["detail"]


def test_the_page_is_served_with_or_without_a_corpus(client, corpus_client):
    bare = client.get("/corpus")
    assert bare.status_code == 200
    assert 'data-i18n="corpus.none.buildCommand"' in bare.text and "corpus-page.js" not in bare.text
    assert 'href="/corpus"' not in client.get("/").text  # no corpus: no tab for it
    page = corpus_client.get("/corpus")
    assert "corpus-page.js" in page.text and "corpus.none.buildCommand" not in page.text
    assert 'href="/corpus"' in corpus_client.get("/").text  # the explorer's tab row
    assert 'href="/corpus"' not in corpus_client.get("/cost").text


def test_a_directory_that_is_not_an_index_is_refused_at_start(tmp_path, capsys):
    assert cli.main(["serve", "--corpus", str(tmp_path), "--port", "8329"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a corpus index" in err and "attnscope corpus index" in err
    with pytest.raises(CorpusError, match="not a corpus index"), \
            TestClient(create_app(Settings(allowed_hosts=["testserver"], corpus=tmp_path))):
        pass  # ATTNSCOPE_CORPUS set to it: the app does not start either
