"""The logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"): what each layer's residual stream
would predict as the next token if the model stopped there.

The residual stream after the embeddings and after each block goes through the model's own unembedding
(Transformer.unembed: the final LayerNorm, then the tied word embeddings), a softmax over the vocabulary and a
top-k at one position. After the last block this is the model's own next-token distribution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from model.errors import IndexOutOfRange, InputError
from model.nets.transformer import Transformer
from model.trace import widen

DEFAULT_TOP_K = 5
MAX_TOP_K = 20
EMBEDDINGS = "embeddings"  # the layer name of the stream before the first block


class NoLMHead(InputError):
    """A model without a language-model head (an encoder): nothing to unembed with, for the logit lens or
    generation (`need`)."""

    type = "no_lm_head"

    def __init__(self, model_id: str, with_head: Sequence[str], need: str = "the logit lens",
                 usable: str | None = None) -> None:
        """`usable`: what to do instead, when not choosing among a server's models (the Python API)."""
        if usable is None:
            usable = f"use one of: {', '.join(sorted(with_head))}" if with_head else (
                "this server has none; serve a decoder such as GPT-2 (attnscope serve --model PATH)")
        super().__init__(("model",), f"Model {model_id!r} has no LM head, which {need} needs; {usable}")
        self.model_id = model_id
        self.with_head = sorted(with_head)


class PositionOutOfRange(IndexOutOfRange):
    """A token position outside the input (the range is the input's, not the model's)."""

    def __init__(self, position: int, tokens: int) -> None:
        InputError.__init__(self, ("position",), f"position {position} is out of range; this input has positions "
                            f"0..{tokens - 1} (its {tokens} tokens)")
        self.bad = [position]
        self.count = tokens
        self.ctx = {"position": position, "tokens": tokens}


def checked_position(position: int | None, tokens: int) -> int:
    """The position to read: the last token when None, else an index below the input's token count."""
    if position is None:
        return tokens - 1
    if not 0 <= position < tokens:
        raise PositionOutOfRange(position, tokens)
    return position


@dataclass(frozen=True)
class LensLayer:
    """One layer's top-k next-token predictions at the chosen position, most probable first."""

    layer: str | int  # "embeddings" or the block's index 0..L-1
    ids: torch.Tensor  # (k,) int64
    probabilities: torch.Tensor  # (k,) float32, softmax over the whole vocabulary
    logits: torch.Tensor  # (k,) float32


@torch.inference_mode()
def residual_streams(decoder: Transformer, ids: torch.Tensor) -> torch.Tensor:
    """The residual stream after the embeddings and after each block: (L + 1, B, T, D).

    The blocks run as in Transformer.forward (causal mask with its window, no trace, no edit); the final
    LayerNorm is not applied."""
    t = ids.shape[1]
    if t > decoder.cfg.max_positions:
        raise ValueError(f"{t} tokens exceed the model's limit of {decoder.cfg.max_positions}")
    masks = decoder.layer_masks(t, ids.device)  # causal, with the window in the local layers
    x: torch.Tensor = decoder.embeddings(ids, torch.zeros_like(ids))  # (B, T, D)
    streams = [x]
    for block, mask in zip(decoder.blocks, masks, strict=True):
        x = block(x, mask=mask, mask_keeps_a_key=True)  # (B, T, D): a causal mask, no padding
        streams.append(x)
    return torch.stack(streams)  # (L + 1, B, T, D)


@torch.inference_mode()
def logit_lens(decoder: Transformer, ids: Sequence[int], position: int, top_k: int = DEFAULT_TOP_K) -> list[LensLayer]:
    """Per layer (embeddings first), the top-k of softmax(unembed(residual)) at `position` of one input."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"top_k {top_k} is outside 1..{MAX_TOP_K}")
    if not 0 <= position < len(ids):
        raise PositionOutOfRange(position, len(ids))
    device = decoder.embeddings.word.weight.device
    streams = residual_streams(decoder, torch.tensor([list(ids)], device=device))  # (L + 1, 1, T, D)
    logits = widen(decoder.unembed(streams[:, 0, position]))  # (L + 1, V), float32 for a bfloat16 network too
    probabilities = torch.softmax(logits, dim=-1)  # (L + 1, V)
    top = torch.topk(probabilities, min(top_k, logits.shape[-1]), dim=-1)  # (L + 1, k) each
    ids_k, probabilities_k = top.indices.cpu(), top.values.cpu()  # (L + 1, k): answers come back on the CPU
    logits_k = logits.gather(-1, top.indices).cpu()  # (L + 1, k)
    names: list[str | int] = [EMBEDDINGS, *range(len(decoder.blocks))]
    return [LensLayer(name, ids_k[i], probabilities_k[i], logits_k[i]) for i, name in enumerate(names)]


