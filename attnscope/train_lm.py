"""`attnscope train-lm FILE --out DIR`: grow a small character-level GPT from a UTF-8 text file
(model/lab/lm.py) and save it as a checkpoint directory that `attnscope.load(DIR)` and `attnscope serve
--model DIR` read (attnscope/commands.py adds it beside `models` and `attention`).

Progress goes to stderr, one line per evaluation; Ctrl-C stops the training and saves the model as it is.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from dataclasses import fields
from pathlib import Path
from types import FrameType
from typing import TextIO

from model.errors import InputError
from model.lab.lm import MAX_BYTES, MAX_LR, RANGES, LmEval, LmSettings, LmTraining

from .commands import Refused
from .generating import _number, _whole

HELP = {"steps": "training steps", "seed": "the initialisation's and the batches' seed: the same text, seed and "
        "settings give the same model", "context": "characters the model sees at once (its n_positions)",
        "layers": "transformer blocks", "heads": "attention heads per layer", "d_model": "the width (a multiple of "
        "--heads)", "batch": "windows of the text per step", "eval_every": "steps between evaluations (a "
        "progress line each)", "sample_chars": "characters generated at each evaluation"}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    train = sub.add_parser(
        "train-lm", help="grow a small character-level GPT from a text file and save it as a checkpoint",
        description="Train a small GPT-2-shaped decoder on FILE (UTF-8 text, 2,000 characters to 8 MB), one token "
                    "per character, holding out the last 10 % of the text; progress (losses in nats per "
                    "character beside the text's unigram and bigram entropies, and a generated sample) on stderr. "
                    "The checkpoint directory loads with attnscope.load(DIR) and attnscope serve --model DIR.")
    train.add_argument("file", type=Path, metavar="FILE", help="the text (UTF-8), '-' for stdin")
    train.add_argument("--out", type=Path, required=True, metavar="DIR", help="the checkpoint directory to write")
    defaults = LmSettings()
    for name, (low, high) in RANGES.items():
        flag = "--" + name.replace("_", "-")
        train.add_argument(flag, dest=name, type=_whole(low, high), default=getattr(defaults, name), metavar="N",
                           help=f"{HELP[name]}: {low:,} to {high:,} (default {getattr(defaults, name)})")
    train.add_argument("--lr", type=_number(0.0, MAX_LR, low_open=True), default=defaults.lr, metavar="LR",
                       help=f"AdamW's peak learning rate, above 0 and at most {MAX_LR} (default {defaults.lr})")
    train.add_argument("--threads", type=_whole(1, 256), default=1, metavar="N",
                       help="torch's CPU threads (default 1, as the server's training jobs: the same weights)")
    train.add_argument("--quiet", action="store_true", help="no progress lines (the summary line is still printed)")


def read_text(path: Path) -> str:
    """The file's text, or Refused naming the file and what to give instead."""
    try:  # one byte over the limit is enough to refuse it
        if str(path) == "-":
            raw = sys.stdin.buffer.read(MAX_BYTES + 1)
        else:
            with path.expanduser().open("rb") as file:
                raw = file.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise Refused(f"{path}: no such file; give a UTF-8 text file") from None
    except IsADirectoryError:
        raise Refused(f"{path} is a directory; give a UTF-8 text file") from None
    except OSError as exc:
        raise Refused(f"{path}: cannot read it ({exc.strerror}); give a readable UTF-8 text file") from None
    if len(raw) > MAX_BYTES:
        raise Refused(f"{path} is over {MAX_BYTES:,} bytes; give a text of at most {MAX_BYTES // 2**20} MB of UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(f"{path} is not UTF-8 text (byte {exc.start:,} cannot be decoded); give a UTF-8 text "
                      "file") from None


def _settings(args: argparse.Namespace) -> LmSettings:
    names = [f.name for f in fields(LmSettings)]
    try:
        return LmSettings(**{name: getattr(args, name) for name in names})
    except ValueError as exc:
        message = str(exc)
        field = next((n for n in names if message.startswith(n + " ")), None)
        raise Refused(f"--{field.replace('_', '-')}: {message}" if field else message) from None


def train_lm(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Runs `attnscope train-lm`; Refused for a file, text or setting it cannot train on (exit code 2)."""
    import torch

    if args.out.expanduser().exists() and not args.out.expanduser().is_dir():
        raise Refused(f"--out {args.out} is a file; give a directory (made if missing)")
    text = read_text(args.file)
    settings = _settings(args)
    try:
        training = LmTraining(text, settings)
    except InputError as exc:
        raise Refused(f"{args.file}: {exc.message}") from None
    print(f"attnscope train-lm: {len(text):,} characters, {len(training.vocabulary):,} tokens in the vocabulary, "
          f"{len(training.val_ids):,} held out; unigram entropy {training.unigram_entropy:.3f}, bigram "
          f"{training.bigram_entropy:.3f} nats per character", file=err, flush=True)

    def progress(e: LmEval) -> None:
        if not args.quiet:
            print(f"step {e.step}/{settings.steps}  {e.seconds:.0f} s  train {e.train_loss:.3f}  val "
                  f"{e.val_loss:.3f}  sample {json.dumps(e.sample, ensure_ascii=False)}", file=err, flush=True)

    stopped = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        stopped.append(signum)

    previous, threads = signal.signal(signal.SIGINT, interrupt), torch.get_num_threads()
    torch.set_num_threads(args.threads)
    try:
        last = training.run(progress, lambda: bool(stopped))
    finally:
        signal.signal(signal.SIGINT, previous)
        torch.set_num_threads(threads)
    directory = training.save(args.out, args.out.expanduser().resolve().name)
    ended = f"stopped at step {last.step}" if stopped else f"{last.step} steps"
    print(f"attnscope train-lm: {ended} in {last.seconds:.0f} s, val loss {last.val_loss:.3f} nats per character "
          f"(unigram entropy {last.unigram_entropy:.3f}); saved {directory} (attnscope.load or attnscope serve "
          "--model reads it)", file=err, flush=True)
    print(directory, file=out)
    return 0
