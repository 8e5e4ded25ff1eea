"""Per-head metrics of attention and the labels they earn.

`head_metrics`: per head the entropy, the distance and the shares of attention to kinds of key, from
the maps of every layer (Maps: model/analysis/aggregate.py); `head_labels`: labels from thresholds stated
in LABEL_RULES (in the style of Clark et al. 2019). Pure: tensors in, tensors out.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from model.analysis.aggregate import Maps, per_layer
from model.checkpoints.tokenizer import Token

METRICS: tuple[str, ...] = (
    "entropy", "distance", "to_cls", "to_sep", "to_self", "to_previous", "to_next", "to_punctuation", "to_first",
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
    "to_first": "mean over query rows 1..N−1 of a_i,0, the weight on the first token whatever it is: decoders put "
                "much of their attention there, an attention sink (Xiao et al. 2023)",
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
    layers = per_layer(maps)
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
        # row 0 left out: under a causal mask its only key is the first token, whatever the head does
        out["to_first"].append(a[:, 1:, 0].mean(dim=-1) if n > 1 else zeros)
    return {name: torch.stack(values).float() for name, values in out.items()}


# The study the labels follow, as a citation (its title in its own language); what the labels mean and
# their thresholds, which are attnscope's own, are in `label_thresholds` and the rules' words.
LABEL_SOURCE = (
    "Clark, Khandelwal, Levy and Manning (2019), \"What Does BERT Look At? An Analysis of BERT's Attention\", "
    "BlackboxNLP, section 3 (arXiv:1906.04341)"
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
    "sink": ("to_first", SHARE_THRESHOLD),
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
