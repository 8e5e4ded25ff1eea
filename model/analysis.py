"""Analyses of a model's attention: aggregates, head metrics and labels, norm-based contributions, edits.

Every function here is pure: tensors in, tensors out, no model and no I/O. Maps are given per layer,
one (H, N, N) tensor of softmax weights (query, key) per layer, as AttentionMaps.per_layer holds them
(a 4-D (L, H, N, N) tensor works too). Results are float32.

* `mean_over_heads`: per layer the mean of its heads' maps.
* `rollout`: attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in Transformers").
* `head_metrics` and `head_labels`: per head entropy, distance and shares of attention to kinds of key,
  and labels from thresholds stated in LABEL_RULES (in the style of Clark et al. 2019).
* `contributions`: Kobayashi et al. 2020's norms ||a_ij f_h(x_j)|| ("Attention is Not Only a Weight").
* `Edit`: a what-if change to some heads of one layer, which the encoder applies during its forward
  (model/attention.py, model/transformer.py) so that every later layer runs on the edited residual stream.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from .errors import IndexOutOfRange, RuleError
from .tokenizer import Token

Maps = Sequence[torch.Tensor] | torch.Tensor  # per layer (H, N, N), or one (L, H, N, N) tensor


def _layers(maps: Maps) -> list[torch.Tensor]:
    layers = list(maps)
    if not layers:
        raise ValueError("no layers: pass at least one (H, N, N) map stack")
    for i, m in enumerate(layers):
        if m.dim() != 3 or m.shape[-1] != m.shape[-2]:
            raise ValueError(f"layer {i}: expected an (H, N, N) stack of square maps, got shape {tuple(m.shape)}")
    return layers


# ---- aggregates ----

def mean_over_heads(maps: Maps) -> torch.Tensor:
    """(L, N, N): for each layer the mean over its heads of the attention weights."""
    return torch.stack([m.double().mean(dim=0) for m in _layers(maps)]).float()


def rollout(maps: Maps, residual: float = 0.5) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema 2020): (L, N, N), entry l the rollout up to and including layer l.

    Â_l = residual·I + (1 − residual)·mean_h A_l, each row divided by its sum (keeping the row axis, so
    row i is divided by row i's sum — the vit-explain #16 bug divided column i instead), R_0 = Â_0 and
    R_l = Â_l · R_(l−1). A row of Â that sums to 0 (residual 0 and a row without weight) stays 0.
    Computed in float64.
    """
    if not (isinstance(residual, int | float) and math.isfinite(residual) and 0.0 <= residual <= 1.0):
        raise ValueError(f"residual must be a number from 0 to 1, got {residual!r}")
    out = []
    product: torch.Tensor | None = None
    for m in _layers(maps):
        n = m.shape[-1]
        mixed = residual * torch.eye(n, dtype=torch.float64) + (1.0 - residual) * m.double().mean(dim=0)  # (N, N)
        sums = mixed.sum(dim=-1, keepdim=True)  # (N, 1): row sums
        mixed = torch.where(sums > 0, mixed / torch.where(sums > 0, sums, 1.0), 0.0)
        product = mixed if product is None else mixed @ product
        out.append(product)
    return torch.stack(out).float()


# ---- head metrics and labels ----

METRICS: tuple[str, ...] = (
    "entropy", "distance", "to_cls", "to_sep", "to_self", "to_previous", "to_next", "to_punctuation",
)
METRIC_DOCS: dict[str, str] = {
    "entropy": "mean over query rows of −Σ_j a_ij ln a_ij, in nats (0 ln 0 = 0); a uniform row has ln N",
    "distance": "mean over query rows of Σ_j a_ij·|i − j|, in tokens",
    "to_cls": "mean over query rows of the weight on the first token when it is special ([CLS])",
    "to_sep": "mean over query rows of the weight on the other special tokens ([SEP])",
    "to_self": "mean over query rows of a_ii",
    "to_previous": "mean over query rows 1..N−1 of a_i,i−1",
    "to_next": "mean over query rows 0..N−2 of a_i,i+1",
    "to_punctuation": "mean over query rows of the weight on punctuation tokens (every character Unicode P*)",
}


@dataclass(frozen=True)
class TokenKinds:
    """Which keys are [CLS], [SEP] and punctuation: three (N,) bool tensors."""

    cls: torch.Tensor
    sep: torch.Tensor
    punctuation: torch.Tensor


def is_punctuation(text: str) -> bool:
    """A token made only of Unicode punctuation (categories P*), after a WordPiece "##" prefix and without
    the spaces around it (a byte-level token's display " ,")."""
    text = text.strip()
    stem = text[2:] if text.startswith("##") and len(text) > 2 else text
    return bool(stem) and all(unicodedata.category(c).startswith("P") for c in stem)


def token_kinds(tokens: Sequence[Token]) -> TokenKinds:
    """[CLS]: the first token when the tokenizer inserted it; [SEP]: every other inserted token;
    punctuation: tokens from the text whose readable form (`display`: "##." for WordPiece, " ," for
    byte-level BPE's "Ġ,") is punctuation characters only."""
    cls = [i == 0 and t.special for i, t in enumerate(tokens)]
    sep = [i > 0 and t.special for i, t in enumerate(tokens)]
    punct = [not t.special and is_punctuation(t.display) for t in tokens]
    return TokenKinds(torch.tensor(cls, dtype=torch.bool), torch.tensor(sep, dtype=torch.bool),
                      torch.tensor(punct, dtype=torch.bool))


def head_metrics(maps: Maps, kinds: TokenKinds) -> dict[str, torch.Tensor]:
    """Per layer and head, each of METRICS (see METRIC_DOCS): a dict of (L, H) float32 tensors."""
    layers = _layers(maps)
    n = layers[0].shape[-1]
    for name, mask in (("cls", kinds.cls), ("sep", kinds.sep), ("punctuation", kinds.punctuation)):
        if mask.shape != (n,):
            raise ValueError(f"kinds.{name} has shape {tuple(mask.shape)}, expected ({n},) for {n} tokens")
    position = torch.arange(n, dtype=torch.float32)
    distance = (position[:, None] - position[None, :]).abs()  # (N, N): |i - j|
    tiny = torch.finfo(torch.float32).tiny  # 0 · log(tiny) = 0, where 0 · log 0 would be NaN
    out: dict[str, list[torch.Tensor]] = {name: [] for name in METRICS}
    # float32 throughout, the weights' own precision (row sums of at most 512 terms): float64 and
    # torch.special.entr made /metrics take 2 forwards' time at 512 tokens.
    for a in layers:  # (H, N, N)
        a = a.float()
        out["entropy"].append(-(a * a.clamp_min(tiny).log()).sum(dim=-1).mean(dim=-1))
        out["distance"].append((a * distance).sum(dim=-1).mean(dim=-1))
        out["to_cls"].append(a[:, :, kinds.cls].sum(dim=-1).mean(dim=-1))
        out["to_sep"].append(a[:, :, kinds.sep].sum(dim=-1).mean(dim=-1))
        out["to_punctuation"].append(a[:, :, kinds.punctuation].sum(dim=-1).mean(dim=-1))
        out["to_self"].append(a.diagonal(dim1=-2, dim2=-1).mean(dim=-1))
        zeros = torch.zeros(a.shape[0])
        # offset -1: entries [i + 1, i], a query's weight on the token before it; +1: [i, i + 1]
        out["to_previous"].append(a.diagonal(offset=-1, dim1=-2, dim2=-1).mean(dim=-1) if n > 1 else zeros)
        out["to_next"].append(a.diagonal(offset=1, dim1=-2, dim2=-1).mean(dim=-1) if n > 1 else zeros)
    return {name: torch.stack(values).float() for name, values in out.items()}


LABEL_SOURCE = (
    "Clark, Khandelwal, Levy and Manning (2019), \"What Does BERT Look At? An Analysis of BERT's Attention\", "
    "BlackboxNLP, section 3 (arXiv:1906.04341): heads that put most of their attention on the previous or next "
    "token, on [SEP] (over half of it in BERT's middle layers), on [CLS] or on the token itself, and heads that "
    "attend broadly (high entropy). The thresholds are attnscope's: a share of at least SHARE_THRESHOLD, and for "
    "broad an entropy of at least BROAD_FRACTION of a uniform row's, ln N."
)
SHARE_THRESHOLD = 0.5  # "most of the attention": at least half of each row's weight, on average
BROAD_FRACTION = 0.8  # broad: mean row entropy at least 80% of the uniform row's ln N

# label -> (metric, the threshold's fraction: of 1 for shares, of ln N for entropy)
LABEL_RULES: dict[str, tuple[str, float]] = {
    "broad": ("entropy", BROAD_FRACTION),
    "previous": ("to_previous", SHARE_THRESHOLD),
    "next": ("to_next", SHARE_THRESHOLD),
    "cls": ("to_cls", SHARE_THRESHOLD),
    "sep": ("to_sep", SHARE_THRESHOLD),
    "self": ("to_self", SHARE_THRESHOLD),
}


def label_thresholds(n_tokens: int) -> dict[str, tuple[str, float]]:
    """label -> (metric, the value the metric must reach) for an input of n_tokens tokens."""
    uniform = math.log(n_tokens) if n_tokens > 1 else 0.0
    return {label: (metric, fraction * uniform if metric == "entropy" else fraction)
            for label, (metric, fraction) in LABEL_RULES.items()}


def head_labels(metrics: Mapping[str, torch.Tensor], n_tokens: int) -> list[list[list[str]]]:
    """labels[layer][head]: the LABEL_RULES labels whose metric reaches its threshold, in LABEL_RULES order.

    A broad label needs at least 2 tokens (with one token every row's entropy is 0 = ln 1).
    """
    thresholds = label_thresholds(n_tokens)
    n_layers, n_heads = metrics["entropy"].shape
    labels: list[list[list[str]]] = [[[] for _ in range(n_heads)] for _ in range(n_layers)]
    for label, (metric, value) in thresholds.items():
        if label == "broad" and n_tokens < 2:
            continue
        hit = metrics[metric] >= value  # (L, H)
        for layer, head in hit.nonzero().tolist():
            labels[layer][head].append(label)
    return labels


# ---- norm-based contributions ----

def contributions(weights: torch.Tensor, values: torch.Tensor, w_o: torch.Tensor,
                  heads: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Kobayashi et al. 2020: ||a_ij f_h(x_j)|| per head, and the norm of the sum over all heads.

    weights: (H, N, N) softmax weights a_hij of one layer; values: (H, N, Dv), head h's value vectors
    x_j W_v^h + b_v^h (the trace's `split` v); w_o: (H·Dv, D), the output projection acting as x W_o, i.e.
    the transpose of nn.Linear's weight; its rows h·Dv..(h+1)·Dv − 1 are W_o^h. f_h(x_j) = v_hj W_o^h.

    Returns (per_head, layer_sum): per_head (len(heads), N, N) = a_hij·||f_h(x_j)|| for the chosen heads
    (all when None, in the order given); layer_sum (N, N) = ||Σ_h a_hij f_h(x_j)|| over every head of the
    layer, from Gram matrices G_j[h, g] = <f_h(x_j), f_g(x_j)>: ||·||² = Σ_{h,g} a_hij a_gij G_j[h, g],
    so no N×N×D tensor is made. The output bias b_o is left out, as in the paper's α f(x). float64 inside.
    """
    h, n, dv = values.shape
    if weights.shape != (h, n, n):
        raise ValueError(f"weights have shape {tuple(weights.shape)}, expected {(h, n, n)} for values {(h, n, dv)}")
    if w_o.dim() != 2 or w_o.shape[0] != h * dv:
        raise ValueError(f"w_o has shape {tuple(w_o.shape)}, expected ({h * dv}, D) for {h} heads of width {dv}")
    a = weights.double()
    per_head_w_o = w_o.double().view(h, dv, -1)  # (H, Dv, D): W_o^h
    f = values.double() @ per_head_w_o  # (H, N, D): f_h(x_j)
    norms = f.norm(dim=-1)  # (H, N): ||f_h(x_j)||
    chosen = list(range(h)) if heads is None else list(heads)
    per_head = a[chosen] * norms[chosen][:, None, :]  # (h, N, N): a_hij ||f_h(x_j)||, as a_hij >= 0
    gram = torch.einsum("hjd,gjd->jhg", f, f)  # (N, H, H)
    by_key = a.permute(2, 1, 0).contiguous()  # (N_j, N_i, H): a_{h, i, j} at [j, i, h]; contiguous for bmm (50x)
    squared = (torch.bmm(by_key, gram) * by_key).sum(dim=-1)  # (N_j, N_i): Σ_{h,g} a_hij G_j[h, g] a_gij
    layer_sum = squared.clamp_min(0.0).sqrt().T  # (N_i, N_j)
    return per_head.float(), layer_sum.float()


# ---- what-if edits ----

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
