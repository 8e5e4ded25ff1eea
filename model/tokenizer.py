"""Tokenizer wrapper that keeps what the UI needs: offsets, special flags, segments, readable text.

Each token's `display` is its token string, except for a token the model does not know as written
(`unknown`): [UNK], or any token whose string is not its source characters even after the
tokenizer's own normalisation; those display the source characters from their offsets.
"""

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
    display: str  # what to show: `text`, or the source characters when `unknown`
    unknown: bool  # the model does not know these characters as written (e.g. [UNK]): `text` is not its source


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
        model = self._raw.model
        self._prefix: str = getattr(model, "continuing_subword_prefix", None) or ""  # "##" for WordPiece
        self._normalizer = self._raw.normalizer  # lowercase + accent stripping for MiniLM; None: text as typed

    def _normalized(self, source: str) -> str:
        """The source characters as the model reads them (the tokenizer's own normalizer, spaces dropped:
        BERT's normalizer pads CJK characters with spaces)."""
        if self._normalizer is None:
            return source
        return "".join(self._normalizer.normalize_str(source).split())

    def known_as_written(self, piece: str, source: str) -> bool:
        """Whether the token string `piece` is its source characters: exactly, without the continuation
        prefix (`##ing`), or after the tokenizer's normalisation ("Café" -> "cafe"). [UNK] made from other
        characters is not, nor is any token whose string does not come from its characters."""
        if piece == source:
            return True  # also a typed "[SEP]" or "[UNK]": added tokens are matched before normalisation
        stem = piece[len(self._prefix):] if self._prefix and piece.startswith(self._prefix) else piece
        return stem == source or stem == self._normalized(source)

    def encode(self, text: str, pair: str | None = None) -> Encoded:
        """Tokenize; raises TooManyTokens when the result exceeds max_tokens."""
        enc = self._raw.encode(text) if pair is None else self._raw.encode(text, pair)
        if len(enc.ids) > self.max_tokens:
            raise TooManyTokens(len(enc.ids), self.max_tokens)
        texts = (text, pair)
        tokens = []
        for piece, (start, end), special, segment, sequence in zip(
            enc.tokens, enc.offsets, enc.special_tokens_mask, enc.type_ids, enc.sequence_ids, strict=True
        ):
            if special or sequence is None:  # inserted by the template: no source characters
                tokens.append(Token(piece, None, None, True, segment, display=piece, unknown=False))
                continue
            source = (texts[sequence] or "")[start:end]
            known = self.known_as_written(piece, source)
            tokens.append(Token(piece, start, end, False, segment, display=piece if known or not source else source,
                                unknown=not known))
        return Encoded(ids=list(enc.ids), segments=list(enc.type_ids), tokens=tokens)
