"""Integrated gradients' baselines (model/analysis/baselines.py) and the completeness check on every answer
(model/analysis/attribution.py): each baseline's word embeddings equal the table's rows or mean computed here;
f(x) and f(baseline) come from transformers' own models fed `inputs_embeds` (BertModel on MiniLM,
GPT2LMHeadModel on the test GPT-2, LlamaForCausalLM on a Llama test checkpoint), and completeness is recomputed
here from them; a Llama model's zero baseline is flagged unreliable (no ρ, a warning) where the default is not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from model.analysis import attribution, baselines
from model.checkpoints import load

TEXT = "The cat sat on the mat because it was warm."
TARGET_TEXT = "A dog lay on a rug."
OTHER_TEXT = "A dog ran in the park since it was cold."  # 13 tokens in MiniLM, as TEXT


def table_row(model, token: str) -> torch.Tensor:
    """The word table's row of an added token found here by its string."""
    token_id = model.tokenizer.encode(token).ids[1]  # after [CLS]
    return model.net.embeddings.word.weight[token_id].detach()


def test_each_baseline_is_the_table_row_or_mean_computed_here(minilm, gpt2, bert_reference):
    encoded = minilm.tokenizer.encode(TEXT)
    table = bert_reference.embeddings.word_embeddings.weight.detach()  # transformers' copy of the table
    mean = table[: minilm.cfg.vocab_size].double().mean(dim=0).float()
    pad, mask = minilm.tokenizer.encode("[PAD]").ids[1], minilm.tokenizer.encode("[MASK]").ids[1]
    expected = {"mean": mean, "pad": table[pad], "mask": table[mask], "zeros": torch.zeros_like(mean)}
    for kind, row in expected.items():
        found = baselines.resolve(minilm, encoded, kind)
        assert found.kind == kind and found.words.shape == (1, len(encoded), table.shape[1])
        assert torch.allclose(found.words[0], row.expand(len(encoded), -1), atol=1e-6), kind
    assert baselines.resolve(minilm, encoded, "pad").token_id == pad and pad == 0
    assert (baselines.resolve(minilm, encoded, "mask").token_id, baselines.resolve(minilm, encoded, "mask").token) == (
        mask, "[MASK]")
    other = minilm.tokenizer.encode(OTHER_TEXT)
    assert len(other) == len(encoded)
    found = baselines.resolve(minilm, encoded, {"text": OTHER_TEXT})
    assert (found.kind, found.text) == ("text", OTHER_TEXT)
    assert torch.equal(found.words[0], table[other.ids])
    assert not torch.allclose(mean, table[pad])  # control: the mean is no token's row
    gpt2_table = gpt2.net.embeddings.word.weight.detach()
    found = baselines.resolve(gpt2, gpt2.tokenizer.encode(TEXT), "mean")
    assert torch.allclose(found.words[0, 0], gpt2_table[: gpt2.cfg.vocab_size].double().mean(dim=0).float(), atol=1e-7)


def test_refusals(minilm, gpt2):
    encoded = minilm.tokenizer.encode(TEXT)
    with pytest.raises(baselines.BaselineError) as caught:
        attribution.attribute(minilm, encoded, TARGET_TEXT, baseline={"text": "A dog."})
    assert (caught.value.type, caught.value.loc) == ("baseline_token_count", ("baseline", "text"))
    assert caught.value.ctx == {"baseline_tokens": 5, "text_tokens": 13}
    assert "baseline.text makes 5" in str(caught.value)
    for kind in ("pad", "mask"):
        with pytest.raises(baselines.BaselineError) as caught:
            attribution.attribute(gpt2, gpt2.tokenizer.encode(TEXT), 5, baseline=kind)
        assert (caught.value.type, caught.value.loc, caught.value.ctx) == (
            "baseline_unavailable", ("baseline",), {"baseline": kind})
    with pytest.raises(ValueError, match="baseline"):
        attribution.attribute(minilm, encoded, TARGET_TEXT, baseline="noise")


def f_values(f, x: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    with torch.no_grad():
        return float(f(x[None])), float(f(b[None]))


def assert_completeness_recomputed(found: attribution.Attribution, fx: float, fb: float) -> None:
    """The answer's f(x), f(b) and ok equal those recomputed here from transformers' outputs."""
    assert found.output == pytest.approx(fx, abs=1e-4) and found.baseline_output == pytest.approx(fb, abs=1e-4)
    difference = fx - fb
    total = sum(found.scores)
    assert found.completeness is not None
    assert found.completeness.sum == pytest.approx(total, rel=1e-9)
    assert found.completeness.difference == pytest.approx(difference, abs=2e-4)
    gap = abs(total - difference) / abs(difference)
    assert found.completeness.relative_gap == pytest.approx(gap, rel=1e-2, abs=1e-4)
    assert found.completeness.ok == (gap <= attribution.COMPLETENESS_TOLERANCE)


def test_default_baseline_completeness_on_bert_and_gpt2(minilm, gpt2, bert_reference, gpt2_reference):
    encoded = minilm.tokenizer.encode(TEXT)
    found = attribution.attribute(minilm, encoded, TARGET_TEXT)
    assert (found.baseline, found.steps) == ("mean", attribution.DEFAULT_STEPS)
    table = bert_reference.embeddings.word_embeddings.weight.detach()
    x = table[encoded.ids]
    b = table[: minilm.cfg.vocab_size].double().mean(dim=0).float().expand_as(x)
    with torch.no_grad():
        pooled = bert_reference(torch.tensor([minilm.tokenizer.encode(TARGET_TEXT).ids])).last_hidden_state[0].mean(0)

    def bert_f(words: torch.Tensor) -> torch.Tensor:
        hidden = bert_reference(inputs_embeds=words, token_type_ids=torch.zeros(words.shape[:2], dtype=torch.long))
        return torch.nn.functional.cosine_similarity(hidden.last_hidden_state.mean(dim=1), pooled[None], dim=-1)
    assert_completeness_recomputed(found, *f_values(bert_f, x, b))
    assert found.completeness.ok and found.warning is None and None not in found.agreement.values()

    ids = gpt2.tokenizer.encode(TEXT).ids
    found = attribution.attribute(gpt2, gpt2.tokenizer.encode(TEXT), 100)
    table = gpt2_reference.transformer.wte.weight.detach()
    x = table[ids]
    b = table[: gpt2.cfg.vocab_size].double().mean(dim=0).float().expand_as(x)
    assert_completeness_recomputed(found, *f_values(lambda w: gpt2_reference(inputs_embeds=w).logits[:, -1, 100], x, b))
    assert found.completeness.ok


def test_a_llama_model_zero_baseline_is_flagged_and_the_default_is_ok(llama_dirs):
    import transformers

    directory = llama_dirs["llama"]
    model = load(directory)
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager").eval()
    encoded = model.tokenizer.encode(TEXT)
    table = reference.get_input_embeddings().weight.detach()
    x = table[encoded.ids]
    target = 5

    def llama_f(words: torch.Tensor) -> torch.Tensor:
        return reference(inputs_embeds=words).logits[:, -1, target]

    assert baselines.pad_token(model) is None  # the old behaviour: zeros
    old = attribution.attribute(model, encoded, target, "integrated_gradients", 64, baseline="zeros")
    assert_completeness_recomputed(old, *f_values(llama_f, x, torch.zeros_like(x)))
    assert not old.completeness.ok and old.completeness.reason == "gap"
    assert old.agreement == {"attention": None, "rollout": None, "contributions": None}
    assert old.warning is not None and "raise steps (now 64, up to 512)" in old.warning and "baseline" in old.warning
    assert attribution.spearman(tuple(abs(v) for v in old.scores), old.compared["attention"]) is not None  # defined
    found = attribution.attribute(model, encoded, target)  # the defaults: mean, DEFAULT_STEPS
    b = table[: model.cfg.vocab_size].double().mean(dim=0).float().expand_as(x)
    assert_completeness_recomputed(found, *f_values(llama_f, x, b))
    assert found.completeness.ok and found.warning is None and None not in found.agreement.values()


def test_a_tiny_difference_is_not_ok_with_its_reason():
    tiny = attribution.Completeness(sum=1e-7, difference=1e-7, scale=3.0)
    assert (tiny.ok, tiny.reason) == (False, "difference_too_small")
    assert "too small" in attribution.unreliable(tiny, 128, "mean")
    assert attribution.Completeness(1.04, 1.0).ok and not attribution.Completeness(1.06, 1.0).ok
    assert attribution.Completeness(1.06, 1.0).relative_gap == pytest.approx(0.06)
    at_most = attribution.unreliable(attribution.Completeness(2.0, 1.0), attribution.MAX_STEPS, "zeros")
    assert "raise steps" not in at_most and "another baseline" in at_most
    assert np.isinf(attribution.Completeness(1.0, 0.0).relative_gap)
