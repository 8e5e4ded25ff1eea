"""The induction-head lab's parts (model/lab/induction.py): its sequences, the two losses by their definitions,
the settings' limits, and the same numbers for the same seed. Whether the circuit forms at the defaults, and
how fast, is measured by bench/induction.py (minutes of training, not a unit test)."""

from __future__ import annotations

import math
import re

import pytest
import torch

from model.errors import LabInputError
from model.lab.induction import MIN_REPEAT, EvalReport, InductionConfig, Training, half_losses, sequences

SMALL = InductionConfig(vocab=16, length=12, heads=2, d_model=16, steps=6, batch=4, eval_every=3)


def test_evaluation_sequences_repeat_their_first_half_of_different_tokens():
    ids = sequences(SMALL, 50, torch.Generator().manual_seed(0))
    assert ids.shape == (50, 12)
    assert torch.equal(ids[:, :6], ids[:, 6:])
    assert all(len(set(row[:6].tolist())) == 6 for row in ids)
    assert ids.min() >= 0 and ids.max() < 16


def test_training_sequences_end_in_a_repeat_of_varying_length_after_other_tokens():
    ids = sequences(SMALL, 400, torch.Generator().manual_seed(1), varied=True)
    repeats, recurring = set(), 0
    for row in ids.tolist():
        n = next(n for n in range(SMALL.half, 0, -1) if row[-2 * n: -n] == row[-n:])  # the longest repeat at the end
        assert n >= MIN_REPEAT
        repeats.add(n)
        recurring += len(set(row[: len(row) - n])) < len(row) - n  # a token of the prefix and R drawn twice
    assert repeats == set(range(MIN_REPEAT, SMALL.half + 1))  # every length from MIN_REPEAT to half is drawn
    assert 0 < recurring < len(ids)  # the tokens are drawn each on its own: some rows have one twice, not all
    assert ids.min() >= 0 and ids.max() < 16


def test_the_two_losses_follow_their_definitions():
    half = 3
    ids = torch.tensor([[1, 2, 3, 1, 2, 3]])
    logits = torch.randn(1, 6, 5, generator=torch.Generator().manual_seed(0))
    log_p = torch.log_softmax(logits, dim=-1)
    # the token at position t + 1 is predicted at t; first R: tokens 1, 2; second R after its first: tokens 4, 5
    first = -(log_p[0, 0, 2] + log_p[0, 1, 3]) / 2
    repeated = -(log_p[0, 3, 2] + log_p[0, 4, 3]) / 2
    got = half_losses(logits, ids, half)
    assert torch.allclose(got[0], first) and torch.allclose(got[1], repeated)


def test_the_untrained_network_knows_nothing_and_a_seed_gives_the_same_run():
    reports = list(Training(SMALL).run())
    evals = [r for r in reports if isinstance(r, EvalReport)]
    assert [r.step for r in evals] == [0, 3, 6]
    untrained = evals[0]
    assert abs(untrained.loss_first_half - math.log(16)) < 0.5  # about ln(vocab) before training
    assert untrained.previous_token.shape == untrained.induction.shape == (2, 2)
    assert untrained.maps.shape == (2, 2, 12, 12) and untrained.tokens[:6] == untrained.tokens[6:]
    again = [r for r in Training(SMALL).run() if isinstance(r, EvalReport)]
    assert [r.loss_repeated_half for r in again] == [r.loss_repeated_half for r in evals]
    assert torch.equal(again[-1].maps, evals[-1].maps)
    other = [r for r in Training(InductionConfig(**{**SMALL.__dict__, "seed": 1})).run() if isinstance(r, EvalReport)]
    assert other[-1].loss_repeated_half != evals[-1].loss_repeated_half


@pytest.mark.parametrize(("field", "value", "words"), [
    ("steps", 0, "steps is 0; send 1 to 20000"),
    ("length", 13, "length is 13; send even"),
    ("d_model", 18, "d_model is 18; send a multiple of heads (4)"),
    ("lr", 0.5, "lr is 0.5; send above 0, at most 0.1"),
])
def test_settings_outside_their_limits_are_refused(field, value, words):
    with pytest.raises(LabInputError, match=re.escape(words)) as caught:
        InductionConfig(**{"heads": 4, field: value})
    assert caught.value.loc == (field,) and caught.value.type == "lab_setting"


def test_the_evaluation_repeat_must_fit_in_the_vocab():
    words = "length 40 needs 20 different tokens; the vocab has 16"
    with pytest.raises(LabInputError, match=re.escape(words)) as caught:
        InductionConfig(vocab=16, length=40)
    assert caught.value.loc == ("length",)
    InductionConfig(vocab=16, length=32)  # R of 16 different tokens
