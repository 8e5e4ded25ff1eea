"""What a what-if edit (model/nets/edit.py) changes: the model run with and without it on one input.

For each layer from the edited one on, each head's change of its weights: per query row the total variation
½ Σ_j |a'_ij − a_ij| (0: the row is unchanged, 1: it moved all its weight elsewhere; a causal ProbSparse lazy
row, which sums V rather than averaging it, can go beyond 1), its mean and its largest over the rows. Then the
final hidden state (after the final norm, when the model has one): per token ‖h'_t − h_t‖ / ‖h_t‖ and over
the whole input ‖H' − H‖ / ‖H‖ (Frobenius). For a model with an LM head, the next-token distribution at the
last position: the Kullback–Leibler divergence KL(p ‖ p') in nats and the most probable token before and after.
For a ProbSparse edit, what it chose in each edited head: every query's sparsity measure M and the active
queries (model/nets/sparse.py), from the layer's own q and k, which the edit leaves as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch

from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.nets import sparse
from model.nets.edit import Edit
from model.trace import Trace


@dataclass(frozen=True)
class NextToken:
    """The next-token distribution at the last position, without (p) and with (p') the edit."""

    kl: float  # KL(p ‖ p') in nats
    before: int  # argmax p
    after: int  # argmax p'
    before_probability: float  # p(before)
    after_probability: float  # p'(after)
    before_probability_after: float  # p'(before): what the edit left of the unedited choice


@dataclass(frozen=True)
class ProbSparseChoice:
    """heads: the edited heads; measure (h, N): each query's M; active (h, u): the active queries, ascending."""

    heads: list[int]
    measure: torch.Tensor
    active: torch.Tensor


@dataclass(frozen=True)
class EditEffect:
    layers: list[int]  # the edited layer and every later one
    row_change_mean: torch.Tensor  # (len(layers), H): mean over query rows of ½ Σ_j |Δa_ij|
    row_change_max: torch.Tensor  # (len(layers), H): the largest row's
    hidden_by_token: torch.Tensor  # (N,): ‖h'_t − h_t‖ / ‖h_t‖
    hidden_relative: float  # ‖H' − H‖_F / ‖H‖_F
    next_token: NextToken | None  # a model with an LM head only
    probsparse: ProbSparseChoice | None  # a ProbSparse edit only


def _run(model: LoadedModel, encoded: Encoded, layers: list[int], edit: Edit | None,
         split_at: int | None = None) -> tuple[list[torch.Tensor], torch.Tensor, Trace]:
    steps = ("softmax",) if split_at is None else ("split", "softmax")
    trace = Trace(layers=layers, steps=steps)
    hidden = model.run(encoded, trace, edit)[0]  # (N, D)
    return [trace.tensor(layer, "softmax")[0] for layer in layers], hidden, trace  # each (H, N, N)


def _next_token(model: LoadedModel, hidden: torch.Tensor, edited: torch.Tensor) -> NextToken:
    with torch.inference_mode():
        net = model.decoder
        both = torch.stack([hidden[-1], edited[-1]]).to(model.device)  # (2, D): the last position's final states
        logits = net.logits(both.to(next(net.parameters()).dtype)).float().cpu()  # (2, V)
    log_p = torch.log_softmax(logits.double(), dim=-1)  # (2, V)
    p = log_p.exp()
    kl = float((p[0] * (log_p[0] - log_p[1])).sum())
    before, after = int(p[0].argmax()), int(p[1].argmax())
    return NextToken(kl, before, after, float(p[0, before]), float(p[1, after]), float(p[1, before]))


def edit_effect(model: LoadedModel, encoded: Encoded, edit: Edit) -> EditEffect:
    """The model on `encoded` without and with `edit` (its indices checked by the forward), compared."""
    layers = list(range(edit.layer, model.cfg.n_layers))
    plain, hidden, trace = _run(model, encoded, layers, None, split_at=edit.layer)
    edited, hidden_edited, _ = _run(model, encoded, layers, edit)
    change = torch.stack([0.5 * (b.double() - a.double()).abs().sum(dim=-1) for a, b in zip(plain, edited,
                                                                                             strict=True)])  # (l, H, N)
    difference = (hidden_edited.double() - hidden.double())
    by_token = torch.linalg.vector_norm(difference, dim=-1) / torch.linalg.vector_norm(hidden.double(), dim=-1)
    relative = float(torch.linalg.vector_norm(difference) / torch.linalg.vector_norm(hidden.double()))
    choice = None
    if edit.probsparse is not None:
        split = cast(dict[str, torch.Tensor], trace[edit.layer]["split"])
        heads = edit.head_index(model.cfg.n_heads)
        _, measure, active = sparse.choose(split["q"][:, heads], split["k"][:, heads], edit.probsparse, edit.seed)
        choice = ProbSparseChoice(heads, measure[0].float(), active[0])
    return EditEffect(layers, change.mean(dim=-1).float(), change.amax(dim=-1).float(), by_token.float(), relative,
                      _next_token(model, hidden, hidden_edited) if model.lm_head else None, choice)
