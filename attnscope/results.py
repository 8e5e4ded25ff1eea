"""The Python API's answers about the maps: typed, frozen dataclasses of numpy arrays, each with `save(path)`.

Every result names its `model` (the id) and carries the input's `tokens` (model.checkpoints.tokenizer.Token) and
`ids`; its arrays have the shapes documented on each class (L layers, H heads, T tokens). A result takes part in
saving (attnscope/save.py) through two methods: `_arrays()`, every array by name, and `_meta()`, a JSON-able dict
with "kind", "model", "text", "tokens" (display strings) and the settings that made it. The answers about outputs
(the lens, edits' effects, patching, attribution, direct logit attribution) are in attnscope/results_causal.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from model.checkpoints.tokenizer import Token


class Result:
    """What every result shares: `save(path)` (".npz" or ".parquet", attnscope/save.py) and the two methods
    saving reads."""

    def _arrays(self) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def _meta(self) -> dict[str, Any]:
        raise NotImplementedError

    def save(self, path: str | Path) -> Path:
        """This result alone into `path` (its suffix picks the format); returns the path written."""
        from .save import save
        return save([self], path)


def displays(tokens: list[Token]) -> list[str]:
    """The tokens as the pages show them (their `display`)."""
    return [t.display for t in tokens]


@dataclass(frozen=True)
class Attention(Result):
    """The attention weights of one input.

    `maps` is float32 of shape (len(layers), len(heads), T, T): maps[i, j, q, k] is the weight that query
    token q gives key token k in head heads[j] of layer layers[i]; each row sums to 1 (for a causal model
    the entries above the diagonal are 0). `layers` and `heads` are the model's indices in the order asked
    for. `tokens` are the T tokens (model.checkpoints.tokenizer.Token: `text` as the tokenizer spells it, `display`
    readable text, `start`/`end` code-point offsets into its segment's text or None for inserted tokens,
    `special`, `segment` 0 for text and 1 for pair, `unknown`), `ids` their vocabulary ids. `edit`: the what-if
    edit the maps were made with (the REST `edit`'s fields), None for the model as it is."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    maps: np.ndarray
    layers: list[int]
    heads: list[int]
    model: str
    edit: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def map(self, layer: int, head: int) -> np.ndarray:
        """The (T, T) map of the model's layer `layer`, head `head` (indices of the model, not of `maps`)."""
        if layer not in self.layers or head not in self.heads:
            raise KeyError(f"layer {layer}, head {head} is not in this answer (layers {self.layers}, "
                           f"heads {self.heads})")
        block: np.ndarray = self.maps[self.layers.index(layer), self.heads.index(head)]
        return block

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"maps": self.maps, "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "attention", "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": displays(self.tokens), "layers": self.layers, "heads": self.heads, "edit": self.edit}


@dataclass(frozen=True)
class Aggregate(Result):
    """One (T, T) map per layer: `maps` float32 (L, T, T), maps[l] belonging to layer l. `kind` "mean": the mean
    over the layer's heads of the attention weights; "rollout" (Abnar & Zuidema 2020): Â_l = residual·I +
    (1 − residual)·mean_h A_l with each row divided by its sum, R_0 = Â_0, R_l = Â_l·R_(l−1), maps[l] = R_l.
    `residual` is None for "mean"."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    kind: str
    residual: float | None
    maps: np.ndarray
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"maps": self.maps, "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": self.kind, "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": displays(self.tokens), "residual": self.residual}


@dataclass(frozen=True)
class Threshold:
    """The rule a head label stands on: `metric` at least `at_least` (for this input's token count), in words."""

    metric: str
    at_least: float
    rule: str


@dataclass(frozen=True)
class HeadMetrics(Result):
    """Every head's metrics on one input: `metrics` name -> float32 (L, H) (entropy, distance, to_cls, to_sep,
    to_self, to_previous, to_next, to_punctuation, to_first; `definitions` says how each is computed), `labels`
    [layer][head] the labels (broad, previous, next, cls, sep, self, sink) whose `thresholds` the head reaches, and
    `source`, the study the labels follow."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    metrics: dict[str, np.ndarray]
    labels: list[list[list[str]]]
    thresholds: dict[str, Threshold]
    definitions: dict[str, str]
    source: str
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {**self.metrics, "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "metrics", "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": displays(self.tokens), "labels": self.labels,
                "thresholds": {k: {"metric": t.metric, "at_least": t.at_least, "rule": t.rule}
                               for k, t in self.thresholds.items()}}


@dataclass(frozen=True)
class Detectors(Result):
    """Each head's previous-token and induction scores, float32 (L, H), measured on a repeated random sequence
    R R (model/analysis/circuits.py): `ids` the whole input (the tokenizer's special tokens around R R), R from
    position `start`, `half` tokens long, drawn with `seed` from the vocabulary's ids that are not added tokens;
    `tokens` their display strings. `definitions` says how each score is computed."""

    ids: list[int]
    tokens: list[str]
    start: int
    half: int
    seed: int
    previous_token: np.ndarray
    induction: np.ndarray
    definitions: dict[str, str]
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"previous_token": self.previous_token, "induction": self.induction,
                "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "detect", "model": self.model, "text": None, "tokens": self.tokens, "start": self.start,
                "half": self.half, "seed": self.seed}


@dataclass(frozen=True)
class Contributions(Result):
    """Norm-based contributions (Kobayashi et al. 2020): `contributions` float32 (len(layers), len(heads), T, T),
    ||a_ij f_h(x_j)|| = a_ij·||(x_j W_v^h + b_v^h) W_o^h||, what key j adds to query i's output through head h;
    `layer_sum` float32 (len(layers), T, T), ||Σ_h a_hij f_h(x_j)|| over every head of the layer."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    layers: list[int]
    heads: list[int]
    contributions: np.ndarray
    layer_sum: np.ndarray
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"contributions": self.contributions, "layer_sum": self.layer_sum,
                "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "contributions", "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": displays(self.tokens), "layers": self.layers, "heads": self.heads}
