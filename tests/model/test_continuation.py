"""Attribution of a continuation (model/analysis/continuation.py) against integrated gradients written here with
torch autograd on transformers' GPT2LMHeadModel on the test GPT-2 (tests/checkpoints.py), fed `inputs_embeds`:
each row is the log-probability of one continuation token, the quadrature numpy's Gauss–Legendre rule, the baseline
the mean of the word table's rows; the greedy continuation is transformers' own `generate`."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis import continuation
from model.analysis.attribution import StepsError
from model.analysis.baselines import BaselineError
from model.errors import InputError

TEXT = "Hello world, attention is"
STEPS = 64  # the test GPT-2 keeps completeness under 1e-5 from 64 nodes on (attribution.py's measurements)
TOLERANCE = 1e-4


def reference_row(reference, ids: list[int], prompt: int, j: int, steps: int) -> tuple[np.ndarray, float]:
    """IG of log p(ids[prompt + j] | ids[:prompt + j]) over the word embeddings of ids[:prompt + j], from the mean
    of the word table, in float64; and f(x) − f(baseline)."""
    model = reference.double()
    table = model.transformer.wte.weight.detach()  # (V, D)
    before = ids[:prompt + j]
    x = table[before]  # (T, D)
    b = table.mean(dim=0).expand_as(x)  # (T, D)

    def f(words: torch.Tensor) -> torch.Tensor:
        logits = model(inputs_embeds=words).logits[:, -1]  # (S, V)
        return torch.log_softmax(logits, dim=-1)[:, ids[prompt + j]]  # (S,)

    nodes, weights = np.polynomial.legendre.leggauss(steps)
    alphas = torch.tensor((nodes + 1) / 2, dtype=torch.float64)
    path = (b + alphas[:, None, None] * (x - b)).requires_grad_(True)  # (S, T, D)
    (grads,) = torch.autograd.grad(f(path).sum(), path)
    integral = torch.einsum("s,std->td", torch.tensor(weights / 2), grads)
    with torch.no_grad():
        difference = float(f(x[None]) - f(b[None]))
    return ((x - b) * integral).sum(-1).numpy(), difference


def test_each_row_equals_integrated_gradients_on_gpt2_lm_head_model(gpt2, gpt2_reference):
    encoded = gpt2.tokenizer.encode(TEXT)
    p = len(encoded)
    found = continuation.attribute_continuation(gpt2, encoded, new_tokens=4, steps=STEPS)
    with torch.no_grad():
        greedy = gpt2_reference.generate(torch.tensor([encoded.ids]), max_new_tokens=4, do_sample=False,
                                         pad_token_id=0)[0].tolist()
    assert found.generated and list(found.ids) == greedy and found.prompt == p
    assert [row.index for row in found.rows] == [p, p + 1, p + 2, p + 3]
    reference = gpt2_reference.double()
    for j, row in enumerate(found.rows):
        expected, difference = reference_row(reference, list(found.ids), p, j, STEPS)
        assert len(row.scores) == p + j
        assert np.abs(np.array(row.scores) - expected).max() <= TOLERANCE
        assert row.completeness.difference == pytest.approx(difference, abs=1e-4)
        assert abs(sum(row.scores) - difference) <= 0.05 * abs(difference) and row.completeness.ok
        assert row.warning is None
        with torch.no_grad():
            logits = reference(torch.tensor([list(found.ids[:p + j])])).logits[0, -1]
        assert row.output == pytest.approx(float(torch.log_softmax(logits, -1)[found.ids[p + j]]), abs=1e-4)
    matrix = found.matrix()
    assert matrix.shape == (4, p + 3) and np.isnan(matrix[0, p:]).all() and not np.isnan(matrix[3]).any()
    # a control that must fail: the next token's log-probability is not the row's
    wrong, _ = reference_row(reference, [*found.ids[:p + 1], (found.ids[p + 1] + 1) % gpt2.cfg.vocab_size], p, 1,
                             STEPS)
    assert np.abs(np.array(found.rows[1].scores) - wrong).max() > TOLERANCE


def test_given_ids_are_attributed_as_sent(gpt2, gpt2_reference):
    encoded = gpt2.tokenizer.encode(TEXT)
    ids = [5, 17]
    found = continuation.attribute_continuation(gpt2, encoded, ids=ids, steps=STEPS)
    assert not found.generated and list(found.ids) == [*encoded.ids, *ids]
    expected, _ = reference_row(gpt2_reference, list(found.ids), len(encoded), 1, STEPS)
    assert np.abs(np.array(found.rows[1].scores) - expected).max() <= TOLERANCE


@pytest.mark.parametrize("kwargs, error, kind", [
    ({"ids": [10 ** 6]}, continuation.ContinuationError, "continuation_out_of_range"),
    ({"new_tokens": 64}, continuation.ContinuationError, "continuation_too_long"),
    ({"ids": [1], "steps": 8}, StepsError, "steps_out_of_range"),
    ({"ids": [1], "baseline": "pad"}, BaselineError, "baseline_unavailable"),
])
def test_refusals_name_the_rule(gpt2, kwargs, error, kind):
    with pytest.raises(error) as raised:
        continuation.attribute_continuation(gpt2, gpt2.tokenizer.encode(TEXT), **kwargs)
    assert isinstance(raised.value, InputError) and raised.value.type == kind


def test_an_encoder_and_a_double_request_are_refused(minilm, gpt2):
    with pytest.raises(TypeError):
        continuation.attribute_continuation(minilm, minilm.tokenizer.encode(TEXT), new_tokens=1)
    with pytest.raises(ValueError):
        continuation.attribute_continuation(gpt2, gpt2.tokenizer.encode(TEXT), ids=[1], new_tokens=1)
