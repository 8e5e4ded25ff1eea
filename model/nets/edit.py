"""`Edit`: a what-if change to some heads of one layer, an input of the forward.

The networks apply it inside their forward (model/nets/attention.py: temperature, hidden keys, ablation, or
Informer's ProbSparse), so that every later layer runs on the edited residual stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from model.errors import IndexOutOfRange, RuleError

MIN_TEMPERATURE = 0.01
MAX_TEMPERATURE = 100.0
MAX_FACTOR = 64  # ProbSparse's c: u = c·⌈ln T⌉ active queries, every query from T ≈ e^(T / c) on
MAX_SEED = 2**31 - 1

# An edit's rules beside index_out_of_range (layer, heads): error type -> (its ctx keys, what breaks it).
EDIT_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "edit_temperature": (("min", "max"), "a temperature that is not a finite number from min to max"),
    "edit_hidden_key": (("key", "tokens"), "a hidden key index outside 0..tokens-1 (the input's tokens)"),
    "edit_duplicates": ((), "a head or hidden key listed twice"),
    "edit_factor": (("min", "max"), "a ProbSparse factor that is not a whole number from min to max"),
    "edit_probsparse_alone": ((), "a ProbSparse edit with a temperature other than 1, hidden keys or ablation"),
    "edit_probsparse_short": (("tokens",), "a ProbSparse edit of an input of fewer than 2 tokens"),
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
    are still computed and recorded. probsparse: Informer's ProbSparse factor c, or None; with it, those heads
    keep the softmax rows of their u = c·⌈ln T⌉ queries of largest sparsity measure M and give every other
    query the mean of V (under a causal mask the cumulative sum of V, as Informer's source does), the keys
    for M sampled from `seed` (model/nets/sparse.py); it takes no temperature, hidden keys or ablation.
    Temperature 1, no hidden keys, no ablation and no ProbSparse change nothing: the forward is exactly the
    unedited one. Construction checks what needs no model (ranges, duplicates);
    `check` checks the indices against a model and an input.
    """

    layer: int
    heads: tuple[int, ...] | None = None
    temperature: float = 1.0
    hidden_keys: tuple[int, ...] = ()
    ablate: bool = False
    probsparse: int | None = None
    seed: int = 0

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
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed must be a whole number from 0 to {MAX_SEED}, got {self.seed!r}")
        c = self.probsparse
        if c is None:
            return
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_FACTOR:
            raise EditError("edit_factor", ("edit", "factor"),
                            f"factor {c!r} is not a whole number from 1 to {MAX_FACTOR}", min=1, max=MAX_FACTOR)
        if t != 1.0 or self.hidden_keys or self.ablate:
            field = "temperature" if t != 1.0 else "hidden_keys" if self.hidden_keys else "ablate"
            raise EditError("edit_probsparse_alone", ("edit", field),
                            f"a ProbSparse edit replaces the chosen heads' weights: leave {field} at its default "
                            "or send another kind of edit")

    def check(self, n_layers: int, n_heads: int, n_tokens: int) -> None:
        """Raise a domain error (loc under "edit") when the layer, a head or a hidden key is out of range, or for
        ProbSparse on fewer than 2 tokens (it samples c·⌈ln T⌉ keys, and ⌈ln 1⌉ = 0)."""
        if self.probsparse is not None and n_tokens < 2:
            raise EditError("edit_probsparse_short", ("edit", "factor"),
                            f"ProbSparse samples c·⌈ln T⌉ keys and ⌈ln 1⌉ = 0: send a text of at least 2 tokens, "
                            f"not {n_tokens}", tokens=n_tokens)
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
        return self.temperature == 1.0 and not self.hidden_keys and not self.ablate and self.probsparse is None
