"""Tokenizer wrapper that keeps what the UI needs: offsets, special flags, segments."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as RawTokenizer


class TooManyTokens(ValueError):
    """The input is longer than the model accepts; never truncated silently."""

    def __init__(self, count: int, limit: int) -> None:
        super().__init__(f"the input has {count} tokens but the model takes at most {limit}")
        self.count = count
        self.limit = limit


@dataclass(frozen=True)
class Token:
    text: str  # the tokenizer's own token string: "[CLS]", "##ing"
    start: int | None  # code-point offset into its segment's text; None for inserted tokens
    end: int | None
    special: bool  # inserted by the tokenizer ([CLS], [SEP] of the template)
    segment: int  # token-type id: 0 for text, 1 for text_pair


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    segments: list[int]
    tokens: list[Token]

    def __len__(self) -> int:
        return len(self.ids)


class Tokenizer:
    """Loads a `tokenizer.json` with padding and truncation turned off."""

    def __init__(self, path: Path, max_tokens: int) -> None:
        self._raw = RawTokenizer.from_file(str(path))
        self._raw.no_padding()
        self._raw.no_truncation()
        self.max_tokens = max_tokens

    def encode(self, text: str, pair: str | None = None) -> Encoded:
        """Tokenize; raises TooManyTokens when the result exceeds max_tokens."""
        enc = self._raw.encode(text) if pair is None else self._raw.encode(text, pair)
        if len(enc.ids) > self.max_tokens:
            raise TooManyTokens(len(enc.ids), self.max_tokens)
        tokens = [
            Token(
                text=piece,
                start=None if special else start,
                end=None if special else end,
                special=bool(special),
                segment=segment,
            )
            for piece, (start, end), special, segment in zip(
                enc.tokens, enc.offsets, enc.special_tokens_mask, enc.type_ids
            )
        ]
        return Encoded(ids=list(enc.ids), segments=list(enc.type_ids), tokens=tokens)
