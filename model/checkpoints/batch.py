"""Many inputs in few forwards: sorted by length, padded to each batch's longest, the padding masked.

Each batch is padded on the right to its longest input. A key-padding mask (the Transformer's `padding`)
adds -inf to the padded keys' scores before the softmax, so they get weight exactly 0 and every real
token's numbers are those of the input run alone; the padded queries' rows are dropped from the answer
(each input's maps are cropped to its own T x T). Right padding keeps every real token's position
(learned positions count 0, 1, ... from the left; GPT-2's causal mask then hides the padding too).
RoBERTa's positions count only non-padding ids from padding_idx + 1 (CheckpointEmbeddings.positions),
so its padding is its pad id; other models pad with id 0, which only the masked rows see. Segments
follow each model's `run`: token types as tokenized, or all 0 when the checkpoint does not use them
(LoadedModel.uses_segments False: RoBERTa, DistilBERT); a network without token types ignores them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import torch

from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.trace import StepValue, Trace, widen

DEFAULT_BATCH_SIZE = 8


@dataclass(frozen=True)
class Padded:
    """One batch as tensors: ids and segments (B, T) padded on the right, `padding` (B, T) True at the
    padding (None when every input has the batch's length), and each input's own length."""

    ids: torch.Tensor
    segments: torch.Tensor
    padding: torch.Tensor | None
    lengths: tuple[int, ...]


def pad_id(model: LoadedModel) -> int:
    """The id a batch is padded with: the embeddings' padding_idx (RoBERTa's pad id), else 0."""
    padding_idx = getattr(model.net.embeddings, "padding_idx", None)
    return 0 if padding_idx is None else int(padding_idx)


def pad(model: LoadedModel, encodings: Sequence[Encoded]) -> Padded:
    """The inputs as one right-padded batch, on the model's device."""
    if not encodings:
        raise ValueError("a batch needs at least one input")
    lengths = tuple(len(e) for e in encodings)
    if min(lengths) == 0:
        raise ValueError("an input without tokens cannot be run")
    width = max(lengths)
    ids = torch.full((len(encodings), width), pad_id(model), dtype=torch.long)  # (B, T)
    segments = torch.zeros((len(encodings), width), dtype=torch.long)  # (B, T)
    for row, encoded in enumerate(encodings):
        ids[row, : len(encoded)] = torch.tensor(encoded.ids)
        if model.uses_segments:
            segments[row, : len(encoded)] = torch.tensor(encoded.segments)
    padding = torch.arange(width)[None, :] >= torch.tensor(lengths)[:, None]  # (B, T)
    device = model.device
    return Padded(ids.to(device), segments.to(device), padding.to(device) if padding.any() else None, lengths)


def forward(model: LoadedModel, batch: Padded, trace: Trace | None = None) -> torch.Tensor:
    """The last hidden state of a padded batch (B, T, D) on the CPU; rows past an input's length are padding."""
    hidden: torch.Tensor = model.net(batch.ids, batch.segments, trace=trace, padding=batch.padding)
    return widen(hidden).cpu()


def batches(lengths: Sequence[int], batch_size: int = DEFAULT_BATCH_SIZE) -> list[list[int]]:
    """Input indices grouped for batching: sorted by length, longest first (ties in input order), then cut
    into groups of `batch_size`, so that each batch pads its inputs to a similar length."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, not {batch_size}")
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def iter_attention_maps(
    model: LoadedModel, encodings: Sequence[Encoded], layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
) -> Iterator[list[tuple[int, torch.Tensor]]]:
    """The attention weights of every input, one batch at a time (longest inputs first).

    Yields, per batch, (index into `encodings`, maps) pairs; maps is float32 (len(layers), len(heads), T, T)
    on the CPU, T that input's own token count, layers and heads in the order given (None: all). Indices
    are not checked here (model/errors.checked_indices does it for requests)."""
    cfg = model.cfg
    chosen_layers = list(range(cfg.n_layers)) if layers is None else list(layers)
    chosen_heads = None if heads is None or list(heads) == list(range(cfg.n_heads)) else torch.tensor(list(heads))
    for group in batches([len(e) for e in encodings], batch_size):
        batch = pad(model, [encodings[i] for i in group])
        kept: dict[int, list[torch.Tensor]] = {}

        def keep(layer: int, step: str, weights: StepValue, batch: Padded = batch,
                 kept: dict[int, list[torch.Tensor]] = kept) -> StepValue:
            block = cast(torch.Tensor, weights)  # (B, H, T, T): the softmax step records one tensor
            if chosen_heads is not None:
                block = block[:, chosen_heads]
            # each input's own T x T, copied so that the batch's block is freed with its layer
            kept[layer] = [block[row, :, :n, :n].clone() for row, n in enumerate(batch.lengths)]
            return torch.empty(0)

        forward(model, batch, Trace(layers=set(chosen_layers), steps=("softmax",), on_record=keep))
        yield [(index, torch.stack([kept[layer][row] for layer in chosen_layers]))
               for row, index in enumerate(group)]


def attention_maps(
    model: LoadedModel, encodings: Sequence[Encoded], layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
    on_batch: Callable[[int], None] | None = None,
) -> list[torch.Tensor]:
    """Every input's float32 (len(layers), len(heads), T, T) maps, in the order of `encodings`, computed in
    batches of `batch_size`; `on_batch(done)` is called after each batch with the count of inputs done."""
    out: list[torch.Tensor | None] = [None] * len(encodings)
    done = 0
    for results in iter_attention_maps(model, encodings, layers, heads, batch_size):
        for index, maps in results:
            out[index] = maps
        done += len(results)
        if on_batch is not None:
            on_batch(done)
    return [m for m in out if m is not None]
