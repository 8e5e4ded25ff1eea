"""The per-batch function of the corpus index: a batch of tokenized texts through the model, and per text every
head's metrics and strongest query -> key pairs, as a pyarrow table of one row per text ("text rows").

Both engines (the local loop in index.py and Ray Data's map_batches in ray_engine.py) call `index_batch`;
shards.py turns text rows into the index's Parquet tables.

The metrics are those of /api/v1/metrics (model/analysis/heads.py, METRIC_DOCS), computed on the padded batch at
once: padded keys have weight exactly 0 (model/checkpoints/batch.py), padded query rows are zeroed here, and each
mean divides by the text's own row count, so a text's numbers are those of heads.head_metrics on its own maps
(within float32 rounding of the summation order). Beside them `induction`, defined on texts where a token repeats
(model/analysis/circuits.py measures it on R R): the mean over queries i whose token occurred earlier (last at j)
of the weight a[i, j + 1] on the token after that occurrence; NaN (stored as null) on a text with no repeat.
`to_previous` is circuits' previous-token score on this text and `to_first` the attention sink.

Pairs: a head's K heaviest entries a[q, k] with q != k and both q and k tokens of the text, never a token the
tokenizer inserted ([CLS], [SEP]): those keys and a token's weight on itself take most of many heads' weight on
every text alike (to_cls, to_sep and to_self measure them), so keeping them would fill the pairs with the same
entries everywhere and say nothing about what the head relates in this text. Pairs of weight 0 (a causal model's
future keys) are left out too; a text with fewer allowed entries has fewer pairs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

import numpy as np
import pyarrow as pa
import torch

from model.analysis.heads import METRICS, is_punctuation
from model.checkpoints.batch import forward, pad
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.trace import StepValue, Trace

CORPUS_METRICS: tuple[str, ...] = (*METRICS, "induction")
DEFAULT_PAIRS = 5
NO_PAIR = -1  # a pair slot left empty (query and key positions)


def offered_metrics(model: LoadedModel) -> tuple[str, ...]:
    """The CORPUS_METRICS that can differ from 0 on this model: to_cls and to_sep only when its tokenizer
    inserts the special tokens they measure (GPT-2 inserts none: both were 0.0000 on every text), to_next only
    for a model that is not causal. The shards keep every column; queries offer these (the manifest's metrics)."""
    tokens = model.tokenizer.encode("a").tokens
    kept = {"to_cls": bool(tokens) and tokens[0].special, "to_sep": any(t.special for t in tokens[1:]),
            "to_next": not model.cfg.causal}
    return tuple(name for name in CORPUS_METRICS if kept.get(name, True))


@dataclass(frozen=True)
class Item:
    """One corpus text to index: its line in the corpus, the text and its tokens."""

    text_id: int
    text: str
    encoded: Encoded


def batch_maps(model: LoadedModel, encodings: Sequence[Encoded]) -> tuple[torch.Tensor, tuple[int, ...]]:
    """(B, L, H, T, T) float32 attention weights of a right-padded batch (padded query rows as the model left
    them) and each input's length."""
    batch = pad(model, encodings)
    kept: dict[int, torch.Tensor] = {}

    def keep(layer: int, step: str, weights: StepValue) -> StepValue:
        kept[layer] = cast(torch.Tensor, weights).float().cpu()  # (B, H, T, T)
        return torch.empty(0)

    forward(model, batch, Trace(steps=("softmax",), on_record=keep))
    return torch.stack([kept[i] for i in range(model.cfg.n_layers)], dim=1), batch.lengths  # (B, L, H, T, T)


def _masks(encodings: Sequence[Encoded], width: int) -> dict[str, torch.Tensor]:
    """Per text (B, T) bool: cls, sep, punctuation keys (heads.token_kinds), text tokens (not inserted), and the
    induction target (B, T) long: j + 1 for the last earlier occurrence j of query i's token, -1 where none."""
    shape = (len(encodings), width)
    cls, sep, punct, text = ([[False] * width for _ in encodings] for _ in range(4))
    target = [[-1] * width for _ in encodings]
    for row, encoded in enumerate(encodings):
        seen: dict[int, int] = {}
        for i, (token_id, token) in enumerate(zip(encoded.ids, encoded.tokens, strict=True)):
            if token.special:  # heads.token_kinds: [CLS] the first token when inserted, [SEP] every other one
                (sep if i else cls)[row][i] = True
                continue
            text[row][i] = True
            punct[row][i] = _punctuation(token.display)
            if token_id in seen:
                target[row][i] = seen[token_id] + 1
            seen[token_id] = i
    masks = {name: torch.tensor(rows, dtype=torch.bool).view(shape)
             for name, rows in (("cls", cls), ("sep", sep), ("punct", punct), ("text", text))}
    return {**masks, "target": torch.tensor(target, dtype=torch.long).view(shape)}


_PUNCTUATION: dict[str, bool] = {}


def _punctuation(display: str) -> bool:
    """heads.is_punctuation, remembered per token (a corpus repeats its tokens)."""
    if display not in _PUNCTUATION:
        if len(_PUNCTUATION) > 100_000:
            _PUNCTUATION.clear()
        _PUNCTUATION[display] = is_punctuation(display)
    return _PUNCTUATION[display]


def batch_metrics(maps: torch.Tensor, lengths: Sequence[int],
                  masks: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Each of CORPUS_METRICS per text, layer and head: (B, L, H) float32 (induction NaN where undefined).
    Zeroes `maps`' padded query rows in place."""
    b, _, _, t, _ = maps.shape
    n = torch.tensor(lengths, dtype=torch.float32)[:, None, None]  # (B, 1, 1)
    rows = (torch.arange(t)[None, :] < n.view(b, 1)).float()  # (B, T): the real query rows
    a = maps.mul_(rows[:, None, None, :, None])  # (B, L, H, T, T): padded rows zeroed, in place
    tiny = torch.finfo(torch.float32).tiny
    position = torch.arange(t, dtype=torch.float32)
    distance = (position[:, None] - position[None, :]).abs()  # (T, T)
    rest = (n - 1).clamp_min(1)  # rows 1..N-1 (or 0..N-2); 0 / 1 = 0 for one token, as heads.head_metrics answers

    received = a.sum(dim=-2)  # (B, L, H, T): each key's weight summed over the real query rows

    def share(keys: torch.Tensor) -> torch.Tensor:
        return (received * keys[:, None, None, :].float()).sum(dim=-1) / n  # (B, L, H)

    out = {
        # 0 · ln(tiny) = 0 where 0 · ln 0 would be NaN; clamp and log in one new tensor (entr took 3 times as long)
        "entropy": -(a * a.clamp_min(tiny).log_()).sum(dim=(-1, -2)) / n,
        "distance": (a.reshape(*a.shape[:3], t * t) @ distance.reshape(t * t)) / n,  # (B, L, H)
        "to_cls": share(masks["cls"]), "to_sep": share(masks["sep"]), "to_punctuation": share(masks["punct"]),
        "to_self": a.diagonal(dim1=-2, dim2=-1).sum(dim=-1) / n,
        "to_previous": a.diagonal(offset=-1, dim1=-2, dim2=-1).sum(dim=-1) / rest,
        "to_next": a.diagonal(offset=1, dim1=-2, dim2=-1).sum(dim=-1) / rest,
        "to_first": a[..., 1:, 0].sum(dim=-1) / rest,
    }
    target = masks["target"]  # (B, T)
    defined = (target >= 0).float()  # (B, T)
    index = target.clamp_min(0)[:, None, None, :, None].expand(*a.shape[:-1], 1)  # (B, L, H, T, 1)
    picked = a.gather(-1, index).squeeze(-1) * defined[:, None, None, :]  # (B, L, H, T)
    count = defined.sum(dim=-1)[:, None, None]  # (B, 1, 1)
    out["induction"] = torch.where(count > 0, picked.sum(dim=-1) / count.clamp_min(1), torch.nan)
    return {name: out[name].float() for name in CORPUS_METRICS}


def batch_pairs(maps: torch.Tensor, masks: dict[str, torch.Tensor], k: int) -> tuple[torch.Tensor, ...]:
    """Per text, layer and head the k heaviest allowed entries (module docstring): query and key positions
    (B, L, H, k) long, NO_PAIR in empty slots, and their weights (B, L, H, k), heaviest first."""
    b, n_layers, n_heads, t, _ = maps.shape
    text = masks["text"]  # (B, T)
    allowed = text[:, :, None] & text[:, None, :] & ~torch.eye(t, dtype=torch.bool)[None]  # (B, T, T)
    scores = maps.masked_fill(~allowed[:, None, None], -1.0).reshape(b, n_layers, n_heads, t * t)  # (B, L, H, T*T)
    taken = min(k, t * t)
    weight, flat = scores.topk(taken, dim=-1, sorted=True)  # (B, L, H, taken)
    empty = weight <= 0
    query = torch.where(empty, NO_PAIR, flat // t)
    key = torch.where(empty, NO_PAIR, flat % t)
    weight = torch.where(empty, 0.0, weight)
    if taken < k:
        fill = (b, n_layers, n_heads, k - taken)
        query = torch.cat([query, torch.full(fill, NO_PAIR)], dim=-1)  # (B, L, H, k)
        key = torch.cat([key, torch.full(fill, NO_PAIR)], dim=-1)
        weight = torch.cat([weight, torch.zeros(fill)], dim=-1)
    return query, key, weight


def text_rows_schema(k: int) -> pa.Schema:
    """Text rows: per metric and pair field a flat list of the text's L * H (times k for pairs) values,
    layer-major: value [layer * H + head] (pairs: [(layer * H + head) * k + rank])."""
    fields = [pa.field("text_id", pa.int64()), pa.field("text", pa.string()), pa.field("tokens", pa.list_(pa.string())),
              pa.field("n_tokens", pa.int32())]
    fields += [pa.field(name, pa.list_(pa.float32())) for name in CORPUS_METRICS]
    fields += [pa.field("pair_query", pa.list_(pa.int16())), pa.field("pair_key", pa.list_(pa.int16())),
               pa.field("pair_weight", pa.list_(pa.float32()))]
    return pa.schema(fields)


def _lists(values: np.ndarray, dtype: pa.DataType) -> pa.Array:
    """(N, M) numpy array -> a list column of N lists of M values."""
    rows, width = values.shape
    offsets = pa.array(np.arange(0, rows * width + 1, width, dtype=np.int32))
    return pa.ListArray.from_arrays(offsets, pa.array(values.reshape(-1), type=dtype))


def index_batch(model: LoadedModel, items: Sequence[Item], k: int = DEFAULT_PAIRS) -> pa.Table:
    """Text rows (text_rows_schema) for a batch of texts, in the order of `items`, from one padded forward."""
    encodings = [item.encoded for item in items]
    maps, lengths = batch_maps(model, encodings)  # (B, L, H, T, T)
    masks = _masks(encodings, maps.shape[-1])
    metrics = batch_metrics(maps, lengths, masks)
    query, key, weight = batch_pairs(maps, masks, k)
    count = len(items)
    columns: list[pa.Array] = [
        pa.array([item.text_id for item in items], type=pa.int64()),
        pa.array([item.text for item in items], type=pa.string()),
        pa.array([[token.display for token in item.encoded.tokens] for item in items], type=pa.list_(pa.string())),
        pa.array(list(lengths), type=pa.int32()),
    ]
    columns += [_lists(metrics[name].reshape(count, -1).numpy(), pa.float32()) for name in CORPUS_METRICS]
    columns += [_lists(query.reshape(count, -1).numpy().astype(np.int16), pa.int16()),
                _lists(key.reshape(count, -1).numpy().astype(np.int16), pa.int16()),
                _lists(weight.reshape(count, -1).numpy(), pa.float32())]
    return pa.Table.from_arrays(columns, schema=text_rows_schema(k))
