"""`attnscope generate`: a decoder's continuation of a text, token by token with the KV cache
(attnscope/commands.py adds it beside `models` and `attention`)."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import TextIO

import orjson

from model.analysis.generate import MAX_NEW_TOKENS
from model.checkpoints.registry import DECODERS, family_names
from model.errors import InputError

from .api import NewToken
from .commands import Refused, _count, _encode, add_placement, open_model


def _number(low: float, high: float, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a number in [low, high] ((low, high] with low_open)."""
    def parse(value: str) -> float:
        try:
            x = float(value)
        except ValueError:
            x = math.nan
        if not (low < x <= high if low_open else low <= x <= high):
            bound = f"above {low:g}" if low_open else f"at least {low:g}"
            raise argparse.ArgumentTypeError(f"{value!r}: give a number {bound} and at most {high:g}")
        return x
    return parse


def _whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high]."""
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            n = low - 1
        if not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{value!r}: give a whole number from {low} to {high}")
        return n
    return parse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gen = sub.add_parser(
        "generate", help=f"continue a text with a decoder ({family_names(DECODERS, 'or')}), token by token",
        description="Continue TEXT with a model that has an LM head, one token at a time with the KV cache; the "
                    "continuation is printed as it is made (greedy by default: the tokens of transformers' "
                    "generate without sampling). Each token's attention rows: the Python API or POST "
                    "/api/v1/generate.")
    gen.add_argument("text", metavar="TEXT", help="the text to continue")
    gen.add_argument("--model", required=True, metavar="ID|PATH|ORG/NAME",
                     help="a model with an LM head: a checkpoint directory, a Hugging Face repo id in the local "
                          "cache, or an id of ATTNSCOPE_MODEL_PATHS")
    gen.add_argument("--max-new-tokens", type=_whole(1, MAX_NEW_TOKENS), default=20, metavar="N",
                     help=f"tokens to add, 1 to {MAX_NEW_TOKENS} (default 20); fewer at the model's end token")
    gen.add_argument("--temperature", type=_number(0, 100), default=0.0, metavar="T",
                     help="0: greedy (default); above 0: sample from the logits divided by T")
    gen.add_argument("--top-k", type=_whole(0, 1_000_000), default=0, metavar="K",
                     help="sampling: keep the K most probable tokens (default 0: all)")
    gen.add_argument("--top-p", type=_number(0, 1, low_open=True), default=1.0, metavar="P",
                     help="sampling: keep the most probable tokens whose probabilities reach P (default 1: all)")
    gen.add_argument("--seed", type=_whole(0, 2**31 - 1), default=0, metavar="S",
                     help="sampling: the same settings and seed give the same tokens (default 0)")
    gen.add_argument("--json", action="store_true",
                     help="print one JSON object at the end (every token with its probability and top 5) "
                          "instead of the text as it comes")
    add_placement(gen)


def generate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    started = time.perf_counter()
    model = open_model(args.model, args.device, args.dtype)
    if not model.pretrained.lm_head:
        raise Refused(f"--model {args.model}: model {model.info.id!r} ({model.info.architecture}) has no LM head, "
                      f"which generation needs; give a decoder: a {family_names(DECODERS, 'or')} checkpoint")
    _encode(model, args.text, None, "TEXT")
    tokens: list[NewToken] = []
    try:
        for token in model.generate(args.text, args.max_new_tokens, temperature=args.temperature, top_k=args.top_k,
                                    top_p=args.top_p, seed=args.seed, attention=False):
            tokens.append(token)
            if not args.json:
                out.write(token.display)
                out.flush()
    except InputError as exc:  # GenerateError: the text and --max-new-tokens over the model's limit
        raise Refused(f"--max-new-tokens {args.max_new_tokens}: {exc.message}") from None
    seconds = time.perf_counter() - started
    ended = bool(tokens) and tokens[-1].id in model.pretrained.stop_ids
    if args.json:
        out.write(orjson.dumps({
            "model": model.info.id, "text": args.text, "continuation": "".join(t.display for t in tokens),
            "stopped": "end" if ended else "length",
            "tokens": [{"index": t.index, "id": t.id, "text": t.text, "display": t.display,
                        "probability": t.probability,
                        "top": [{"id": i, "display": d, "probability": p} for i, d, p in t.top]} for t in tokens],
        }, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        out.write("\n")
    print(f"{_count(len(tokens), 'token')} from {model.info.id} in {seconds:.2f} s "
          f"({len(tokens) / seconds:.1f} tokens/s, loading included); stopped at "
          f"{'the end token' if ended else '--max-new-tokens'}", file=err)
    return 0
