"""Previous-token and induction scores (model/analysis/circuits.py): on maps built here whose answers are known,
and on the served models' repeated sequence against transformers' own maps, the scores written out with
loops over the definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from model.analysis import circuits, study
from model.checkpoints import load
from model.checkpoints.registry import minilm_dir


def scores_by_loops(maps: np.ndarray, start: int, half: int) -> tuple[np.ndarray, np.ndarray]:
    """The two definitions written out: (L, H) previous-token and induction scores of (L, H, T, T) maps."""
    layers, heads = maps.shape[:2]
    previous, induction = np.zeros((layers, heads)), np.zeros((layers, heads))
    for layer in range(layers):
        for head in range(heads):
            a = maps[layer, head]
            previous[layer, head] = np.mean([a[i, i - 1] for i in range(start + 1, start + 2 * half)])
            # the second R: token i equals token i - half; what followed that earlier one is at i - half + 1
            induction[layer, head] = np.mean([a[i, i - half + 1] for i in range(start + half, start + 2 * half)])
    return previous, induction


def test_heads_built_to_be_previous_token_and_induction_heads_score_one():
    start, half = 1, 5
    n = start + 2 * half + 1  # a [CLS] before R R and a [SEP] after it
    maps = torch.full((1, 3, n, n), 1.0 / n)  # head 2: uniform
    maps[0, :2] = 0
    for i in range(n):
        maps[0, 0, i, max(i - 1, 0)] = 1  # head 0: the token before
        maps[0, 1, i, i - half + 1 if i >= start + half else i] = 1  # head 1: induction in the second R
    previous = circuits.previous_token_scores(maps, start, half)
    induction = circuits.induction_scores(maps, start, half)
    assert previous[0, 0] == 1 and induction[0, 1] == 1
    assert previous[0, 1] == 0 and induction[0, 0] == 0  # neither does the other's job (half > 2)
    assert previous[0, 2] == pytest.approx(1 / n) and induction[0, 2] == pytest.approx(1 / n)
    want = scores_by_loops(maps.numpy(), start, half)
    assert np.allclose(previous.numpy(), want[0]) and np.allclose(induction.numpy(), want[1])
    with pytest.raises(ValueError, match="does not fit in 12 tokens"):
        circuits.induction_scores(maps, start, half + 1)


def test_the_repeated_sequence_is_seeded_and_repeats_different_tokens():
    candidates = list(range(100, 150))
    drawn = circuits.repeated_tokens(candidates, 10, seed=3)
    assert drawn == circuits.repeated_tokens(candidates, 10, seed=3) != circuits.repeated_tokens(candidates, 10, 4)
    assert drawn[:10] == drawn[10:] and len(set(drawn[:10])) == 10 and set(drawn) <= set(candidates)
    with pytest.raises(ValueError, match="half 51 is outside 1..50"):
        circuits.repeated_tokens(candidates, 51, seed=0)


def test_minilms_scores_equal_the_definitions_on_transformers_maps():
    model = load("minilm")
    answer = study.repeated(model)
    tokenizer = model.tokenizer
    assert (answer.start, answer.half, answer.seed) == (1, circuits.REPEAT_HALF, circuits.REPEAT_SEED)
    cls, sep = tokenizer.around()
    assert answer.ids == [*cls, *circuits.repeated_tokens(tokenizer.plain_ids(), answer.half, 0), *sep]
    assert not {*cls, *sep} & set(answer.ids[1:-1])  # R holds no special token
    reference = transformers.BertModel.from_pretrained(str(minilm_dir()), attn_implementation="eager",
                                                       add_pooling_layer=False).eval()
    with torch.no_grad():
        out = reference(torch.tensor([answer.ids]), output_attentions=True)
    maps = np.stack([a[0].numpy() for a in out.attentions]).astype(np.float64)  # (L, H, T, T)
    previous, induction = scores_by_loops(maps, answer.start, answer.half)
    assert np.abs(answer.scores["previous_token"].numpy() - previous).max() <= 1e-5
    assert np.abs(answer.scores["induction"].numpy() - induction).max() <= 1e-5
    assert previous.max() > 0.9  # MiniLM has a previous-token head (layer 0) …
    assert induction.max() < 0.1  # … and no induction head


def test_the_repeated_scores_are_measured_once_per_model():
    model = load("minilm")
    first = study.repeated(model)
    assert study.repeated(model) is first  # the default seed: the same answer for every request
    other = study.repeated(model, seed=1)
    assert other.ids != first.ids and study.repeated(model, seed=1) is not other  # another seed is measured anew
    assert study.repeated(load("minilm")) is not first  # another loaded model has its own
