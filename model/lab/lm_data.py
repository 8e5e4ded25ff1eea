"""The text a small GPT is grown from (model/lab/lm.py): its checks, its character vocabulary, its entropies.

A text is refused (model.errors.InputError, loc ("text",)) when it is shorter than MIN_CHARS characters, longer
than MAX_BYTES bytes of UTF-8, or not text: a NUL or another control character (C0 other than tab, line feed and
carriage return, DEL, C1) or a lone surrogate (what a binary file or a broken decode leaves).

The vocabulary is the text's characters (Unicode code points) by falling frequency, ties by code point, at most
MAX_VOCAB of them, after UNKNOWN at id 0: a character outside it (rarer than the MAX_VOCAB-th, or not in the
text) is read as UNKNOWN. The held-out tail is the last HELD_OUT of the text; the rest is the training text.

The entropies are the text's own, in nats per character (natural logarithms), each character counted where it
stands: unigram H(X) = −Σ p(c) ln p(c), and bigram H(X_t | X_{t−1}) = H(pairs) − H(first of a pair), what a
table of the text's next-character frequencies scores on the text itself (in-sample, so below what such a table
scores on a held-out tail, far below on a text with thousands of distinct characters).
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
import torch

from model.errors import InputError

MIN_CHARS = 2_000  # characters: fewer leave a held-out tail too short to say anything
MAX_BYTES = 8 * 1024 * 1024  # bytes of UTF-8: one vocabulary pass and the encoded ids take ~1 s and ~70 MB
MAX_VOCAB = 6_000  # characters; a 100 KB Chinese text has ~2,000-3,000 distinct ones
HELD_OUT = 0.1  # the held-out tail: the last 10 % of the characters
UNKNOWN = "[UNK]"

# Characters that are not text: C0 controls but \t \n \r, DEL, C1 controls, and the surrogates (U+D800-DFFF),
# which a str holds only when it is broken (a lone surrogate from JSON's "\ud800" or a surrogateescape decode).
NOT_TEXT = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def check_text(text: str) -> None:
    """InputError (loc ("text",)) saying what to change when `text` cannot be trained on (module docstring)."""
    limits = f"a text of {MIN_CHARS:,} characters to {MAX_BYTES // (1024 * 1024)} MB of UTF-8"
    if not isinstance(text, str):
        raise InputError(("text",), f"the text must be a string; send {limits}")
    bad = NOT_TEXT.search(text)
    if bad is not None:
        code = ord(bad.group())
        kind = "a lone surrogate" if 0xD800 <= code <= 0xDFFF else "a control character"
        raise InputError(("text",), f"this is not plain text: character {bad.start():,} is {kind} (U+{code:04X}); "
                                    f"send UTF-8 text (a binary file is not text), {limits}")
    if len(text) < MIN_CHARS:
        raise InputError(("text",), f"the text has {len(text):,} characters; send at least {MIN_CHARS:,} "
                                    f"(at most {MAX_BYTES // (1024 * 1024)} MB of UTF-8)")
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        raise InputError(("text",), f"the text is {size:,} bytes of UTF-8; send at most {MAX_BYTES:,} "
                                    f"({MAX_BYTES // (1024 * 1024)} MB, at least {MIN_CHARS:,} characters)")


def vocabulary(text: str) -> list[str]:
    """UNKNOWN, then the text's characters by falling frequency (ties by code point), MAX_VOCAB at most."""
    counts = Counter(text)
    ranked = sorted(counts, key=lambda c: (-counts[c], ord(c)))
    return [UNKNOWN, *ranked[:MAX_VOCAB]]


def encode(text: str, vocab: list[str]) -> torch.Tensor:
    """(N,) int64: each character's id in `vocab` (0, UNKNOWN, for a character outside it)."""
    index = {c: i for i, c in enumerate(vocab)}
    return torch.tensor([index.get(c, 0) for c in text], dtype=torch.int64)


def _entropy(counts: np.ndarray) -> float:
    """−Σ p ln p of a table of counts (zeros left out)."""
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def entropies(text: str) -> tuple[float, float]:
    """(unigram, bigram) entropy of the text's characters, nats per character (module docstring)."""
    unigram = _entropy(np.array(list(Counter(text).values()), dtype=np.float64))
    if len(text) < 2:
        return unigram, 0.0
    pairs = np.array(list(Counter(zip(text, text[1:], strict=False)).values()), dtype=np.float64)
    firsts = np.array(list(Counter(text[:-1]).values()), dtype=np.float64)
    return unigram, max(0.0, _entropy(pairs) - _entropy(firsts))


def split(ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(training text, held-out tail): the tail is the last HELD_OUT of the ids (at least one)."""
    tail = max(1, math.ceil(len(ids) * HELD_OUT))
    return ids[:-tail], ids[-tail:]


def windows(ids: torch.Tensor, length: int, count: int) -> torch.Tensor:
    """(n, length) int64: up to `count` windows of `length` ids spread evenly over `ids`, without overlap when
    it is long enough (a fixed evaluation set); one window of all the ids when they are fewer than `length`."""
    length = min(length, len(ids))
    starts = len(ids) - length + 1  # the possible starts
    n = max(1, min(count, len(ids) // length))
    first = torch.linspace(0, starts - 1, n).round().to(torch.int64)  # (n,)
    return ids[first[:, None] + torch.arange(length)]  # (n, length)
