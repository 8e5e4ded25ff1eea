"""The analyses of model/analysis run on a loaded model and one input: each function runs the forward it
needs (only the steps it reads traced) and returns its answer as a dataclass of tensors and plain values,
so that a caller (the web layer, the Python API) only asks and serializes.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from model.analysis import aggregate as aggregates
from model.analysis import circuits, heads, lens
from model.analysis.contributions import contributions as norm_contributions
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.trace import Trace, widen


def aggregate(model: LoadedModel, encoded: Encoded, kind: str, residual: float) -> torch.Tensor:
    """(L, N, N): per layer the mean over heads (`kind` "mean"), or attention rollout ("rollout")."""
    maps = model.attention_maps(encoded).per_layer
    return aggregates.rollout(maps, residual) if kind == "rollout" else aggregates.mean_over_heads(maps)


@dataclass(frozen=True)
class Threshold:
    """The rule a head label stands on: `metric` at least `at_least` (for this input's token count)."""

    metric: str
    at_least: float
    rule: str  # in words


@dataclass(frozen=True)
class Repeated:
    """The previous-token and induction scores (L, H) of every head (model/analysis/circuits.py) on R R: `ids`
    the whole input (the template's special tokens around R R), R from position `start`, `half` tokens long,
    drawn with `seed` from the vocabulary's ids that are not added tokens."""

    ids: list[int]
    start: int
    half: int
    seed: int
    scores: dict[str, torch.Tensor]


@dataclass(frozen=True)
class HeadMetrics:
    """Every head's metrics (name -> (L, H) float32), its labels [layer][head] and the rules behind them, and
    its scores on a repeated random sequence."""

    metrics: dict[str, torch.Tensor]
    labels: list[list[list[str]]]
    thresholds: dict[str, Threshold]
    definitions: dict[str, str]
    source: str
    repeated: Repeated


def _rule(label: str, metric: str, value: float) -> str:
    if metric == "entropy":
        return (f"{label}: mean row entropy ≥ {heads.BROAD_FRACTION:g} · ln N = {value:.4g} nats "
                "(a uniform row has ln N)")
    return f"{label}: {metric} ≥ {value:g} (at least that share of each row's attention, on average)"


def head_metrics(model: LoadedModel, encoded: Encoded) -> HeadMetrics:
    values = heads.head_metrics(model.attention_maps(encoded).per_layer, heads.token_kinds(encoded.tokens))
    n = len(encoded)
    thresholds = {label: Threshold(metric, value, _rule(label, metric, value))
                  for label, (metric, value) in heads.label_thresholds(n).items()}
    return HeadMetrics(values, heads.head_labels(values, n), thresholds, dict(heads.METRIC_DOCS), heads.LABEL_SOURCE,
                       repeated(model))


_REPEATED: weakref.WeakKeyDictionary[LoadedModel, Repeated] = weakref.WeakKeyDictionary()


def repeated(model: LoadedModel, seed: int = circuits.REPEAT_SEED) -> Repeated:
    """The model's previous-token and induction scores on R R (circuits.repeated_tokens) between its template's
    special tokens; R has REPEAT_HALF tokens, or fewer when the model's limit or vocabulary takes fewer. The
    default seed's answer is the same for every request: measured once per loaded model."""
    if seed == circuits.REPEAT_SEED and model in _REPEATED:
        return _REPEATED[model]
    before, after = model.tokenizer.around()
    candidates = model.tokenizer.plain_ids()
    room = (model.tokenizer.max_tokens - len(before) - len(after)) // 2
    half = min(circuits.REPEAT_HALF, room, len(candidates))
    ids = [*before, *circuits.repeated_tokens(candidates, half, seed), *after]
    encoded = Encoded(ids, [0] * len(ids), [])
    maps = model.attention_maps(encoded).per_layer
    start = len(before)
    scores = {"previous_token": circuits.previous_token_scores(maps, start, half),
              "induction": circuits.induction_scores(maps, start, half)}
    answer = Repeated(ids, start, half, seed, scores)
    if seed == circuits.REPEAT_SEED:
        _REPEATED[model] = answer
    return answer


@dataclass(frozen=True)
class Contributions:
    """per_head (layers, heads, N, N): ||a_hij f_h(x_j)||; layer_sum (layers, N, N): ||Σ_h a_hij f_h(x_j)||."""

    per_head: torch.Tensor
    layer_sum: torch.Tensor


def contributions(model: LoadedModel, encoded: Encoded, layers: list[int], chosen: list[int]) -> Contributions:
    """Norm-based contributions (model/analysis/contributions.py) of the chosen layers and heads."""
    trace = Trace(layers=layers, steps=("split", "softmax"))
    model.run(encoded, trace)
    per_head, sums = [], []
    for layer in layers:
        split = trace[layer]["split"]
        assert isinstance(split, dict)
        w_o = widen(model.net.block(layer).attention.output.weight.detach()).T.cpu()  # (H·Dv, D): x W_o
        ph, total = norm_contributions(trace.tensor(layer, "softmax")[0], split["v"][0], w_o, chosen)
        per_head.append(ph)
        sums.append(total)
    return Contributions(torch.stack(per_head), torch.stack(sums))


@dataclass(frozen=True)
class Prediction:
    """One next-token prediction of the lens: the vocabulary id, the tokenizer's token and its display."""

    id: int
    token: str
    display: str
    probability: float
    logit: float


@dataclass(frozen=True)
class LensLayer:
    layer: str | int  # "embeddings" or the block's index 0..L-1
    predictions: list[Prediction]  # most probable first


def logit_lens(model: LoadedModel, encoded: Encoded, position: int, top_k: int) -> list[LensLayer]:
    """The logit lens at `position` (model/analysis/lens.py) with each prediction's token text; the model
    must have an LM head (LoadedModel.decoder raises TypeError otherwise)."""
    answer = []
    for layer in lens.logit_lens(model.decoder, encoded.ids, position, top_k):
        predictions = []
        for token_id, probability, logit in zip(layer.ids.tolist(), layer.probabilities.tolist(),
                                                layer.logits.tolist(), strict=True):
            token, display = model.tokenizer.token_text(int(token_id))
            predictions.append(Prediction(int(token_id), token, display, probability, logit))
        answer.append(LensLayer(layer.layer, predictions))
    return answer
