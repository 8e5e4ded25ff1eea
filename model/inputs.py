"""The rules of a request's text and index fields, shared by the REST schemas (app/schemas/common.py states and
checks them) and, through those schemas, by the Python API (attnscope/checks.py validates its arguments with the
REST request models): one rule, one message. A blank text is refused by both for every model, an encoder too
(whose tokenizer would make [CLS] [SEP] of it)."""

from __future__ import annotations

import re
from collections.abc import Sequence

# Blank means only whitespace, as Python's str.isspace() has it; the class lists those characters explicitly so
# that every regex engine (JSON Schema's ECMA 262, Python's re, pydantic's Rust regex) reads the pattern alike.
NON_BLANK = r"[^\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
_NON_BLANK = re.compile(NON_BLANK)

BLANK = "must not be blank (a blank text makes no tokens of its own); send at least one non-space character"
SURROGATE = "contains a lone surrogate (U+D800-U+DFFF); send valid Unicode text"
DUPLICATES = "has duplicates; list each index once"


def text_problem(value: str) -> str | None:
    """What is wrong with a text field (blank: only whitespace, or empty; a lone surrogate), or None."""
    if not _NON_BLANK.search(value):
        return BLANK
    if any(0xD800 <= ord(c) <= 0xDFFF for c in value):
        return SURROGATE
    return None


def duplicates_problem(values: Sequence[int]) -> str | None:
    """What is wrong with a list of indices that must be distinct, or None."""
    return DUPLICATES if len(set(values)) != len(values) else None
