"""Tokenizer wrapper that keeps what the UI needs: offsets, special flags, segments, readable text.

WordPiece (BERT, MiniLM): each token's `display` is its token string, except for a token the model
does not know as written (`unknown`): [UNK], or any token whose string is not its source characters
even after the tokenizer's own normalisation; those display the source characters from their offsets.

Byte-level BPE (GPT-2, RoBERTa): a token string spells bytes in GPT-2's byte alphabet ("Ġworld" is the
bytes of " world"), and one character may be split over several tokens ("我" is three tokens of one
byte each, all with the offsets of the whole character). Each token displays the characters whose
first byte it holds, the leading space included: "Ġworld" displays " world", the first byte of "我"
displays "我" and its two continuation bytes display "" (they add nothing to show, and the character is
not repeated). So the displays of a segment's tokens, joined, are its text, every character once; a
space the tokenizer inserted (add_prefix_space) is shown by no token. Every byte is in the vocabulary,
so no byte-level token is `unknown`.

Byte-fallback BPE (Llama 2, Mistral, TinyLlama: SentencePiece's layout): a token string is text with
"▁" for each space ("▁world" is " world"), and a character outside the vocabulary is spelt by byte
tokens "<0xE6>" "<0xB3>" "<0xA8>". These display as byte-level tokens do: the first byte token of a
character displays the character and the others "", "▁world" displays " world", and the "▁" the
tokenizer put before the text (its prepend scheme) is shown by no token.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
    display: str  # what to show: `text`, or the source characters when `unknown`; byte-level BPE: see above
    unknown: bool  # the model does not know these characters as written (e.g. [UNK]): `text` is not its source


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    segments: list[int]
    tokens: list[Token]

    def __len__(self) -> int:
        return len(self.ids)


def _byte_alphabet() -> dict[str, int]:
    """GPT-2's byte-level alphabet inverted: the byte each of its 256 characters stands for.

    Printable Latin-1 bytes stand for themselves; the others (controls, space, 0x7F-0xA0, 0xAD) take
    the code points from 256 up in byte order, so space is "Ġ" (U+0120) and newline "Ċ" (U+010A)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: b for b in printable}
    for n, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = 256 + n
    return {chr(c): b for b, c in chars.items()}


BYTE_ALPHABET = _byte_alphabet()
BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # a byte-fallback token: one byte
METASPACE = "\u2581"  # "▁", SentencePiece's space


def _byte_levels(step: object) -> list[dict[str, object]]:
    """The ByteLevel steps of a tokenizer.json pre_tokenizer (itself, or inside a Sequence)."""
    if not isinstance(step, dict):
        return []
    if step.get("type") == "ByteLevel":
        return [step]
    return [level for inner in step.get("pretokenizers") or [] for level in _byte_levels(inner)]


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
        spec = json.loads(self._raw.to_str())
        levels = _byte_levels(spec.get("pre_tokenizer"))
        self.byte_level = bool(levels)  # GPT-2, RoBERTa, Qwen: token strings spell bytes
        # Llama 2, Mistral: text with "▁" for spaces, and <0xNN> tokens for the bytes of unknown characters
        self.byte_fallback = not levels and bool((spec.get("model") or {}).get("byte_fallback"))
        # a space the tokenizer puts before the text shows in no token (a byte-fallback text starts with one
        # only if the tokenizer put it there, or the text does)
        self._prefix_space = any(level.get("add_prefix_space") for level in levels) or self.byte_fallback
        self._added = set(self._raw.get_added_tokens_decoder())  # ids whose string is itself, not bytes
        self._unk: str | None = getattr(model, "unk_token", None)

    def plain_ids(self) -> list[int]:
        """Every vocabulary id that is not an added token ([CLS], <s>, <|endoftext|>, …), in id order."""
        return sorted(set(self._raw.get_vocab(with_added_tokens=False).values()) - self._added)

    def around(self) -> tuple[list[int], list[int]]:
        """The ids the tokenizer's template puts before and after a text ([CLS] and [SEP], a BOS, or none)."""
        enc = self._raw.encode("a")
        text = [i for i, s in enumerate(enc.special_tokens_mask) if not s]
        return enc.ids[: text[0]], enc.ids[text[-1] + 1:]

    def token_text(self, token_id: int) -> tuple[str, str]:
        """A vocabulary id as (its token string, the tokenizer's own decode of that one id): "Ġworld" and
        " world". A byte-level token that holds only part of a character's UTF-8 bytes decodes to U+FFFD:
        one id alone cannot say which character it is part of."""
        return self._raw.id_to_token(token_id) or "", self._raw.decode([token_id], skip_special_tokens=False)

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
        by_bytes = self.byte_level or self.byte_fallback
        shown = self._byte_displays(enc, texts) if by_bytes else {}
        tokens = []
        for index, (piece, (start, end), special, segment, sequence) in enumerate(zip(
            enc.tokens, enc.offsets, enc.special_tokens_mask, enc.type_ids, enc.sequence_ids, strict=True
        )):
            if special or sequence is None:  # inserted by the template: no source characters
                tokens.append(Token(piece, None, None, True, segment, display=piece, unknown=False))
                continue
            source = (texts[sequence] or "")[start:end]
            if by_bytes:
                unknown = piece == self._unk and source != piece
                tokens.append(Token(piece, start, end, False, segment, display=shown[index], unknown=unknown))
                continue
            known = self.known_as_written(piece, source)
            tokens.append(Token(piece, start, end, False, segment, display=piece if known or not source else source,
                                unknown=not known))
        return Encoded(ids=list(enc.ids), segments=list(enc.type_ids), tokens=tokens)

    def stream(self) -> TokenStream:
        """A display for tokens that arrive one at a time (generation)."""
        return TokenStream(self)

    def token_bytes(self, token_id: int) -> bytes | None:
        """The bytes a vocabulary id stands for under a byte-level or byte-fallback tokenizer (a generated
        token's text, which may end inside a character); None for other tokenizers and the unknown token."""
        if not (self.byte_level or self.byte_fallback):
            return None
        return self._bytes_of(token_id, self._raw.id_to_token(token_id) or "")

    def _bytes_of(self, token_id: int, piece: str) -> bytes | None:
        """The bytes a byte-level or byte-fallback token stands for; None for the unknown token or a string
        outside the alphabet."""
        if piece == self._unk:
            return None
        if token_id in self._added:
            return piece.encode("utf-8")  # "<mask>", "<|endoftext|>" as typed
        if self.byte_fallback:
            byte = BYTE_TOKEN.fullmatch(piece)
            return bytes([int(byte.group(1), 16)]) if byte else piece.replace(METASPACE, " ").encode("utf-8")
        if not all(c in BYTE_ALPHABET for c in piece):
            return None
        return bytes(BYTE_ALPHABET[c] for c in piece)

    def _byte_displays(self, enc: Any, texts: tuple[str, str | None]) -> dict[int, str]:
        """Each byte-level text token's display (module docstring), by token index."""
        shown: dict[int, str] = {}
        for sequence, text in enumerate(texts):
            members = [i for i, (s, special) in enumerate(zip(enc.sequence_ids, enc.special_tokens_mask, strict=True))
                       if s == sequence and not special]
            if not members:
                continue
            chunks = [self._bytes_of(enc.ids[i], enc.tokens[i]) for i in members]
            try:
                decoded = b"".join(c for c in chunks if c is not None).decode("utf-8")
            except UnicodeDecodeError:
                decoded = None
            if decoded is None or None in chunks:
                # Bytes that cannot be read back (an unknown token in the vocabulary): each token shows the
                # source characters of its offsets that no earlier token showed.
                covered = 0
                for i in members:
                    start, end = enc.offsets[i]
                    shown[i] = (text or "")[max(start, covered):end]
                    covered = max(covered, end)
                continue
            # The space add_prefix_space put before a text that does not start with one is not the text's.
            skip = 1 if self._prefix_space and decoded.startswith(" ") and not (text or "").startswith(" ") else 0
            starts, at = [], 0  # the byte where each character starts
            for character in decoded:
                starts.append(at)
                at += len(character.encode("utf-8"))
            next_char, end = 0, 0
            for i, chunk in zip(members, chunks, strict=True):
                end += len(chunk or b"")
                first = next_char
                while next_char < len(decoded) and starts[next_char] < end:
                    next_char += 1
                shown[i] = decoded[max(first, skip):next_char]
        return shown


class TokenStream:
    """The displays of tokens that arrive one at a time, as a continuation of a text: each token shows the
    characters it completes. A byte-level or byte-fallback token may hold only part of a character's UTF-8
    bytes; it shows nothing, and the token with the character's last byte shows the character (bytes that
    make no character show U+FFFD). Spaces are the text's own ("▁" and "Ġ" are spaces). Under other
    tokenizers a token shows the tokenizer's decode of it alone."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def add(self, token_id: int) -> str:
        raw = self._tokenizer.token_bytes(token_id)
        if raw is None:
            return self._tokenizer.token_text(token_id)[1]
        shown: str = self._utf8.decode(raw)
        return shown
