"""Previous-token heads and induction heads, read off the attention maps of a sequence that repeats.

An induction head completes a pattern seen before: at a token that occurred earlier in the input, it
attends to the token that came right after that earlier occurrence (whose value it copies forward, as the
guess for what comes next). It needs a previous-token head in an earlier layer, which attends from each
token to the one before it and so writes "the token before me" into every position; the induction head's
query (the current token) then matches the key of the position whose previous token it is.

Both are measured on R R: a half R of `half` different tokens drawn at random, then R again, so that every
token of the second half has exactly one earlier occurrence, at `half` positions back. The sequence may
sit between special tokens (BERT's [CLS] … [SEP], a decoder's BOS): `start` is the position of R's first
token. Pure: maps in, (L, H) scores out; the lab that trains these heads and /api/v1/metrics for the
served models share them.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from model.analysis.aggregate import Maps, per_layer

REPEAT_SEED = 0  # the draw of R for the served models' scores: the same sequence on every request
REPEAT_HALF = 24  # tokens in R, unless the model's limit or vocabulary takes fewer

SCORE_DOCS: dict[str, str] = {
    "previous_token": "mean over the tokens of R R after the first of the weight on the token right before it",
    "induction": "mean over the second R of the weight on the token right after the same token's earlier "
                 "occurrence (at i − half + 1)",
}


def repeated_tokens(candidates: Sequence[int], half: int, seed: int) -> list[int]:
    """R R: `half` different tokens of `candidates`, drawn with torch.Generator().manual_seed(seed), twice."""
    if not 1 <= half <= len(candidates):
        raise ValueError(f"half {half} is outside 1..{len(candidates)} (the candidates)")
    order = torch.randperm(len(candidates), generator=torch.Generator().manual_seed(seed))[:half]
    drawn = [candidates[i] for i in order.tolist()]
    return drawn + drawn


def _check(n: int, start: int, half: int) -> None:
    if half < 1 or start < 0 or start + 2 * half > n:
        raise ValueError(f"R R of half {half} from position {start} does not fit in {n} tokens")


def previous_token_scores(maps: Maps, start: int, half: int) -> torch.Tensor:
    """(L, H): each head's mean weight a[i, i − 1] over the queries i of R R after its first token."""
    layers = per_layer(maps)
    _check(layers[0].shape[-1], start, half)
    rows = torch.arange(start + 1, start + 2 * half)  # (2·half − 1,)
    return torch.stack([a.float()[:, rows, rows - 1].mean(dim=-1) for a in layers])


def induction_scores(maps: Maps, start: int, half: int) -> torch.Tensor:
    """(L, H): each head's mean weight a[i, i − half + 1] over the queries i of the second R: the token that
    followed the earlier occurrence of token i."""
    layers = per_layer(maps)
    _check(layers[0].shape[-1], start, half)
    rows = torch.arange(start + half, start + 2 * half)  # (half,)
    return torch.stack([a.float()[:, rows, rows - half + 1].mean(dim=-1) for a in layers])
