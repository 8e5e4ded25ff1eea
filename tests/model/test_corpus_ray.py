"""The Ray engine writes the same index as the local one (on a local Ray instance), and without ray it refuses in
one line that says what to install."""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from attnscope import cli
from model.corpus.index import IndexSettings, build
from tests.model.test_corpus import sentences


def table(directory, name: str) -> pa.Table:
    keys = [("text_id", "ascending")] + ([("layer", "ascending"), ("head", "ascending")] if name == "heads" else [])
    return pa.concat_tables(pq.read_table(p) for p in sorted((directory / name).glob("shard-*.parquet"))).sort_by(keys)


def test_the_ray_engine_writes_the_local_index(tmp_path, minilm):
    import ray
    lines = sentences(40, seed=5)
    lines[7] = ""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    try:
        remote = build(corpus, "minilm", tmp_path / "ray", IndexSettings(batch_size=8, shard_size=16, engine="ray",
                                                                         workers=2), model=minilm)
    finally:
        ray.shutdown()
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # as each Ray worker runs (Indexer: one thread per worker)
    try:
        local = build(corpus, "minilm", tmp_path / "local", IndexSettings(batch_size=8, shard_size=16), model=minilm)
    finally:
        torch.set_num_threads(before)
    assert (remote.texts, remote.skipped, remote.shards) == (local.texts, local.skipped, local.shards) == (
        39, {"too_long": 0, "empty": 1, "bad_line": 0}, 3)
    texts_ray, texts_local = table(tmp_path / "ray", "texts"), table(tmp_path / "local", "texts")
    assert texts_ray.equals(texts_local)
    heads_ray, heads_local = table(tmp_path / "ray", "heads"), table(tmp_path / "local", "heads")
    assert heads_ray.select(["text_id", "layer", "head"]).equals(heads_local.select(["text_id", "layer", "head"]))
    for name in ("entropy", "to_previous", "to_sep", "induction"):
        assert heads_ray.column(name).to_numpy(zero_copy_only=False) == pytest.approx(
            heads_local.column(name).to_numpy(zero_copy_only=False), abs=1e-6, nan_ok=True)
    ray_pairs, local_pairs = heads_ray.column("pairs").to_pylist(), heads_local.column("pairs").to_pylist()
    assert [[(p["query"], p["key"]) for p in row] for row in ray_pairs] == [
        [(p["query"], p["key"]) for p in row] for row in local_pairs]


def test_without_ray_the_engine_says_what_to_install(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("The cat sat.\n", encoding="utf-8")
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as where it is not installed
    monkeypatch.setitem(sys.modules, "ray.data", None)
    code = cli.main(["corpus", "index", str(corpus), "--model", "minilm", "--out", str(tmp_path / "idx"),
                     "--engine", "ray"])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "attnscope corpus index: error: --engine ray needs Ray: pip install 'attnscope[ray]'\n"
    assert not (tmp_path / "idx").exists()
