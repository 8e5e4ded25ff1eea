"""Which heads of a freshly trained small GPT became previous-token, induction-like or positional heads.

Previous-token and induction scores are the served models' own (model/analysis/study.py `repeated`, on a repeated
random sequence R R of the model's characters: model/analysis/circuits.py says how each is measured).

A positional head attends by position, whatever the characters are: its weights depend on the offset q − k (or
on the absolute position), not on the tokens. Measured on POSITIONAL_TEXTS random texts of the model's characters
(drawn from POSITIONAL_SEED), each POSITIONAL_LENGTH characters long (or the model's context when shorter): for
each head and query i ≥ 1 (row 0 has one key under the causal mask), the total-variation distance
½ Σ_j |a_s[i, j] − ā[i, j]| between the row on text s and the mean row over the texts; the score is 1 minus its
mean over texts and queries. 1: the same weights on every text (the head reads positions only); a head that
looks for particular characters moves its weight with them and scores lower. A previous-token head is positional
too (offset −1), and so is a head that spreads its weight evenly over the keys before it.
"""

from __future__ import annotations

import torch

from model.analysis import study
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded

POSITIONAL_TEXTS = 8
POSITIONAL_LENGTH = 64
POSITIONAL_SEED = 0
# A head earns a role when its score reaches the threshold: most of each row's weight (previous-token), a good
# share of it on the token to copy (induction), weights that hardly move with the characters (positional).
THRESHOLDS = {"previous_token": 0.5, "induction": 0.3, "positional": 0.9}


def positional_scores(model: LoadedModel) -> torch.Tensor:
    """(L, H): each head's positional score (module docstring)."""
    candidates = [i for i in model.tokenizer.plain_ids() if i != 0] or model.tokenizer.plain_ids()  # not [UNK]
    length = max(2, min(POSITIONAL_LENGTH, model.tokenizer.max_tokens))
    generator = torch.Generator().manual_seed(POSITIONAL_SEED)
    drawn = torch.randint(len(candidates), (POSITIONAL_TEXTS, length), generator=generator)  # (S, T)
    rows = []
    for text in drawn.tolist():
        ids = [candidates[i] for i in text]
        layers = model.attention_maps(Encoded(ids, [0] * len(ids), [])).per_layer
        rows.append(torch.stack([layer.float() for layer in layers]))  # (L, H, T, T)
    weights = torch.stack(rows)  # (S, L, H, T, T)
    mean = weights.mean(dim=0, keepdim=True)  # (1, L, H, T, T)
    distance = 0.5 * (weights - mean).abs().sum(dim=-1)  # (S, L, H, T): total variation per row
    scores: torch.Tensor = 1.0 - distance[..., 1:].mean(dim=(0, 3))  # (L, H)
    return scores


def head_roles(model: LoadedModel) -> list[dict[str, object]]:
    """One entry per head, layer by layer: its three scores and the roles whose thresholds they reach."""
    repeated = study.repeated(model)
    scores = {"previous_token": repeated.scores["previous_token"], "induction": repeated.scores["induction"],
              "positional": positional_scores(model)}
    n_layers, n_heads = scores["positional"].shape
    heads = []
    for layer in range(n_layers):
        for head in range(n_heads):
            values = {name: round(float(score[layer, head]), 4) for name, score in scores.items()}
            roles = [name for name, value in values.items() if value >= THRESHOLDS[name]]
            heads.append({"layer": layer, "head": head, **values, "roles": roles})
    return heads
