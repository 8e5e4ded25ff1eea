"""A head across a whole corpus: `attnscope corpus index|top|pattern|heads`, and the same in Python.

    >>> from attnscope.corpus import Corpus, index
    >>> index("sentences.txt", model="minilm", out="idx")       # Parquet shards + manifest.json in idx/
    >>> corpus = Corpus("idx")
    >>> [t.text for t in corpus.top(3, 7, by="to_previous", k=5)]
    >>> corpus.heads("entropy", "to_previous")                  # each head's corpus mean of two metrics

The index's layout is in model/corpus/layout.py, the metrics and pairs in model/corpus/rows.py. Querying needs
DuckDB and pyarrow only: the model is loaded only to index.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from model.corpus.layout import RayMissing
from model.corpus.query import Corpus, CorpusError, HeadPoint, Pair, TopText
from model.errors import CheckpointError, DeviceError, IndexOutOfRange, UnknownModel

from . import progress
from .commands import _positive

if TYPE_CHECKING:
    from model.corpus.index import IndexReport

USAGE_ERROR = 2
SNIPPET = 80  # characters of a text shown by `corpus top`
SKIPPED = {"too_long": "over the model's token limit", "empty": "empty", "bad_line": "unreadable"}
__all__ = ["Corpus", "CorpusError", "HeadPoint", "Pair", "TopText", "index"]


def index(corpus: str | Path, model: str = "minilm", out: str | Path = "corpus-index", *, batch_size: int = 32,
          shard_size: int = 1000, pairs: int = 5, engine: str = "local", workers: int = 2,
          device: str = "cpu") -> IndexReport:
    """Indexes a corpus file (one text a line, or .jsonl with a "text" field) into `out`, resuming an interrupted
    run there; returns the IndexReport (texts, skipped by reason, shards, written, seconds)."""
    from model.corpus.index import IndexSettings, build

    settings = IndexSettings(batch_size, shard_size, pairs, engine, workers, device)
    return build(Path(corpus), model, Path(out), settings)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    corpus = sub.add_parser("corpus", help="index a corpus (every head on every text) and query it",
                            description="Index a corpus into Parquet shards, then query one head across it.")
    actions = corpus.add_subparsers(dest="corpus_command", required=True)
    build = actions.add_parser(
        "index", help="run every line of FILE through a model and write the index to --out",
        description="One text a line, or a .jsonl file with a \"text\" field (other fields are ignored). Empty "
                    "lines, lines over the model's token limit and bad lines are skipped and counted, never "
                    "truncated. Run it again with the same arguments to resume an interrupted run.")
    build.add_argument("file", type=Path, metavar="FILE")
    build.add_argument("--model", required=True, metavar="ID|PATH|ORG/NAME",
                       help="a known model id, a checkpoint directory, or a repo id in the local Hugging Face cache")
    build.add_argument("--out", type=Path, required=True, metavar="DIR", help="the index directory (new, or resumed)")
    build.add_argument("--batch-size", type=_positive, default=32, metavar="N", help="texts per forward (default 32)")
    build.add_argument("--shard-size", type=_positive, default=1000, metavar="N",
                       help="corpus lines per shard (default 1000); an interrupted run loses at most one shard")
    build.add_argument("--pairs", type=_positive, default=5, metavar="K",
                       help="the strongest query -> key pairs kept per text and head (default 5)")
    build.add_argument("--engine", choices=("local", "ray"), default="local",
                       help="local: this process; ray: Ray Data workers (RAY_ADDRESS names a cluster)")
    build.add_argument("--workers", type=_positive, default=2, metavar="N", help="Ray workers (default 2)")
    build.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the model runs")
    shown = build.add_mutually_exclusive_group()
    shown.add_argument("--progress", action="store_true",
                       help="draw the progress bar on stderr even when it is not a terminal "
                            f"(also {progress.ENV}=1)")
    shown.add_argument("--quiet", action="store_true", help="no progress bar")

    for name, text in (("top", "a head's top texts by a metric"),
                       ("pattern", "a head's texts with a strongest pair between two token patterns")):
        query = actions.add_parser(name, help=text)
        query.add_argument("directory", type=Path, metavar="DIR")
        query.add_argument("--layer", type=int, required=True)
        query.add_argument("--head", type=int, required=True)
        if name == "top":
            query.add_argument("--by", required=True, metavar="METRIC", help="a metric (e.g. to_previous, entropy)")
            query.add_argument("--lowest", action="store_true", help="the lowest values instead of the highest")
        else:
            query.add_argument("--query", required=True, metavar="REGEX",
                               help="the query token: an RE2 regular expression (DuckDB's dialect), searched")
            query.add_argument("--key", required=True, metavar="REGEX", help="the key token: an RE2 regular expression")
        query.add_argument("-k", type=_positive, default=20, help="how many texts (default 20)")
        query.add_argument("--json", action="store_true", help="print JSON")
    heads = actions.add_parser("heads", help="every head's corpus mean of two metrics")
    heads.add_argument("directory", type=Path, metavar="DIR")
    heads.add_argument("--x", required=True, metavar="METRIC")
    heads.add_argument("--y", required=True, metavar="METRIC")
    heads.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Runs `attnscope corpus ...`; a refusal is one line on stderr, exit code 2."""
    try:
        if args.corpus_command == "index":
            return _index(args, err)
        return _query(args, out)
    except (CorpusError, IndexOutOfRange) as exc:
        message = exc.message
    except BrokenPipeError:  # the reader left (`... | head`): attnscope/cli.py stops quietly
        raise
    except (UnknownModel, CheckpointError, DeviceError, OSError, RayMissing) as exc:
        message = getattr(exc, "message", None) or str(exc)
    print(f"attnscope corpus {args.corpus_command}: error: {message}", file=err)
    return USAGE_ERROR


def _index(args: argparse.Namespace, err: TextIO) -> int:
    from model.corpus.index import IndexSettings, build

    if not args.file.is_file():
        raise OSError(f"{args.file}: no such file; give a corpus file, one text a line (or a .jsonl)")
    bar = progress.Progress(0, err, progress.wanted(err, args.progress, args.quiet), unit="lines")

    def on_progress(done: int, total: int) -> None:
        bar.total = total
        bar.update(done)

    settings = IndexSettings(args.batch_size, args.shard_size, args.pairs, args.engine, args.workers, args.device)
    try:
        report = build(args.file, args.model, args.out, settings, on_progress)
    finally:
        bar.close()
    skipped = ", ".join(f"{count} {SKIPPED.get(reason, reason)}" for reason, count in report.skipped.items())
    resumed = report.shards - report.written
    rate = f", {report.texts / report.seconds:.0f} texts/s" if report.written == report.shards else ""
    print(f"indexed {report.texts} texts into {report.directory} ({report.shards} shard{'s' * (report.shards != 1)}"
          f"{f', {resumed} from an earlier run' if resumed else ''}) in {report.seconds:.1f} s{rate}; "
          f"skipped {sum(report.skipped.values())} lines ({skipped})", file=err)
    return 0


def _pairs(pairs: tuple[Pair, ...]) -> str:
    return ", ".join(f"{p.query_token}({p.query}) -> {p.key_token}({p.key}) {p.weight:.3f}" for p in pairs)


def _texts_json(found: list[TopText]) -> list[dict[str, Any]]:
    return [{"text_id": t.text_id, "text": t.text, "tokens": list(t.tokens), "value": t.value,
             "pairs": [{"query": p.query, "key": p.key, "query_token": p.query_token, "key_token": p.key_token,
                        "weight": p.weight} for p in t.pairs]} for t in found]


def _query(args: argparse.Namespace, out: TextIO) -> int:
    corpus = Corpus(args.directory)
    try:
        if args.corpus_command == "heads":
            points = corpus.heads(args.x, args.y)
            if args.json:
                rows = [{"layer": p.layer, "head": p.head, "x": p.x, "y": p.y} for p in points]
                out.write(orjson.dumps({"x": args.x, "y": args.y, "points": rows}, option=orjson.OPT_INDENT_2).decode()
                          + "\n")
            else:
                out.write(f"layer  head  {args.x:>14}  {args.y:>14}\n")
                out.writelines(f"{p.layer:>5}  {p.head:>4}  {p.x:>14.4f}  {p.y:>14.4f}\n" for p in points)
            return 0
        if args.corpus_command == "top":
            found = corpus.top(args.layer, args.head, args.by, args.k, lowest=args.lowest)
            what = f"{'lowest' if args.lowest else 'highest'} {args.by}"
        else:
            found = corpus.pattern(args.layer, args.head, args.query, args.key, args.k)
            what = f"pairs {args.query!r} -> {args.key!r}"
    finally:
        corpus.close()
    if args.json:
        answer = {"layer": args.layer, "head": args.head, "results": _texts_json(found)}
        out.write(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    out.write(f"L{args.layer}H{args.head}, {what}, {len(found)} of {corpus.texts} texts ({corpus.model})\n")
    for rank, text in enumerate(found, 1):
        snippet = text.text if len(text.text) <= SNIPPET else text.text[: SNIPPET - 1] + "…"
        out.write(f"{rank:>3}. {text.value:.4f}  #{text.text_id}  {snippet}\n")
        if text.pairs:
            out.write(f"     {_pairs(text.pairs)}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="attnscope")
    add_parser(parser.add_subparsers(dest="command", required=True))
    sys.exit(run(parser.parse_args(), sys.stdout, sys.stderr))
