"""The encoder-decoder lab's tasks (model/lab/seq2seq.py): examples drawn on the fly, their characters as ids.

`reverse`: a string of 4 to 30 lowercase letters a-z (length uniform, letters uniform and independent) -> the
same letters backwards. Output character t of a source of n letters copies source position n − 1 − t: that
one position is its right alignment.

`dates`: a date written in one of eight forms -> ISO "YYYY-MM-DD". The date is uniform over the days from
1969-01-01 to 2068-12-31, the form uniform over FORMS (shown for 1 December 2026):

    day_mon_year      1 Dec 2026            day_month_year    1 December 2026
    month_day_year    December 1, 2026      mon_day_year      Dec 1, 2026
    chinese           2026年12月1日          dd_mm_yy          01/12/26 (day first, two-digit year)
    yyyy_mm_dd        2026/12/01            dotted            1.12.2026

Month names are English, abbreviations their first three letters. Days and months carry no leading zero but in
dd_mm_yy and yyyy_mm_dd. A two-digit year YY is 20YY for 00-68 and 19YY for 69-99: the POSIX pivot that
Python's strptime("%y") uses, and the reason for the years' range (every year of it has one two-digit form).

Right alignment of a date's output characters: each of the year's four digits -> the source's year (its four
digits, or for a two-digit year its two digits; the century then has no digits of its own and is read off the
same span), each month digit -> the month's span (its name or its digits), each day digit -> the day's digits.
The two "-" have no source: their sets are empty, and alignment measures leave them out.

Ids: a source character is 1 + its index in the task's source alphabet (0 pads); a target character is 3 + its
index in the target alphabet, after PAD = 0, START = 1 (the decoder's first input) and END = 2 (the last output).
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass

import torch

PAD, START, END = 0, 1, 2
SPECIALS = 3  # target ids below this are PAD, START and END

MIN_LETTERS, MAX_LETTERS = 4, 30
LETTERS = "abcdefghijklmnopqrstuvwxyz"

FIRST_DAY, LAST_DAY = datetime.date(1969, 1, 1), datetime.date(2068, 12, 31)
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
FORMS = ("day_mon_year", "day_month_year", "month_day_year", "mon_day_year", "chinese", "dd_mm_yy",
         "yyyy_mm_dd", "dotted")
ISO_LENGTH = 10  # YYYY-MM-DD
ISO_PARTS = ("year",) * 4 + ("",) + ("month",) * 2 + ("",) + ("day",) * 2  # what each ISO character comes from


@dataclass(frozen=True)
class Example:
    """A source text, its target text, and per target character the source positions it comes from."""

    source: str
    target: str
    right: tuple[tuple[int, ...], ...]  # len(target) sets of source positions; empty: no source ("-" of dates)
    form: str  # the date's form (FORMS); "reverse" for the reverse task


@dataclass(frozen=True)
class Task:
    """A task's alphabets and lengths; `draw` makes one example from a random.Random."""

    name: str
    source_alphabet: str
    target_alphabet: str
    min_source: int
    max_source: int
    max_target: int  # target characters, without END

    def draw(self, rng: random.Random) -> Example:
        return draw_reverse(rng) if self.name == "reverse" else draw_date(rng)

    def draw_many(self, count: int, rng: random.Random) -> list[Example]:
        """`count` examples drawn independently (the evaluation sets)."""
        return [self.draw(rng) for _ in range(count)]


def reverse_example(source: str) -> Example:
    n = len(source)
    return Example(source, source[::-1], tuple((n - 1 - t,) for t in range(n)), "reverse")


def draw_reverse(rng: random.Random, low: int = MIN_LETTERS, high: int = MAX_LETTERS) -> Example:
    """`low` to `high` letters (length uniform), each uniform over a-z."""
    n = rng.randint(low, high)
    return reverse_example("".join(rng.choice(LETTERS) for _ in range(n)))


def date_pieces(date: datetime.date, form: str) -> list[tuple[str, str]]:
    """The date in `form` as (part, text) pieces in reading order; part is year, month, day or "" (punctuation)."""
    d, m, y = str(date.day), str(date.month), str(date.year)
    name = MONTHS[date.month - 1]
    if form == "day_mon_year":
        return [("day", d), ("", " "), ("month", name[:3]), ("", " "), ("year", y)]
    if form == "day_month_year":
        return [("day", d), ("", " "), ("month", name), ("", " "), ("year", y)]
    if form == "month_day_year":
        return [("month", name), ("", " "), ("day", d), ("", ", "), ("year", y)]
    if form == "mon_day_year":
        return [("month", name[:3]), ("", " "), ("day", d), ("", ", "), ("year", y)]
    if form == "chinese":
        return [("year", y), ("", "年"), ("month", m), ("", "月"), ("day", d), ("", "日")]
    if form == "dd_mm_yy":
        return [("day", d.zfill(2)), ("", "/"), ("month", m.zfill(2)), ("", "/"), ("year", y[2:])]
    if form == "yyyy_mm_dd":
        return [("year", y), ("", "/"), ("month", m.zfill(2)), ("", "/"), ("day", d.zfill(2))]
    if form == "dotted":
        return [("day", d), ("", "."), ("month", m), ("", "."), ("year", y)]
    raise ValueError(f"unknown date form {form!r}; one of {', '.join(FORMS)}")


def date_example(date: datetime.date, form: str) -> Example:
    source, spans = "", {}
    for part, text in date_pieces(date, form):
        if part:
            spans[part] = tuple(range(len(source), len(source) + len(text)))
        source += text
    return Example(source, date.isoformat(), tuple(spans.get(part, ()) for part in ISO_PARTS), form)


def draw_date(rng: random.Random) -> Example:
    date = FIRST_DAY + datetime.timedelta(days=rng.randrange((LAST_DAY - FIRST_DAY).days + 1))
    return date_example(date, rng.choice(FORMS))


def _date_alphabet() -> str:
    texts = [text for form in FORMS for month in range(1, 13)
             for _, text in date_pieces(datetime.date(2000, month, 1), form)]
    return "".join(sorted(set("".join(texts)) | set("0123456789")))


def _date_lengths() -> tuple[int, int]:
    """The shortest and longest source over every form, month, one- or two-digit day and year of the range."""
    lengths = [len(date_example(datetime.date(2000, month, day), form).source)
               for form in FORMS for month in range(1, 13) for day in (1, 28)]
    return min(lengths), max(lengths)


TASKS: dict[str, Task] = {
    "reverse": Task("reverse", LETTERS, LETTERS, MIN_LETTERS, MAX_LETTERS, MAX_LETTERS),
    "dates": Task("dates", _date_alphabet(), "-0123456789", *_date_lengths(), ISO_LENGTH),
}


def source_ids(task: Task, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The texts as (B, S) int64 ids padded with PAD, S the longest text, and their lengths (B,) int64."""
    index = {c: i + 1 for i, c in enumerate(task.source_alphabet)}
    lengths = torch.tensor([len(t) for t in texts], dtype=torch.int64)  # (B,)
    ids = torch.full((len(texts), int(lengths.max())), PAD, dtype=torch.int64)  # (B, S)
    for row, text in enumerate(texts):
        ids[row, : len(text)] = torch.tensor([index[c] for c in text], dtype=torch.int64)
    return ids, lengths


def target_ids(task: Task, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Teacher forcing's decoder inputs START y_1 .. y_n and outputs y_1 .. y_n END, both (B, T) with T the
    longest target + 1, padded with PAD."""
    index = {c: i + SPECIALS for i, c in enumerate(task.target_alphabet)}
    width = max(len(t) for t in texts) + 1
    inputs = torch.full((len(texts), width), PAD, dtype=torch.int64)  # (B, T)
    outputs = torch.full((len(texts), width), PAD, dtype=torch.int64)  # (B, T)
    for row, text in enumerate(texts):
        ids = [index[c] for c in text]
        inputs[row, : len(ids) + 1] = torch.tensor([START, *ids], dtype=torch.int64)
        outputs[row, : len(ids) + 1] = torch.tensor([*ids, END], dtype=torch.int64)
    return inputs, outputs


def target_text(task: Task, ids: list[int]) -> str:
    """Decoded ids up to (not including) the first END; PAD and START, which the decoder should not emit, as "?"."""
    chars = []
    for i in ids:
        if i == END:
            break
        chars.append(task.target_alphabet[i - SPECIALS] if i >= SPECIALS else "?")
    return "".join(chars)
