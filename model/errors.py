"""Domain errors: inputs the models cannot take, each naming the field to change.

The web layer maps them to HTTP answers in one place (app/errors.py). A field
path (`loc`) is a path into the request, without the web layer's "body" prefix:
("queries", "1", "2") is row 1, column 2 of the toy's queries.
"""

from __future__ import annotations

from collections.abc import Sequence


class InputError(ValueError):
    """An input a model cannot take; `loc` names the field, the message says what to change.

    `type` is a stable, machine-readable name of the broken rule (clients branch on it, never on prose).
    """

    type = "invalid_input"

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc: tuple[str, ...] = tuple(str(part) for part in loc)
        self.message = message


class ToyShapeError(InputError):
    """A toy matrix or setting that does not fit the others (sizes, n_heads, limits)."""

    type = "toy_shape"


class IndexOutOfRange(InputError):
    """A layer or head index outside the model's range."""

    type = "index_out_of_range"

    def __init__(self, loc: Sequence[str | int], what: str, bad: Sequence[int], count: int) -> None:
        super().__init__(loc, f"{what} {list(bad)} out of range; this model has {what} 0..{count - 1}")
        self.bad = list(bad)
        self.count = count


class PairNotSupported(InputError):
    """A second segment sent to a model that takes one text."""

    type = "pair_not_supported"

    def __init__(self, model_id: str) -> None:
        super().__init__(("text_pair",), f"Model {model_id!r} takes one text; remove text_pair")
        self.model_id = model_id


class UnknownModel(LookupError):
    """A model id that this server does not have; names the ids that exist."""

    type = "unknown_model"

    def __init__(self, model_id: str, known: Sequence[str]) -> None:
        self.model_id = model_id
        self.known = sorted(known)
        self.message = f"Unknown model {model_id!r}; use one of: {', '.join(self.known)}"
        super().__init__(self.message)


def checked_indices(chosen: Sequence[int] | None, count: int, what: str) -> list[int]:
    """A list field of indices (`what` = "layers" or "heads"): None means all of 0..count-1,
    otherwise every index must lie in that range; the error's loc is the first bad entry."""
    if chosen is None:
        return list(range(count))
    bad = [i for i in chosen if not 0 <= i < count]
    if bad:
        raise IndexOutOfRange((what, list(chosen).index(bad[0])), what, bad, count)
    return list(chosen)


def checked_index(index: int, count: int, what: str, field: str) -> int:
    """One index field (e.g. `layer`) in 0..count-1; `what` names the range in the message."""
    if not 0 <= index < count:
        raise IndexOutOfRange((field,), what, [index], count)
    return index
