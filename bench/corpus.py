"""The corpus index: its rate against the bare batched forward, its size, and a query over 100,000 texts.

Rate: MiniLM on fresh texts of exactly 32 tokens (bench.common.TextMaker, vocabulary words), batches of 32.
The bare side tokenizes each text and runs the padded batches (model/checkpoints/batch.pad and forward) with the
attention weights recorded, as an `output_attentions` forward keeps them; the index side is `build` on a corpus
file of the same texts (read, tokenize, forward, the metrics and pairs of every head, Parquet shards of 1,000 texts,
the manifest after each). The two alternate over ROUNDS rounds, each round on texts neither saw before. Both the
wall rate and the rate per CPU second of this process are reported; on a shared machine the wall clock measures
the neighbours, so the goal is judged on CPU seconds (each side's best round): the index at least 80 % of the bare
rate. With one torch thread (BENCH_THREADS=1) the CPU seconds are the work itself; with more they also count
OpenMP's spinning threads.

Size: the index's bytes (both tables, manifest) per 1,000 texts. Query: an index of 100,000 texts made by
copying the real index's shards with new text ids (the rows of a copy are the original's, so values repeat;
the work of a query does not depend on them), then the top 20 texts of one head by a metric, opened cold
(a new Corpus) and warm (median of 5 other heads); goal: at most 1 s. Last, the index's rate on one torch
thread (fresh texts again): a core's rate, what one Ray worker indexes, for planning a cluster.

    .venv/bin/python -m bench.corpus [TEXTS_PER_ROUND]
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.common import THREADS, TextMaker, print_table, verdict
from model.corpus.shards import COMPRESSION, ROW_GROUP

TOKENS, BATCH, SHARD = 32, 32, 1000
ROUNDS = 3
TEXTS = 2000  # per round and side
QUERY_TEXTS = 100_000
RATIO_GOAL, QUERY_GOAL_S = 0.8, 1.0


def bare_rate(model, texts: list[str]) -> tuple[float, float]:
    """Texts per wall second and per CPU second of this process: tokenize, pad, forward with every layer's
    attention weights recorded."""
    from model.checkpoints.batch import forward, pad
    from model.trace import Trace

    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), BATCH):
        encoded = [model.tokenizer.encode(t) for t in texts[i: i + BATCH]]
        trace = Trace(steps=("softmax",))
        forward(model, pad(model, encoded), trace)
        assert len(trace.records) == model.cfg.n_layers
    return len(texts) / (time.perf_counter() - wall), len(texts) / (time.process_time() - cpu)


def index_rate(model, texts: list[str], directory: Path) -> tuple[float, float]:
    """Texts per wall second and per CPU second of `build` on a file of `texts`."""
    from model.corpus.index import IndexSettings, build

    corpus = directory.with_suffix(".txt")
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    wall, cpu = time.perf_counter(), time.process_time()
    report = build(corpus, "minilm", directory, IndexSettings(batch_size=BATCH, shard_size=SHARD), model=model)
    assert report.texts == len(texts)
    return len(texts) / (time.perf_counter() - wall), len(texts) / (time.process_time() - cpu)


def size_bytes(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def replicate(source: Path, target: Path, texts: int) -> None:
    """An index of `texts` texts from copies of `source`'s shards, each copy's text ids moved past the last."""
    manifest = json.loads((source / "manifest.json").read_text())
    shards, per_copy = manifest["shards"], manifest["corpus"]["lines"]
    (target / "heads").mkdir(parents=True)
    (target / "texts").mkdir()
    out = []
    for copy in range(-(-texts // per_copy)):
        for shard in shards:
            number = len(out)
            for table in ("heads", "texts"):
                data = pq.read_table(source / table / f"shard-{shard['shard']:05d}.parquet")
                moved = pa.array(data.column("text_id").to_numpy() + copy * per_copy, type=pa.int64())
                data = data.set_column(0, "text_id", moved)
                pq.write_table(data, target / table / f"shard-{number:05d}.parquet",
                               row_group_size=ROW_GROUP if table == "heads" else max(shard["texts"], 1),
                               compression=COMPRESSION)
            out.append({**shard, "shard": number, "first": shard["first"] + copy * per_copy})
    (target / "manifest.json").write_text(json.dumps({**manifest, "shards": out}), encoding="utf-8")


def query_times(directory: Path) -> tuple[tuple[float, float], tuple[float, float], int]:
    """(wall s, CPU s) of the first top-20 query of a new Corpus and the median of 5 more (other heads)."""
    from model.corpus.query import Corpus

    wall, cpu = time.perf_counter(), time.process_time()
    corpus = Corpus(directory)
    found = corpus.top(3, 7, "to_previous", k=20)
    cold = (time.perf_counter() - wall, time.process_time() - cpu)
    warm = []
    for head in range(5):
        wall, cpu = time.perf_counter(), time.process_time()
        found = corpus.top(3, head, "to_previous", k=20)
        warm.append((time.perf_counter() - wall, time.process_time() - cpu))
    assert len(found) == 20
    return cold, (statistics.median(w for w, _ in warm), statistics.median(c for _, c in warm)), corpus.texts


def run(texts: int = TEXTS) -> str:
    import torch

    from model.checkpoints import load

    torch.set_num_threads(THREADS)
    model = load("minilm")
    maker = TextMaker(seed=11, vocabulary=True)
    work = Path(tempfile.mkdtemp(prefix="attnscope-bench-corpus-"))
    try:
        bare_rate(model, [maker.text(TOKENS) for _ in range(BATCH * 2)])  # warm-up (and the writer's imports)
        index_rate(model, [maker.text(TOKENS) for _ in range(BATCH * 2)], work / "warm-up")
        rounds = []
        for number in range(ROUNDS):
            bare = bare_rate(model, [maker.text(TOKENS) for _ in range(texts)])
            indexed = index_rate(model, [maker.text(TOKENS) for _ in range(texts)], work / f"round{number}")
            rounds.append((bare, indexed, os.getloadavg()[0]))
            print(f"round {number}: bare {bare[0]:.0f}/s ({bare[1]:.0f}/CPU s), index {indexed[0]:.0f}/s "
                  f"({indexed[1]:.0f}/CPU s), load {rounds[-1][2]:.1f}", flush=True)
        best_bare, best_index = max(r[0][1] for r in rounds), max(r[1][1] for r in rounds)
        torch.set_num_threads(1)  # a core's rate: what one Ray worker (one thread) indexes
        per_core = index_rate(model, [maker.text(TOKENS) for _ in range(texts)], work / "one-thread")[1]
        torch.set_num_threads(THREADS)
        per_thousand = size_bytes(work / "round0") / texts * 1000
        replicate(work / "round0", work / "large", QUERY_TEXTS)
        cold, warm, count = query_times(work / "large")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratio = best_index / best_bare
    rows = [[f"{b[0]:.0f} ({b[1]:.0f})", f"{i[0]:.0f} ({i[1]:.0f})", f"{i[1] / b[1]:.2f}", f"{load:.1f}"]
            for b, i, load in rounds]
    out = print_table(f"Corpus index rate: MiniLM, {texts} fresh texts of {TOKENS} tokens a side a round, batches "
                      f"of {BATCH}, shards of {SHARD}, {THREADS} torch threads",
                      ["bare forward, texts/s (per CPU s)", "index, texts/s (per CPU s)", "ratio (CPU)",
                       "load (1 min)"], rows)
    out += print_table("Corpus index: best rounds (texts per CPU second), size and a query over 100,000 texts", [
        "bare", "index", f"ratio (goal >= {RATIO_GOAL})", "index, 1 thread", "MB per 1,000 texts",
        f"top-20 of one head over {count} texts, cold / warm: wall s (CPU s) (goal <= {QUERY_GOAL_S:.0f} s)"], [[
            f"{best_bare:.0f}", f"{best_index:.0f}", f"{ratio:.2f} {verdict(ratio >= RATIO_GOAL)}", f"{per_core:.0f}",
            f"{per_thousand / 1e6:.2f}", f"{cold[0]:.3f} ({cold[1]:.3f}) / {warm[0]:.3f} ({warm[1]:.3f}) "
            f"{verdict(cold[0] <= QUERY_GOAL_S)}"]])
    return out


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else TEXTS)
