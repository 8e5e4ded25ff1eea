"""A corpus index of a decoder (the test GPT-2, tests/checkpoints.py): it offers only the metrics that can differ
from 0 on that model, in the CLI, the Python API and the REST API alike, and every one of them checks token patterns
as RE2 (DuckDB's dialect) with the same words. `corpus index --progress` draws its bar on stderr."""

from __future__ import annotations

import json
import math

import pyarrow.parquet as pq
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from attnscope import cli
from model.analysis.heads import METRICS
from model.corpus.query import Corpus, CorpusError

LINES = ["The cat sat on the mat.", "Where is the dog?", "Hello world, attention is all you need.",
         "The cat sat on the mat. The cat sat.", "Models looking at attention, again and again."]
LEFT_OUT = {"to_cls", "to_sep", "to_next"}  # GPT-2 inserts no special token, and it is causal


@pytest.fixture(scope="module")
def index(tmp_path_factory, checkpoint_dirs):
    root = tmp_path_factory.mktemp("gpt2-corpus")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    code = cli.main(["corpus", "index", str(corpus), "--model", str(checkpoint_dirs["gpt2"]), "--out",
                     str(root / "idx"), "--progress"])
    return code, root / "idx"


@pytest.fixture(scope="module")
def client(index):
    with TestClient(create_app(Settings(allowed_hosts=["testserver"], corpus=index[1]))) as c:
        yield c


def refusal(capsys, *argv: str) -> str:
    assert cli.main(["corpus", *argv]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    return err.split(": error: ", 1)[1].strip()


def test_the_index_offers_the_metrics_a_decoder_has(index, capsys):
    code, directory = index
    assert code == 0
    offered = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["metrics"]
    assert offered == [m for m in (*METRICS, "induction") if m not in LEFT_OUT]
    # why: in the shards, the columns left out are 0 on every text and head (the rest are not)
    heads = pq.read_table(directory / "heads").to_pydict()
    for name in LEFT_OUT:
        assert {v for v in heads[name] if v is not None and not math.isnan(v)} == {0.0}, name
    assert max(heads["to_previous"]) > 0 and max(heads["to_first"]) > 0


def test_the_cli_the_python_api_and_the_rest_refuse_to_cls_with_the_same_words(index, client, capsys):
    _, directory = index
    said = refusal(capsys, "top", str(directory), "--layer", "0", "--head", "0", "--by", "to_cls")
    assert said.startswith("'to_cls' is not offered by this index of tiny-gpt2: the model puts no special token first")
    with pytest.raises(CorpusError) as caught:
        Corpus(directory).top(0, 0, by="to_cls")
    assert caught.value.message == said
    info = client.get("/api/v1/corpus").json()
    assert info["metrics"] == json.loads((directory / "manifest.json").read_text(encoding="utf-8"))["metrics"]
    answer = client.get("/api/v1/corpus/top", params={"layer": 0, "head": 0, "by": "to_cls"})
    assert answer.status_code == 422
    assert answer.json()["errors"][0]["msg"] == said
    assert client.get("/api/v1/corpus/heads", params={"x": "to_next", "y": "entropy"}).status_code == 422


@pytest.mark.parametrize(("query", "key", "field"), [("(?=a)b", "a", "query"), ("a", "(a)\\1", "key")])
def test_a_pattern_re2_refuses_is_refused_everywhere_with_the_same_words(index, client, capsys, query, key, field):
    _, directory = index
    said = refusal(capsys, "pattern", str(directory), "--layer", "0", "--head", "0", "--query", query, "--key", key)
    assert said.startswith(f"{field} {(query if field == 'query' else key)!r} is not a regular expression RE2 takes")
    with pytest.raises(CorpusError) as caught:
        Corpus(directory).pattern(0, 0, query, key)
    assert caught.value.message == said
    answer = client.get("/api/v1/corpus/pattern", params={"layer": 0, "head": 0, "query": query, "key": key})
    assert answer.status_code == 422
    error = answer.json()["errors"][0]
    assert (error["loc"][-1], error["type"], error["msg"]) == (field, "bad_pattern", said)


def test_a_pattern_only_re2_takes_runs(index, client, capsys):
    _, directory = index
    # \p{L}: a Unicode class RE2 knows and Python's re refuses
    assert cli.main(["corpus", "pattern", str(directory), "--layer", "0", "--head", "0", "--query", r"\p{L}",
                     "--key", ".", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"]
    assert client.get("/api/v1/corpus/pattern", params={"layer": 0, "head": 0, "query": r"\p{L}", "key": "."}).json()[
        "results"]


def test_index_help_names_repo_ids_and_the_progress_flag(capsys):
    with pytest.raises(SystemExit):
        cli.main(["corpus", "index", "--help"])
    out = capsys.readouterr().out
    assert "--model ID|PATH|ORG/NAME" in out and "--progress" in out and "--quiet" in out


def test_progress_draws_the_bar_on_stderr_when_it_is_not_a_terminal(tmp_path, checkpoint_dirs, capsys, monkeypatch):
    monkeypatch.delenv("ATTNSCOPE_PROGRESS", raising=False)
    corpus = tmp_path / "c.txt"
    corpus.write_text("\n".join(LINES[:2]) + "\n", encoding="utf-8")
    model = str(checkpoint_dirs["gpt2"])
    for flag, drawn in (("--progress", True), ("--quiet", False)):
        assert cli.main(["corpus", "index", str(corpus), "--model", model, "--out", str(tmp_path / flag), flag]) == 0
        err = capsys.readouterr().err
        assert ("] 2/2 lines" in err) == drawn, err
