"""Attribution beside attention (model/analysis/attribution.py) against references written here with torch
autograd on transformers' own models: BertModel on the packaged MiniLM files (f: the cosine similarity of the
mean-pooled last hidden state to a second text's) and GPT2LMHeadModel on a test GPT-2 (f: one next-token logit
at the last position), both fed `inputs_embeds`. The quadrature's nodes and weights come from numpy's
Gauss–Legendre rule; the rank correlations from a numpy rank correlation written here and scipy's."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import scipy.stats
import torch

from model.analysis import attribution
from model.errors import InputError, Stopped

TEXT = "The cat sat on the mat because it was warm."
TARGET_TEXT = "A dog lay on a rug."
GPT2_TEXT = "Hello world, attention is all you need."
GPT2_TARGET = 100
TOLERANCE = 1e-4  # relative to the largest attribution's size


def bert_f(reference, ids: list[int], target_ids: list[int]):
    """f(word embeddings (S, T, D)) -> (S,) with transformers' BertModel."""
    with torch.no_grad():
        pooled_target = reference(torch.tensor([target_ids])).last_hidden_state[0].mean(dim=0)  # (D,)

    def f(words: torch.Tensor) -> torch.Tensor:
        types = torch.zeros(words.shape[:2], dtype=torch.long)
        hidden = reference(inputs_embeds=words, token_type_ids=types).last_hidden_state  # (S, T, D)
        return torch.nn.functional.cosine_similarity(hidden.mean(dim=1), pooled_target[None], dim=-1)
    return f


def gpt2_f(reference, target: int):
    def f(words: torch.Tensor) -> torch.Tensor:
        return reference(inputs_embeds=words).logits[:, -1, target]  # (S,)
    return f


def reference_attributions(f, x: torch.Tensor, b: torch.Tensor, steps: int) -> tuple[np.ndarray, np.ndarray, float]:
    """gradient × input, integrated gradients (Gauss–Legendre on [0, 1]) and f(x) − f(b), by autograd."""
    x, b = x.detach().double(), b.detach().double()
    nodes, weights = np.polynomial.legendre.leggauss(steps)
    alphas = torch.tensor((nodes + 1) / 2)
    path = (b + alphas[:, None, None] * (x - b)).float().requires_grad_(True)  # (S, T, D)
    (grads,) = torch.autograd.grad(f(path).sum(), path)
    integral = torch.einsum("s,std->td", torch.tensor(weights / 2), grads.double())
    ig = ((x - b) * integral).sum(-1).numpy()
    at_x = x.float().requires_grad_(True)[None]
    (grad_x,) = torch.autograd.grad(f(at_x).sum(), at_x)
    gxi = (grad_x[0].double() * x).sum(-1).numpy()
    with torch.no_grad():
        difference = float(f(x.float()[None]) - f(b.float()[None]))
    return gxi, ig, difference


def relative_gap(ours: tuple[float, ...], expected: np.ndarray) -> float:
    return float(np.abs(np.array(ours) - expected).max()) / float(np.abs(expected).max())


def close(ours: tuple[float, ...], expected: np.ndarray) -> bool:
    return relative_gap(ours, expected) <= TOLERANCE


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values given the mean of the ranks they span."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[order[j + 1]] == values[order[i]]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def rank_correlation(a, b) -> float:
    ra, rb = average_ranks(np.asarray(a, dtype=float)), average_ranks(np.asarray(b, dtype=float))
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / np.sqrt((ra ** 2).sum() * (rb ** 2).sum()))


def test_minilm_equals_autograd_on_bert_model(minilm, bert_reference):
    encoded = minilm.tokenizer.encode(TEXT)
    target = minilm.tokenizer.encode(TARGET_TEXT)
    steps = attribution.DEFAULT_STEPS
    ig = attribution.attribute(minilm, encoded, TARGET_TEXT, "integrated_gradients", steps, baseline="pad")
    gxi = attribution.attribute(minilm, encoded, TARGET_TEXT, "gradient_x_input")
    pad = minilm.tokenizer.encode("[PAD]").ids[1]  # the typed added token
    assert (ig.baseline, ig.baseline_token, pad) == ("pad", 0, 0)
    table = bert_reference.embeddings.word_embeddings.weight
    x, b = table[encoded.ids], table[[pad] * len(encoded)]
    f = bert_f(bert_reference, encoded.ids, target.ids)
    ref_gxi, ref_ig, difference = reference_attributions(f, x, b, steps)
    assert close(gxi.scores, ref_gxi) and close(ig.scores, ref_ig)
    with torch.no_grad():
        assert ig.output == pytest.approx(float(f(x[None])), abs=1e-5)
    assert ig.completeness is not None and gxi.completeness is None
    assert ig.completeness.difference == pytest.approx(difference, abs=1e-5)
    assert ig.completeness.relative_gap <= 0.01 and ig.completeness.ok  # completeness at the default steps
    assert abs(sum(ref_ig) - difference) <= 0.01 * abs(difference)  # the reference's own
    # controls that must fail: a perturbed weight, and the wrong target text
    perturbed = copy.deepcopy(bert_reference)
    with torch.no_grad():
        perturbed.encoder.layer[3].attention.output.dense.weight.mul_(1.01)
    wrong_weight = reference_attributions(bert_f(perturbed, encoded.ids, target.ids), x, b, steps)[1]
    wrong_target = reference_attributions(bert_f(bert_reference, encoded.ids, encoded.ids), x, b, steps)[1]
    assert not close(ig.scores, wrong_weight) and not close(ig.scores, wrong_target)


def test_gpt2_equals_autograd_on_gpt2_lm_head_model(gpt2, gpt2_reference):
    encoded = gpt2.tokenizer.encode(GPT2_TEXT)
    steps = attribution.DEFAULT_STEPS
    ig = attribution.attribute(gpt2, encoded, GPT2_TARGET, "integrated_gradients", steps, baseline="zeros")
    gxi = attribution.attribute(gpt2, encoded, GPT2_TARGET, "gradient_x_input")
    assert (ig.baseline, ig.baseline_token, ig.rows, ig.output_name) == ("zeros", None, "last", "logit")
    x = gpt2_reference.transformer.wte.weight[encoded.ids]
    f = gpt2_f(gpt2_reference, GPT2_TARGET)
    ref_gxi, ref_ig, difference = reference_attributions(f, x, torch.zeros_like(x), steps)
    assert close(gxi.scores, ref_gxi) and close(ig.scores, ref_ig)
    assert ig.completeness is not None
    assert ig.completeness.difference == pytest.approx(difference, abs=1e-4)
    assert ig.completeness.relative_gap <= 0.01 and ig.completeness.ok
    wrong_target = reference_attributions(gpt2_f(gpt2_reference, GPT2_TARGET + 1), x, torch.zeros_like(x), steps)[1]
    assert not close(ig.scores, wrong_target)


def test_compared_scores_and_their_rank_correlations(minilm, gpt2, bert_reference, gpt2_reference):
    cases = [(minilm, bert_reference, TEXT, TARGET_TEXT, "mean"),
             (gpt2, gpt2_reference, GPT2_TEXT, GPT2_TARGET, "last")]
    for model, reference, text, target, rows in cases:
        encoded = model.tokenizer.encode(text)
        found = attribution.attribute(model, encoded, target, "gradient_x_input")
        assert found.rows == rows
        with torch.no_grad():
            last = reference(torch.tensor([encoded.ids]), output_attentions=True).attentions[-1][0]  # (H, N, N)
        mean = last.double().mean(dim=0)  # (N, N)
        expected = (mean[-1] if rows == "last" else mean.mean(dim=0)).numpy()
        assert np.abs(np.array(found.compared["attention"]) - expected).max() <= 1e-5
        assert np.abs(np.array(found.compared["attention"]) - expected[::-1]).max() > 1e-3  # control: reversed
        magnitude = np.abs(found.scores)
        for name in attribution.COMPARED:
            assert found.agreement[name] == pytest.approx(rank_correlation(magnitude, found.compared[name]), abs=1e-9)
        assert rank_correlation(found.scores, found.compared["attention"]) != pytest.approx(
            found.agreement["attention"], abs=1e-6)  # signed scores rank differently: absolute values are used


def test_rank_correlation_reference_and_undefined_cases(gpt2):
    assert rank_correlation([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(
        attribution.spearman((1, 2, 2, 3), (1, 3, 2, 4)), abs=1e-12)
    rng = np.random.default_rng(0)
    for n in (2, 3, 17, 512):
        a, b = tuple(rng.integers(0, 5, n) * 0.5), tuple(rng.normal(size=n))  # many ties in a
        if len(set(a)) > 1:
            assert attribution.spearman(a, b) == pytest.approx(scipy.stats.spearmanr(a, b).statistic, abs=1e-12)
    assert attribution.spearman((1.0,), (2.0,)) is None
    assert attribution.spearman((1.0, 1.0), (1.0, 2.0)) is None
    one = gpt2.tokenizer.encode("Hello")
    assert len(one) == 1
    found = attribution.attribute(gpt2, one, 5, "integrated_gradients", attribution.MIN_STEPS)
    assert found.agreement == {"attention": None, "rollout": None, "contributions": None}
    assert len(found.scores) == 1 and found.completeness is not None


def test_embeddings_from_words_equal_the_networks(minilm, gpt2):
    for model, text in ((minilm, TEXT), (gpt2, GPT2_TEXT)):
        ids = torch.tensor([model.tokenizer.encode(text).ids])
        segments = torch.zeros_like(ids)
        with torch.no_grad():
            words = model.net.embeddings.word(ids)
            assert torch.equal(attribution.embed_words(model.net.embeddings, words, ids, segments),
                               model.net.embeddings(ids, segments))
            assert torch.equal(attribution.last_hidden(model.net, words, ids, segments), model.net(ids, segments))


def test_refusals(minilm, gpt2):
    encoded = minilm.tokenizer.encode(TEXT)
    cases = [(minilm, 5, 64, "target_kind"), (gpt2, "a text", 64, "target_kind"),
             (gpt2, gpt2.cfg.vocab_size, 64, "target_out_of_range"), (gpt2, -1, 64, "target_out_of_range"),
             (minilm, TARGET_TEXT, attribution.MIN_STEPS - 1, "steps_out_of_range"),
             (minilm, TARGET_TEXT, attribution.MAX_STEPS + 1, "steps_out_of_range")]
    for model, target, steps, kind in cases:
        with pytest.raises(InputError) as caught:
            attribution.attribute(model, encoded if model is minilm else gpt2.tokenizer.encode(GPT2_TEXT), target,
                                  "integrated_gradients", steps)
        assert caught.value.type == kind
    with pytest.raises(ValueError, match="method"):
        attribution.attribute(minilm, encoded, TARGET_TEXT, "saliency")


def test_a_stop_that_turns_true_ends_the_work_between_passes(minilm):
    encoded = minilm.tokenizer.encode(" ".join([TEXT] * 6))  # 68 tokens: 130 points of the path in 3 passes
    assert len(encoded) * 130 > 2 * attribution.ROWS_PER_PASS
    asked = []

    def stop() -> bool:  # true from the second pass on
        asked.append(1)
        return len(asked) > 1

    with pytest.raises(Stopped):
        attribution.attribute(minilm, encoded, TARGET_TEXT, "integrated_gradients", 128, stop=stop)
    assert len(asked) == 2
    done = attribution.attribute(minilm, encoded, TARGET_TEXT, "gradient_x_input", stop=lambda: False)  # one pass
    assert len(done.scores) == len(encoded)
