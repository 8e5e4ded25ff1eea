"""Builds a corpus index (layout.py): reads the corpus, skips the lines it cannot index (counted, never
truncated), runs the rest through the model shard by shard and writes each finished shard atomically, then
records it in the manifest; a run that stops (killed, interrupted) resumes after the last recorded shard, so
it loses at most the shard it was writing.

The corpus: one text a line (UTF-8, a byte-order mark at the start ignored; a trailing "\\r" is dropped), or
with a `.jsonl` name one JSON object a line whose "text" field (a string) is the text; its other fields are
ignored. A line is skipped as
`empty` (only whitespace), `too_long` (more tokens than the model takes, special tokens included: never
truncated) or `bad_line` (not UTF-8; in a .jsonl, not a JSON object with a string "text"). A text's id is
its line's 0-based index in the file.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from model.checkpoints import load
from model.checkpoints.batch import batches
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import TooManyTokens
from model.corpus import layout
from model.corpus.query import CorpusError
from model.corpus.rows import DEFAULT_PAIRS, Item, index_batch, offered_metrics, text_rows_schema
from model.corpus.shards import write_shard

DEFAULT_SHARD_SIZE = 1000
DEFAULT_BATCH_SIZE = 32
ENGINES = ("local", "ray")


@dataclass(frozen=True)
class IndexSettings:
    batch_size: int = DEFAULT_BATCH_SIZE
    shard_size: int = DEFAULT_SHARD_SIZE
    pairs: int = DEFAULT_PAIRS
    engine: str = "local"
    workers: int = 2  # Ray: model copies (actors) running at once
    device: str = "cpu"


@dataclass(frozen=True)
class IndexReport:
    """A finished run: texts indexed and lines skipped (by reason) in the whole index, its shards, those this
    run wrote (the others were there from an earlier run), and this run's seconds."""

    texts: int
    skipped: dict[str, int]
    shards: int
    written: int
    seconds: float
    directory: Path


@dataclass(frozen=True)
class Corpus:
    """A corpus file read whole: its lines and its fingerprint (SHA-256 of its bytes)."""

    path: Path
    lines: list[bytes]
    sha256: str
    jsonl: bool

    @staticmethod
    def read(path: Path) -> Corpus:
        data = Path(path).read_bytes()
        lines = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # the final newline ends the last line, it does not start another
        return Corpus(Path(path), lines, hashlib.sha256(data).hexdigest(), Path(path).suffix.lower() == ".jsonl")

    def text(self, number: int) -> tuple[str | None, str | None]:
        """Line `number`'s text, or None and the reason it cannot be one (before tokenizing)."""
        raw = self.lines[number].removesuffix(b"\r")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None, "bad_line"
        if self.jsonl:
            if not line.strip():
                return None, "empty"
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                return None, "bad_line"
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                return None, "bad_line"
            line = record["text"]
        return (None, "empty") if not line.strip() else (line, None)


@dataclass
class Shard:
    """One shard's lines: the items to index (the Ray engine lets them go once sent), their count, and the counts
    of lines skipped."""

    number: int
    first: int
    lines: int
    texts: int = 0
    items: list[Item] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(layout.SKIP_REASONS, 0))


def prepare(model: LoadedModel, corpus: Corpus, number: int, size: int) -> Shard:
    first = number * size
    shard = Shard(number, first, min(size, len(corpus.lines) - first))
    for line in range(first, first + shard.lines):
        text, reason = corpus.text(line)
        if text is not None:
            try:
                shard.items.append(Item(line, text, model.tokenizer.encode(text)))
                continue
            except TooManyTokens:
                reason = "too_long"
        shard.skipped[str(reason)] += 1
    shard.texts = len(shard.items)
    return shard


def local_rows(model: LoadedModel, shard: Shard, settings: IndexSettings,
               on_batch: Callable[[int], None]) -> pa.Table:
    """The shard's text rows, batches of similar lengths (batch.batches) through the model in this process."""
    tables = []
    for group in batches([len(item.encoded) for item in shard.items], settings.batch_size):
        tables.append(index_batch(model, [shard.items[i] for i in group], settings.pairs))
        on_batch(len(group))
    return pa.concat_tables(tables) if tables else text_rows_schema(settings.pairs).empty_table()


def _identity(model: LoadedModel, source: str, corpus: Corpus, settings: IndexSettings) -> dict[str, Any]:
    return {"format": layout.FORMAT, "version": layout.VERSION, "model": model.spec.id, "model_source": source,
            "n_layers": model.cfg.n_layers, "n_heads": model.cfg.n_heads, "max_tokens": model.tokenizer.max_tokens,
            "metrics": list(offered_metrics(model)), "pairs": settings.pairs, "shard_size": settings.shard_size,
            "corpus": {"name": corpus.path.name, "sha256": corpus.sha256, "lines": len(corpus.lines)}}


def open_output(out: Path, identity: dict[str, Any]) -> dict[str, Any]:
    """The manifest to continue: the existing one when `out` holds an index of the same model, corpus, shard
    size and pair count (a resumed run), a new one for a new or empty directory; CorpusError otherwise."""
    out = Path(out)
    existing = layout.read_manifest(out)
    if existing is None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CorpusError("index_mismatch", "out", f"{out} is not empty and holds no corpus index; "
                              "choose a new or empty directory for --out")
        return {**identity, "shards": [], "complete": False}
    for key, what in (("model", "model"), ("corpus", "corpus"), ("shard_size", "shard size"), ("pairs", "pairs")):
        if existing.get(key) != identity[key]:
            mine = identity[key]["name"] if key == "corpus" else identity[key]
            theirs = (existing.get(key) or {}).get("name") if key == "corpus" else existing.get(key)
            raise CorpusError("index_mismatch", "out", f"{out} holds the index of another {what} ({theirs!r}, "
                              f"not {mine!r}); choose another --out directory")
    return existing


def _totals(manifest: dict[str, Any]) -> tuple[int, dict[str, int]]:
    skipped = dict.fromkeys(layout.SKIP_REASONS, 0)
    for shard in manifest["shards"]:
        for reason, count in shard["skipped"].items():
            skipped[reason] = skipped.get(reason, 0) + int(count)
    return sum(int(s["texts"]) for s in manifest["shards"]), skipped


def build(corpus_path: Path, model_source: str, out: Path, settings: IndexSettings = IndexSettings(),
          on_progress: Callable[[int, int], None] | None = None, model: LoadedModel | None = None) -> IndexReport:
    """Indexes `corpus_path` with the model `model_source` (an id or a checkpoint directory) into `out`.

    `on_progress(done, total)` counts corpus lines (indexed or skipped, resumed shards included). Raises
    CorpusError("index_mismatch") when `out` holds another index, RayMissing (ray_engine.py) for the Ray
    engine without ray installed."""
    started = time.perf_counter()
    if settings.engine not in ENGINES:
        raise ValueError(f"engine {settings.engine!r}: use one of {', '.join(ENGINES)}")
    if settings.engine == "ray":
        from model.corpus import ray_engine

        ray_engine.require_ray()
    corpus = Corpus.read(corpus_path)
    model = model or load(model_source, settings.device)
    manifest = open_output(out, _identity(model, model_source, corpus, settings))
    out.mkdir(parents=True, exist_ok=True)
    layout.write_manifest(out, manifest)
    size = settings.shard_size
    total_shards = (len(corpus.lines) + size - 1) // size
    start = len(manifest["shards"])  # shards are recorded in order: the next one is the first to redo
    done = start * size
    report = on_progress or (lambda done, total: None)
    report(min(done, len(corpus.lines)), len(corpus.lines))

    def finish(shard: Shard, rows: pa.Table) -> None:
        nonlocal done
        write_shard(out, shard.number, rows, model.cfg.n_layers, model.cfg.n_heads, settings.pairs)
        manifest["shards"].append({"shard": shard.number, "first": shard.first, "lines": shard.lines,
                                   "texts": shard.texts, "skipped": shard.skipped})
        layout.write_manifest(out, manifest)
        done = shard.first + shard.lines
        report(done, len(corpus.lines))

    def count(texts: int, shard: Shard) -> None:
        report(shard.first + sum(shard.skipped.values()) + texts, len(corpus.lines))

    shards: Iterator[Shard] = (prepare(model, corpus, n, size) for n in range(start, total_shards))
    if settings.engine == "ray":
        from model.corpus import ray_engine

        for shard, rows in ray_engine.ray_rows(model_source, shards, settings, count):
            finish(shard, rows)
    else:
        for shard in shards:
            indexed = 0

            def on_batch(texts: int, shard: Shard = shard) -> None:
                nonlocal indexed
                indexed += texts
                count(indexed, shard)

            finish(shard, local_rows(model, shard, settings, on_batch))
    manifest["complete"] = True
    texts, skipped = _totals(manifest)
    manifest["texts"], manifest["skipped"] = texts, skipped
    layout.write_manifest(out, manifest)
    return IndexReport(texts, skipped, total_shards, total_shards - start, time.perf_counter() - started, out)
