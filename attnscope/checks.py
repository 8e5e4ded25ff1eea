"""The Python API's arguments checked by the REST API's own request models (app/schemas), so that a method refuses
what the route refuses, with the same words: one rule, one message.

A method's arguments become the route's request body (`text`, `text_pair`, `layers`, `edit`, ...) and are validated
by that request model, strict as the REST is (a text must be a str, an index an int; a list cannot list an index
twice; a number must lie in its range). What pydantic refuses becomes a FieldError: its `loc` is the first broken
field's path without "body" (("layers",), ("edit", "temperature"), ("layers", 0)), its `type` the rule's name as the
REST answer's errors[0].type gives it, and its message the REST answer's `detail` ("layers: has duplicates; list
each index once"). Python conveniences before the check: a tuple, range or numpy array is a list, a numpy integer or
float a plain int or float. The rules that depend on the model (index ranges, token limits, answer tokens) are
model/'s own errors, raised by the same functions the routes call.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any, TypeVar

import numpy as np
from pydantic import BaseModel, ValidationError

from app.errors import validation_messages
from app.schemas.common import ChosenHeads, ChosenLayers, StrictRequest
from model.errors import InputError
from model.nets.edit import Edit

R = TypeVar("R", bound=BaseModel)

# The types whose rules say a value has the wrong type: their FieldError is a TypeError too.
TYPE_RULES = ("string_type", "int_type", "float_type", "bool_type", "list_type", "dict_type", "model_type",
              "target_type", "baseline_type", "answer_token_type", "model_attributes_type")


class FieldError(InputError):
    """An argument the REST request model refuses (the module's docstring): `what` is the REST answer's
    errors[0].msg, the message its `detail`."""

    def __init__(self, loc: tuple[str | int, ...], type_: str, what: str, detail: str) -> None:
        super().__init__(loc, detail)
        self.type = type_
        self.what = what


class FieldTypeError(FieldError, TypeError):
    """An argument of the wrong type (a number for a text): a TypeError as well as an InputError."""


def plain(value: object) -> Any:
    """Python's containers and numpy's numbers as JSON has them: tuples, ranges and arrays as lists, numpy
    scalars as int, float or bool; a Mapping as a dict; everything else as it is."""
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list | tuple | range):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    return value


def validated(request: type[R], **fields: object) -> R:
    """`fields` as the request body of a `request`, validated as the route validates it (an optional field that
    is None is left out, so that it takes its default; a required one is sent as null, and refused); FieldError
    (FieldTypeError) for what it refuses."""
    required = {name for name, field in request.model_fields.items() if field.is_required()}
    body = {name: plain(value) for name, value in fields.items() if value is not None or name in required}
    try:
        return request.model_validate(body)
    except ValidationError as exc:
        errors = exc.errors()
        messages, detail = validation_messages(errors)
        first = errors[0]
        error = FieldTypeError if first["type"] in TYPE_RULES else FieldError
        raise error(tuple(first["loc"]), str(first["type"]), messages[0], detail) from None


def edit_fields(edit: object) -> Any:
    """An edit as the REST `edit`'s fields: a model.nets.edit.Edit converted, anything else as given (the request
    model refuses what is not a dict of its fields)."""
    if not isinstance(edit, Edit):
        return edit
    fields = asdict(edit)
    probsparse = fields.pop("probsparse")
    fields["heads"] = None if edit.heads is None else list(edit.heads)
    fields["hidden_keys"] = list(edit.hidden_keys)
    if probsparse is None:
        fields.pop("seed")
        return {**fields, "kind": "weights"}
    return {**fields, "kind": "probsparse", "factor": probsparse}


class Indices(StrictRequest):
    """The `layers` and `heads` of a request, alone (attention_batch's, which has no one text)."""

    layers: ChosenLayers = None
    heads: ChosenHeads = None
