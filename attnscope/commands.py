"""`attnscope models`, `attnscope attention`, `attnscope generate` and `attnscope train-lm`: the command-line side
of the Python API.

attnscope/cli.py adds these with `add_parsers(subparsers)` and runs `run(args)` for a command in COMMANDS.
Every refusal is one line on stderr that says what to change, with exit code 2 (as argparse's own).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

import orjson

from model.checkpoints import DTYPES, check_device, check_dtype, hfcache
from model.checkpoints.registry import MODELS, local_id
from model.checkpoints.tokenizer import Encoded, TooManyTokens
from model.errors import CheckpointError, DeviceError, IndexOutOfRange, InputError, UnknownModel

from . import progress
from .api import Attention, Model, ModelInfo, load
from .output import SUFFIXES, NpzWriter, atomic, json_bytes, json_item

COMMANDS = ("models", "attention", "generate", "train-lm")
USAGE_ERROR = 2
DEFAULT_BATCH = 8


class Refused(Exception):
    """A request the command cannot carry out; the message says what to change (exit code 2)."""


def _indices(value: str) -> list[int]:
    try:
        out = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of indices, e.g. 0,2") from None
    if not out:
        raise argparse.ArgumentTypeError("give at least one index, e.g. 0,2")
    return out


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{value!r}: give a whole number of at least 1")
    return n


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Adds `models`, `attention`, `generate`, `train-lm` and `corpus` to the `attnscope` command's subparsers."""
    from . import corpus as corpus_cli
    from . import generating, train_lm  # they use this module's open_model and refusals
    models = sub.add_parser("models", help="list the models attnscope can run",
                            description="The known models (and any checkpoint directory given with --model): id, "
                                        "architecture, layers x heads, max tokens, causal, pairs.")
    models.add_argument("--model", action="append", default=[], metavar="PATH|ORG/NAME",
                        help="also describe this checkpoint directory or Hugging Face repo id in the local cache "
                             "(repeatable)")
    models.add_argument("--json", action="store_true", help="print JSON instead of a table")

    att = sub.add_parser(
        "attention", help="write attention maps of a text or of a file of sentences to .npz or .json",
        description="Run a model on TEXT (or on every line of --file, in batches) and write every chosen layer's "
                    "and head's attention maps to --out (.npz or .json; the layout is in docs/cli.md).")
    att.add_argument("text", nargs="?", metavar="TEXT", help="the text (or use --file)")
    att.add_argument("--pair", help="a second text, for models that take pairs (BERT's [SEP]-joined inputs)")
    att.add_argument("--file", type=Path, metavar="FILE",
                     help="one sentence a line (UTF-8; blank lines are skipped), '-' for stdin")
    att.add_argument("--model", default="minilm", metavar="ID|PATH|ORG/NAME",
                     help="a known model id (attnscope models), a checkpoint directory or a Hugging Face repo id "
                          "in the local cache (HF_HUB_CACHE, HF_HOME; never downloaded) (default minilm)")
    att.add_argument("--layers", type=_indices, metavar="0,2", help="the layers to keep (default all)")
    att.add_argument("--heads", type=_indices, metavar="1,3", help="the heads to keep (default all)")
    att.add_argument("--out", type=Path, required=True, metavar="FILE.npz|FILE.json", help="where to write the maps")
    att.add_argument("--batch-size", type=_positive, default=DEFAULT_BATCH, metavar="N",
                     help=f"sentences per forward with --file (default {DEFAULT_BATCH})")
    add_placement(att)
    shown = att.add_mutually_exclusive_group()
    shown.add_argument("--progress", action="store_true",
                       help="draw the progress bar even when stderr is not a terminal "
                            f"(also {progress.ENV}=1)")
    shown.add_argument("--quiet", action="store_true", help="no progress bar (the summary line is still printed)")


    generating.add_parser(sub)
    train_lm.add_parser(sub)
    corpus_cli.add_parser(sub)


def run(args: argparse.Namespace, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    """Runs `args.command` (one of COMMANDS); returns the exit code."""
    from . import corpus as corpus_cli
    from . import generating, train_lm
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    if args.command == "corpus":
        return corpus_cli.run(args, out, err)
    try:
        if args.command == "models":
            return models(args, out)
        if args.command == "attention":
            return attention(args, err)
        if args.command == "generate":
            return generating.generate(args, out, err)
        if args.command == "train-lm":
            return train_lm.train_lm(args, out, err)
    except Refused as exc:
        print(f"attnscope {args.command}: error: {exc}", file=err)
        return USAGE_ERROR
    raise ValueError(f"unknown command {args.command!r}; the commands are {', '.join(COMMANDS)}")


def main(argv: Sequence[str] | None = None) -> int:
    """These commands on their own (attnscope/cli.py's `attnscope` has them beside `serve`)."""
    parser = argparse.ArgumentParser(prog="attnscope")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    return run(parser.parse_args(argv))


def served_paths() -> dict[str, str]:
    """The checkpoint directories and cached repo ids of ATTNSCOPE_MODEL_PATHS under the ids `attnscope serve`
    gives them, so `--model tiny-gpt2` names the same model here as in the server's list."""
    paths: dict[str, str] = {}
    for part in os.environ.get("ATTNSCOPE_MODEL_PATHS", "").split(os.pathsep):
        if hfcache.is_repo_id(part):
            paths[local_id(Path(hfcache.repo_name(part)), [*MODELS, *paths])] = part
        elif part.strip():
            path = Path(part).expanduser().resolve()
            paths[local_id(path, [*MODELS, *paths])] = str(path)
    return paths


def add_placement(parser: argparse.ArgumentParser) -> None:
    """--device and --dtype: where the model runs and what its weights are kept and computed in."""
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                        help="where the model runs (cuda only when this torch has a GPU; default cpu)")
    parser.add_argument("--dtype", choices=tuple(DTYPES), default="float32",
                        help="what the weights are kept and computed in (default float32); bfloat16 takes half the "
                             "memory and is faster on a CPU with AVX-512 BF16 or AMX, its maps a few hundredths off")


def open_model(name_or_path: str, device: str = "cpu", dtype: str = "float32") -> Model:
    """The model of --model (an id, one of ATTNSCOPE_MODEL_PATHS' ids, or a directory), or Refused saying
    what to give instead."""
    served = served_paths()
    if name_or_path in served:
        name_or_path = served[name_or_path]
    try:
        check_device(device)
    except DeviceError:
        raise Refused(f"--device {device}: torch.cuda.is_available() is False here (a CPU-only torch, or no GPU); "
                      "use --device cpu") from None
    try:
        check_dtype(dtype, device)
    except DeviceError as exc:
        raise Refused(f"--dtype {dtype}: {exc}") from None
    looks_like_path = any(c in name_or_path for c in "/\\~") or name_or_path.startswith(".")
    if looks_like_path and not Path(name_or_path).expanduser().exists() and not hfcache.is_repo_id(name_or_path):
        raise Refused(f"--model {name_or_path}: no such directory; give a checkpoint directory, a Hugging Face repo "
                      f"id (ORG/NAME) in the local cache or one of the known models: {', '.join([*MODELS, *served])}")
    try:
        return load(name_or_path, device, dtype)
    except UnknownModel as exc:
        raise Refused(f"--model: {exc.message}") from None
    except CheckpointError as exc:  # a repo id's message starts with it
        named = str(exc).startswith(f"{name_or_path}: ")
        raise Refused(f"--model {exc}" if named else f"--model {name_or_path}: {exc}") from None


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def models(args: argparse.Namespace, out: TextIO) -> int:
    names = [*MODELS, *served_paths().values(), *args.model]
    infos: list[ModelInfo] = [open_model(name).info for name in names]
    if args.json:
        out.write(orjson.dumps([i.as_dict() for i in infos], option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    header = ("id", "architecture", "layers x heads", "max tokens", "causal", "pairs")
    rows = [(i.id, i.architecture, f"{i.layers} x {i.heads}", str(i.max_tokens), _yes(i.causal), _yes(i.pairs))
            for i in infos]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    for row in [header, *rows]:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
    return 0


def read_sentences(path: Path) -> tuple[list[str], list[int], int]:
    """The non-blank lines of a file (without their line ends), their 1-based line numbers, and how many
    blank lines were skipped."""
    try:
        raw = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    except OSError as exc:
        raise Refused(f"--file {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        content = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise Refused(f"--file {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    texts, lines, blank = [], [], 0
    for number, line in enumerate(content.splitlines(), start=1):
        if line.strip():
            texts.append(line)
            lines.append(number)
        else:
            blank += 1
    return texts, lines, blank


def check_out(path: Path) -> None:
    if path.suffix.lower() not in SUFFIXES:
        raise Refused(f"--out {path}: the file name must end in .npz or .json (the format is chosen by it)")
    if not path.parent.is_dir():
        raise Refused(f"--out {path}: the directory {path.parent} does not exist; create it or choose another")
    if path.is_dir():
        raise Refused(f"--out {path}: is a directory; give a file name ending in .npz or .json")


def _checked(model: Model, layers: list[int] | None, heads: list[int] | None) -> tuple[list[int], list[int]]:
    info = model.info
    for flag, chosen, count, what in (("--layers", layers, info.layers, "layers"),
                                      ("--heads", heads, info.heads, "heads")):
        bad = [i for i in chosen or [] if not 0 <= i < count]
        if bad:
            raise Refused(f"{flag} {','.join(map(str, chosen or []))}: {what} {bad} out of range; model {info.id!r} "
                          f"has {what} 0..{count - 1}")
    return (list(range(info.layers)) if layers is None else layers,
            list(range(info.heads)) if heads is None else heads)


def _encode(model: Model, text: str, pair: str | None, where: str) -> Encoded:
    try:
        return model.encode(text, pair)
    except TooManyTokens as exc:
        raise Refused(f"{where} has {exc.count} tokens but model {model.info.id!r} takes at most {exc.limit}; "
                      "shorten it or split it") from None
    except InputError as exc:
        raise Refused(f"{where}: {exc.message}") from None


def attention(args: argparse.Namespace, err: TextIO) -> int:
    started = time.perf_counter()
    if (args.text is None) == (args.file is None):
        raise Refused("give either TEXT or --file FILE (one sentence a line), not both or neither")
    if args.file is not None and args.pair is not None:
        raise Refused("--pair goes with TEXT, not with --file; run one TEXT --pair PAIR at a time")
    check_out(args.out)
    if args.file is not None:
        texts, lines, blank = read_sentences(args.file)
        if not texts:
            raise Refused(f"--file {args.file}: no sentences (every one of its {blank} lines is blank)")
    model = open_model(args.model, args.device, args.dtype)
    if args.pair is not None and not model.info.pairs:
        raise Refused(f"--pair: model {model.info.id!r} ({model.info.architecture}) takes one text, not pairs; "
                      "leave --pair out or choose a model that takes pairs (attnscope models)")
    layers, heads = _checked(model, args.layers, args.heads)
    try:
        if args.file is None:
            _encode(model, args.text, args.pair, "TEXT")
            answer = model.attention(args.text, args.pair, layers, heads)
            with atomic(args.out) as f:
                write_single(f, args.out, answer)
            _summary(err, args.out, model, [answer], started)
            return 0
        encodings = [_encode(model, t, None, f"--file {args.file} line {n}") for t, n in zip(texts, lines, strict=True)]
        bar = progress.Progress(len(texts), err, progress.wanted(err, args.progress, args.quiet))
        try:
            with atomic(args.out) as f:
                done = write_batched(f, args.out, model, texts, lines, encodings, layers, heads, args.batch_size, bar)
        finally:
            bar.close()  # the bar's line ended even when the run is interrupted
    except IndexOutOfRange as exc:  # checked above; kept so that a refusal never becomes a traceback
        raise Refused(exc.message) from None
    _summary(err, args.out, model, done, started, blank)
    return 0


def write_single(stream: BinaryIO, path: Path, answer: Attention) -> None:
    if path.suffix.lower() == ".json":
        stream.write(json_bytes(answer.model, answer.layers, answer.heads, [json_item(answer)]))
        return
    npz = NpzWriter(stream)
    npz.header(answer.model, answer.layers, answer.heads)
    npz.single(answer)
    npz.close()


def write_batched(stream: BinaryIO, path: Path, model: Model, texts: list[str], lines: list[int],
                  encodings: list[Encoded], layers: list[int], heads: list[int], batch_size: int,
                  bar: progress.Progress) -> list[Attention]:
    """Runs the sentences in batches into the file; returns the answers' summaries (maps dropped for .npz,
    whose batches are on disk as soon as they are computed)."""
    as_json = path.suffix.lower() == ".json"
    npz = None if as_json else NpzWriter(stream)
    if npz is not None:
        npz.header(model.info.id, layers, heads)
        npz.sentences(texts, lines)
    items: list[dict[str, object] | None] = [None] * len(texts)
    kept: list[Attention] = []
    bar.update(0)
    pairs: list[tuple[str, str | None]] = [(t, None) for t in texts]
    for results in model._iter_encoded(pairs, encodings, batch_size, layers, heads):
        for i, answer in results:
            if npz is not None:
                npz.item(i, answer)
            else:
                items[i] = json_item(answer, lines[i])
            kept.append(Attention(answer.text, None, answer.tokens, answer.ids, answer.maps[:0], layers, heads,
                                  answer.model))
        bar.update(len(kept))
    if npz is not None:
        npz.close()
    else:
        stream.write(json_bytes(model.info.id, layers, heads, [i for i in items if i is not None]))
    return kept


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _summary(err: TextIO, path: Path, model: Model, answers: list[Attention], started: float,
             blank: int | None = None) -> None:
    """The line printed at the end of every run, progress bar or not; `blank` None: a TEXT run."""
    sizes = [len(a) for a in answers]
    n = len(answers)
    what = "the text" if blank is None else _count(n, "sentence")
    tokens = _count(sizes[0], "token") if min(sizes) == max(sizes) else f"{min(sizes)}-{max(sizes)} tokens"
    shape = f"{_count(len(answers[0].layers), 'layer')} x {_count(len(answers[0].heads), 'head')}"
    skipped = f"; skipped {_count(blank, 'blank line')}" if blank else ""
    print(f"attnscope attention: wrote the maps of {what} ({tokens}; {shape} of {model.info.id}) to {path} "
          f"in {time.perf_counter() - started:.1f} s{skipped}", file=err)
