"""An indexing run killed by SIGKILL in a real subprocess resumes where it stopped: the shards it recorded are kept
as they are, only the rest is written (at most the shard in progress is redone), and the final index equals an
uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from model.corpus.index import IndexSettings, build
from model.corpus.query import Corpus
from tests.model.test_corpus import sentences

ROOT = Path(__file__).resolve().parents[2]
LINES, SHARD, BATCH = 240, 8, 4


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # see tests/model/test_corpus.py
    yield
    torch.set_num_threads(before)


def recorded(directory: Path) -> list[int]:
    try:
        return [s["shard"] for s in json.loads((directory / "manifest.json").read_text())["shards"]]
    except (OSError, json.JSONDecodeError, KeyError):
        return []


def table(directory: Path, name: str) -> pa.Table:
    keys = [("text_id", "ascending")] + ([("layer", "ascending"), ("head", "ascending")] if name == "heads" else [])
    return pa.concat_tables(pq.read_table(p) for p in sorted((directory / name).glob("shard-*.parquet"))).sort_by(keys)


def test_a_killed_run_resumes_and_equals_an_uninterrupted_one(tmp_path, minilm):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(sentences(LINES, seed=3)) + "\n", encoding="utf-8")
    killed = tmp_path / "killed"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "ATTNSCOPE_PROGRESS": "0"}
    command = [sys.executable, "-m", "attnscope.cli", "corpus", "index", str(corpus), "--model", "minilm",
               "--out", str(killed), "--shard-size", str(SHARD), "--batch-size", str(BATCH)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while len(recorded(killed)) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL, process.stderr.read() if process.stderr else ""
    done = recorded(killed)
    total = LINES // SHARD
    assert 2 <= len(done) < total and done == list(range(len(done)))
    stamps = {p: p.stat().st_mtime_ns for n in done for p in (killed / "heads" / f"shard-{n:05d}.parquet",
                                                              killed / "texts" / f"shard-{n:05d}.parquet")}

    settings = IndexSettings(batch_size=BATCH, shard_size=SHARD)
    resumed = build(corpus, "minilm", killed, settings, model=minilm)
    assert (resumed.shards, resumed.written) == (total, total - len(done))  # redone: only the shard in progress
    assert all(path.stat().st_mtime_ns == stamp for path, stamp in stamps.items())
    assert recorded(killed) == list(range(total))

    whole = build(corpus, "minilm", tmp_path / "whole", settings, model=minilm)
    assert (whole.texts, resumed.texts) == (LINES, LINES)
    for name in ("heads", "texts"):
        assert table(killed, name).equals(table(tmp_path / "whole", name)), name
    # control: a shard's values changed on disk are noticed by the same comparison
    heads = table(killed, "heads")
    changed = heads.set_column(heads.schema.get_field_index("to_self"), "to_self",
                               pa.array(heads.column("to_self").to_numpy() + 1e-3, type=pa.float32()))
    assert not changed.equals(table(tmp_path / "whole", "heads"))
    assert Corpus(killed).top(1, 1, "to_self", k=3)[0].text_id == Corpus(tmp_path / "whole").top(1, 1, "to_self",
                                                                                                  k=3)[0].text_id
