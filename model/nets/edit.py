"""`Edit`: a what-if change to some heads of one layer, an input of the forward.

The networks apply it inside their forward (model/nets/attention.py: temperature, hidden keys, ablation),
so that every later layer runs on the edited residual stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from model.errors import IndexOutOfRange, RuleError

MIN_TEMPERATURE = 0.01
MAX_TEMPERATURE = 100.0

# An edit's rules beside index_out_of_range (layer, heads): error type -> (its ctx keys, what breaks it).
EDIT_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "edit_temperature": (("min", "max"), "a temperature that is not a finite number from min to max"),
    "edit_hidden_key": (("key", "tokens"), "a hidden key index outside 0..tokens-1 (the input's tokens)"),
    "edit_duplicates": ((), "a head or hidden key listed twice"),
}


class EditError(RuleError):
    """An edit the model cannot apply; `type` is one of EDIT_RULES, `loc` the field under `edit`."""

    rules = EDIT_RULES


@dataclass(frozen=True)
class Edit:
    """A what-if change to one layer's attention, carried through every later layer.

    layer: the layer to edit; heads: the heads edited (None: every head); temperature: divides those heads'
    scaled scores before the softmax (1 keeps them); hidden_keys: token indices hidden from every query of
    those heads (their scores become −inf; a row with every key hidden gets zero weights); ablate: those
    heads' weighted sum (softmax @ V) is zeroed, so they add nothing to the layer's output — their weights
    are still computed and recorded. Temperature 1, no hidden keys and no ablation change nothing: the
    forward is exactly the unedited one. Construction checks what needs no model (ranges, duplicates);
    `check` checks the indices against a model and an input.
    """

    layer: int
    heads: tuple[int, ...] | None = None
    temperature: float = 1.0
    hidden_keys: tuple[int, ...] = ()
    ablate: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.layer, bool) or not isinstance(self.layer, int) or self.layer < 0:
            raise ValueError(f"layer must be an index of at least 0, got {self.layer!r}")
        for field, items in (("heads", self.heads or ()), ("hidden_keys", self.hidden_keys)):
            if any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in items):
                raise ValueError(f"{field} must be indices of at least 0, got {list(items)}")
            if len(set(items)) != len(items):
                raise EditError("edit_duplicates", ("edit", field), f"{field} {list(items)} lists an index twice")
        if self.heads is not None and not self.heads:
            raise ValueError("heads must name at least one head, or be None for every head")
        t = self.temperature
        if (isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t)
                or not MIN_TEMPERATURE <= t <= MAX_TEMPERATURE):
            raise EditError("edit_temperature", ("edit", "temperature"),
                            f"temperature {t!r} is not a finite number from {MIN_TEMPERATURE:g} to "
                            f"{MAX_TEMPERATURE:g}", min=MIN_TEMPERATURE, max=MAX_TEMPERATURE)

    def check(self, n_layers: int, n_heads: int, n_tokens: int) -> None:
        """Raise a domain error (loc under "edit") when the layer, a head or a hidden key is out of range."""
        if self.layer >= n_layers:
            raise IndexOutOfRange(("edit", "layer"), "layers", [self.layer], n_layers)
        bad = [h for h in self.heads or () if h >= n_heads]
        if bad and self.heads is not None:
            raise IndexOutOfRange(("edit", "heads", self.heads.index(bad[0])), "heads", bad, n_heads)
        for i, key in enumerate(self.hidden_keys):
            if key >= n_tokens:
                raise EditError("edit_hidden_key", ("edit", "hidden_keys", i),
                                f"hidden key {key} is out of range; this input has tokens 0..{n_tokens - 1}",
                                key=key, tokens=n_tokens)

    def head_index(self, n_heads: int) -> list[int]:
        """The edited heads as a list (every head when heads is None)."""
        return list(range(n_heads)) if self.heads is None else list(self.heads)

    @property
    def changes_nothing(self) -> bool:
        return self.temperature == 1.0 and not self.hidden_keys and not self.ablate
