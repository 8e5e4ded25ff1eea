"""`attnscope corpus index|top|pattern|heads`: the summary line, the top texts as text and as JSON (the same as
the Python API's), and one-line refusals for a directory that is not an index, a head out of range, an unknown
metric and an --out that holds another corpus's index."""

from __future__ import annotations

import json

import pytest
import torch

from attnscope import cli
from attnscope.corpus import Corpus
from attnscope.corpus import index as index_corpus
from tests.model.test_corpus import sentences


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/model/test_corpus.py
    root = tmp_path_factory.mktemp("cli-corpus")
    lines = sentences(20, seed=9)
    lines[3] = ""
    lines[11] = "word " * 600
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        yield corpus, root
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module")
def directory(built):
    corpus, root = built
    assert cli.main(["corpus", "index", str(corpus), "--model", "minilm", "--out", str(root / "idx"),
                     "--shard-size", "8", "--quiet"]) == 0
    return root / "idx"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["corpus", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_index_reports_texts_and_skipped_lines(built, capsys, tmp_path):
    corpus, _ = built
    code, out, err = run(capsys, "index", str(corpus), "--model", "minilm", "--out", str(tmp_path / "i"), "--quiet")
    assert code == 0 and out == ""
    assert err.startswith(f"indexed 18 texts into {tmp_path / 'i'} (1 shard) in ")
    assert err.endswith("skipped 2 lines (1 over the model's token limit, 1 empty, 0 unreadable)\n")
    code, _, err = run(capsys, "index", str(corpus), "--model", "minilm", "--out", str(tmp_path / "i"), "--quiet")
    assert code == 0 and "(1 shard, 1 from an earlier run)" in err  # a finished index: nothing left to do


def test_top_prints_snippets_values_and_pairs(directory, capsys):
    code, out, err = run(capsys, "top", str(directory), "--layer", "3", "--head", "7", "--by", "to_previous", "-k", "4")
    assert code == 0 and err == ""
    lines = out.splitlines()
    found = Corpus(directory).top(3, 7, "to_previous", k=4)
    assert lines[0] == "L3H7, highest to_previous, 4 of 18 texts (minilm)"
    for rank, text in enumerate(found):
        assert lines[1 + 2 * rank] == f"{rank + 1:>3}. {text.value:.4f}  #{text.text_id}  {text.text}"
        first = text.pairs[0]
        pair = f"{first.query_token}({first.query}) -> {first.key_token}({first.key})"
        assert lines[2 + 2 * rank].startswith(f"     {pair} ")


def test_top_json_is_the_python_api_answer(directory, capsys):
    code, out, _ = run(capsys, "top", str(directory), "--layer", "0", "--head", "2", "--by", "entropy", "-k", "3",
                       "--lowest", "--json")
    answer = json.loads(out)
    found = Corpus(directory).top(0, 2, "entropy", k=3, lowest=True)
    assert code == 0 and [r["text_id"] for r in answer["results"]] == [t.text_id for t in found]
    assert [r["value"] for r in answer["results"]] == pytest.approx([t.value for t in found])
    assert answer["results"][0]["pairs"][0]["key_token"] == found[0].pairs[0].key_token


def test_heads_and_pattern(directory, capsys):
    code, out, _ = run(capsys, "heads", str(directory), "--x", "entropy", "--y", "to_sep", "--json")
    assert code == 0 and len(json.loads(out)["points"]) == 72
    code, out, _ = run(capsys, "pattern", str(directory), "--layer", "1", "--head", "1", "--query", ".", "--key", ".",
                       "-k", "2", "--json")
    assert code == 0 and len(json.loads(out)["results"]) == 2


@pytest.mark.parametrize(("argv", "message"), [
    (["--layer", "6", "--head", "0", "--by", "entropy"], "layers [6] out of range; this model has layers 0..5"),
    (["--layer", "0", "--head", "-1", "--by", "entropy"], "heads [-1] out of range; this model has heads 0..11"),
    (["--layer", "0", "--head", "0", "--by", "loud"],
     "Unknown metric 'loud'; use one of: entropy, distance, to_cls, to_sep, to_self, to_previous, to_next, "
     "to_punctuation, to_first, induction"),
])
def test_bad_queries_are_refused_in_one_line(directory, capsys, argv, message):
    code, out, err = run(capsys, "top", str(directory), *argv)
    assert (code, out, err) == (2, "", f"attnscope corpus top: error: {message}\n")


def test_a_directory_that_is_not_an_index_is_refused(tmp_path, capsys):
    code, _, err = run(capsys, "top", str(tmp_path), "--layer", "0", "--head", "0", "--by", "entropy")
    assert code == 2 and err.count("\n") == 1
    assert err == (f"attnscope corpus top: error: {tmp_path} is not a corpus index (it has no manifest.json); "
                   "write one with `attnscope corpus index FILE --model ID --out DIR`\n")


def test_an_out_of_another_corpus_is_refused(directory, tmp_path, capsys):
    other = tmp_path / "other.txt"
    other.write_text("Another corpus.\n", encoding="utf-8")
    code, _, err = run(capsys, "index", str(other), "--model", "minilm", "--out", str(directory), "--shard-size", "8")
    assert code == 2 and err.count("\n") == 1
    assert "holds the index of another corpus ('corpus.txt', not 'other.txt')" in err


def test_the_python_api_indexes_too(built, tmp_path):
    corpus, _ = built
    report = index_corpus(corpus, model="minilm", out=tmp_path / "api", shard_size=8)
    assert (report.texts, report.shards) == (18, 3)
    assert Corpus(tmp_path / "api").texts == 18
