"""Domain errors: inputs the models cannot take, each naming the field to change.

The web layer maps them to HTTP answers in one place (app/errors.py). A field
path (`loc`) is a path into the request, without the web layer's "body" prefix:
("queries", "1", "2") is row 1, column 2 of the toy's queries.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Ctx = dict[str, int | float | str]  # an error's numbers and names, e.g. {"values": 3, "keys": 4}


class InputError(ValueError):
    """An input a model cannot take; `loc` names the field, the message says what to change.

    `type` is a stable, machine-readable name of the broken rule (clients branch on it, never on prose).
    """

    type = "invalid_input"
    ctx: Ctx | None = None  # the rule's numbers, for rules that state them

    def __init__(self, loc: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.loc: tuple[str, ...] = tuple(str(part) for part in loc)
        self.message = message


class RuleError(InputError):
    """An input that breaks one of a table of named rules (`rules`: type -> (its ctx keys, what breaks it)).

    `ctx` must hold exactly that rule's numbers, so a client can word the problem itself. `loc` is the
    field's path, or one field name.
    """

    rules: Mapping[str, tuple[tuple[str, ...], str]] = {}

    def __init__(self, type_: str, loc: Sequence[str | int] | str, message: str, **ctx: int | float | str) -> None:
        keys, _ = self.rules[type_]
        if set(ctx) != set(keys):
            raise TypeError(f"{type_} carries ctx {sorted(keys)}, not {sorted(ctx)}")
        super().__init__((loc,) if isinstance(loc, str) else loc, message)
        self.type = type_
        self.ctx = dict(ctx)


# The toy's rules: error type -> (the ctx keys its error carries, what breaks it). The /toy route
# documents this table; a field named in `loc` (the matrix, row or cell) is not repeated in ctx.
TOY_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "toy_no_queries": ((), "keys or values sent without queries"),
    "toy_empty": ((), "a matrix without rows or numbers"),
    "toy_ragged": (("cols", "first_cols"), "a row not as long as the matrix's first row"),
    "toy_size": (("rows", "cols", "max"), "a matrix over max x max"),
    "toy_not_finite": ((), "a cell that is not a finite number"),
    "toy_magnitude": (("max",), "a cell over max in magnitude"),
    "toy_columns": (("cols", "d_model"), "keys or values whose width is not d_model (the queries' width)"),
    "toy_value_rows": (("values", "keys"), "values and keys differ in rows"),
    "toy_odd_d_model": (("d_model",), "an odd d_model without n_heads (the default, 2, does not divide it)"),
    "toy_heads_divide": (("n_heads", "d_model"), "n_heads does not divide d_model"),
    "toy_weight_name": (("name",), "a weight other than q, k, v and o"),
    "toy_weight_shape": (("rows", "cols", "d_model"), "a weight that is not d_model x d_model"),
    "toy_weight_widths": (("rows", "cols", "want_rows", "want_cols"),
                          "a weight whose shape does not fit d_keys or d_values (W_q, W_k: d_model x n_heads*d_keys, "
                          "W_v: d_model x n_heads*d_values, W_o: n_heads*d_values x d_model)"),
    "toy_head_width": (("width", "n_heads", "max"), "n_heads x d_keys or n_heads x d_values over max"),
    "toy_variant": (("variant",), "a variant other than scaled_dot, dot, additive, hard, sample, gumbel, linear, "
                    "probsparse, general and cosine"),
    "toy_linear_alibi": ((), "the linear variant with ALiBi positions (a bias would make its kernel scores negative)"),
    "toy_positions": (("positions",), "positions other than none, sinusoidal, rope and alibi"),
    "toy_temperature": (("temperature", "min"), "a temperature that is not a finite number of at least min"),
    "toy_seed_range": (("seed", "max"), "a seed below 0 or over max"),
    "toy_straight_through": (("variant",), "straight_through with a variant other than gumbel"),
    "toy_additive_variant": (("variant",), "additive parameters with a variant other than additive"),
    "toy_additive_shape": (("shape", "want"), "additive parameters whose shape is not w_q, w_k: n_heads x d_keys x "
                           "d_attn and v: n_heads x d_attn (d_attn: w_q's last axis)"),
    "toy_additive_width": (("width", "n_heads", "max"), "additive parameters with n_heads x d_attn over max"),
    "toy_factor_range": (("factor", "max"), "a ProbSparse factor c below 1 or over max"),
    "toy_factor_variant": (("variant",), "a factor with a variant other than probsparse"),
    "toy_probsparse_short": (("queries", "keys"), "probsparse with fewer than 2 queries or keys (⌈ln 1⌉ = 0 samples)"),
    "toy_probsparse_hidden": ((), "probsparse with hidden keys (its lazy rows take every value)"),
    "toy_probsparse_causal": (("queries", "keys"), "causal probsparse with keys not as many as queries (the "
                              "cumulative sum of V)"),
    "toy_scale_variant": (("variant",), "a scale with a variant other than cosine"),
    "toy_scale_range": (("scale", "max"), "a cosine scale that is not a number above 0 and at most max"),
    "toy_tau_range": (("tau", "min", "max"), "a de-stationary tau outside min..max"),
    "toy_delta_length": (("count", "keys"), "a delta list whose length is not the number of keys"),
    "toy_delta_number": (("max",), "a delta that is not a finite number of magnitude at most max"),
    "toy_linear_delta": ((), "the linear variant with a negative delta (its kernel scores must stay positive)"),
    "toy_hidden_key": (("key", "keys"), "a hidden key index outside 0..keys-1"),
    "toy_sinusoidal_odd": (("d_model",), "sinusoidal positions with an odd d_model (sin and cos columns pair up)"),
    "toy_rope_odd": (("d_keys",), "RoPE with an odd d_keys (it rotates pairs of dimensions)"),
}


# The backward pass's own rules (POST /api/v1/toy/backward), beside the toy's; same form as TOY_RULES.
BACKWARD_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "toy_upstream_shape": (("rows", "cols", "want_rows", "want_cols"),
                           "an upstream gradient whose shape is not the output's: queries' rows x d_model"),
}


# FlashAttention's tiles (POST /api/v1/flash), beside the toy's rules (its request is the toy's).
FLASH_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "flash_block": (("value", "max"), "a block size (block_rows, block_cols) outside 1..max"),
    "flash_head": (("head", "n_heads"), "a head outside 0..n_heads-1"),
    "flash_upstream_shape": (("rows", "cols"), "an upstream gradient that is not the head's output shape, rows x cols"),
}


class ToyShapeError(RuleError):
    """A toy matrix or setting that does not fit the others (sizes, n_heads, limits).

    `type` is one of TOY_RULES (or BACKWARD_RULES, FLASH_RULES); `ctx` holds that rule's numbers (e.g.
    {"values": 3, "keys": 4}).
    """

    rules = {**TOY_RULES, **BACKWARD_RULES, **FLASH_RULES}


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

    def __init__(self, model_id: str, known: Sequence[str], hint: str = "") -> None:
        self.model_id = model_id
        self.known = sorted(known)
        self.message = f"Unknown model {model_id!r}; use one of: {', '.join(self.known)}" + (f" {hint}" if hint else "")
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


# The Iris transformer's rules (model/lab/iris.py): error type -> (the ctx keys its error carries, what breaks it).
IRIS_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "iris_setting": (("min", "max"), "a training setting outside its range (the field is in loc)"),
    "iris_optimizer": (("optimizer",), "an optimizer other than sgd and adam"),
    "iris_features": (("count",), "features that are not 4 numbers (sepal length and width, petal length and width)"),
    "iris_feature_range": (("min", "max"), "a measurement that is not a finite number of centimetres from min to max"),
}


class IrisInputError(RuleError):
    """A training setting or a flower's measurements the Iris transformer cannot take.

    `type` is one of IRIS_RULES; `ctx` holds that rule's numbers, e.g. {"min": 1, "max": 2000} for epochs.
    """

    rules = IRIS_RULES


LAB_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "lab_setting": (("min", "max"), "a training lab's setting outside its range (the field is in loc)"),
}


class LabInputError(RuleError):
    """A setting a training lab (model/lab/induction.py) cannot take; `type` is one of LAB_RULES."""

    rules = LAB_RULES


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or corrupt; the message names the file."""


class DeviceError(ValueError):
    """A device the models cannot run on here; the message says which to use."""


class Stopped(Exception):
    """Model work given a `stop` callable ended early because it returned True (its client left)."""
