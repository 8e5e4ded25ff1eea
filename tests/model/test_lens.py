"""The logit lens on a GPT-2 checkpoint, against transformers' GPT2LMHeadModel on the same directory.

The reference: `output_hidden_states=True` gives the embeddings' output and each block's output, except that
transformers applies ln_f to the last entry before returning it; the lens of layer l is lm_head(ln_f(h_l)),
of the last layer lm_head(hidden_states[-1]) (= the model's own logits).
"""

from __future__ import annotations

import copy

import pytest
import torch
import transformers

from model.analysis.lens import EMBEDDINGS, MAX_TOP_K, PositionOutOfRange, checked_position, logit_lens
from model.checkpoints import LoadedModel, load
from model.errors import IndexOutOfRange

TOLERANCE = 1e-5
TEXTS = {
    "english": "Hello world, attention is all you need.",
    "chinese": "注意力机制让模型关注输入。",
    "unseen": "Zebras quietly jump over 42 fences 🙂",
}


@pytest.fixture(scope="module")
def gpt2_dir(checkpoint_dirs):
    return checkpoint_dirs["gpt2"]


@pytest.fixture(scope="module")
def ours(gpt2_dir) -> LoadedModel:
    model = load(gpt2_dir)
    assert model.lm_head and model.net.cfg.causal
    return model


@pytest.fixture(scope="module")
def reference(gpt2_dir):
    tok = transformers.AutoTokenizer.from_pretrained(str(gpt2_dir))
    lm = transformers.GPT2LMHeadModel.from_pretrained(str(gpt2_dir), attn_implementation="eager")
    return tok, lm.eval()


def reference_lens(reference, ids: list[int], position: int, k: int) -> list[tuple[list[int], torch.Tensor]]:
    """Per layer (embeddings first) transformers' top-k ids and probabilities at `position`."""
    _, lm = reference
    with torch.no_grad():
        out = lm(torch.tensor([ids]), output_hidden_states=True)
        states = out.hidden_states  # L + 1 entries; the last one already has ln_f applied
        logits = [lm.lm_head(lm.transformer.ln_f(h[0, position])) for h in states[:-1]]
        logits.append(lm.lm_head(states[-1][0, position]))
        assert torch.allclose(logits[-1], out.logits[0, position], atol=1e-6)
    top = [torch.softmax(row, -1).topk(k) for row in logits]
    return [(t.indices.tolist(), t.values) for t in top]


def max_difference(lens, expected) -> float:
    worst = 0.0
    for layer, (ids, probabilities) in zip(lens, expected, strict=True):
        assert layer.ids.tolist() == ids, f"layer {layer.layer}: top ids differ"
        worst = max(worst, (layer.probabilities - probabilities).abs().max().item())
    return worst


def encode(ours, reference, text: str) -> list[int]:
    tok, _ = reference
    encoded = ours.tokenizer.encode(text)
    assert encoded.ids == tok(text)["input_ids"]
    return encoded.ids


@pytest.mark.parametrize("name", TEXTS)
@pytest.mark.parametrize("k", [1, 5, MAX_TOP_K])
def test_every_layer_and_position_equals_transformers(ours, reference, name, k):
    ids = encode(ours, reference, TEXTS[name])
    for position in range(len(ids)):
        lens = logit_lens(ours.decoder, ids, position, k)
        assert [layer.layer for layer in lens] == [EMBEDDINGS, 0, 1]
        assert all(len(layer.ids) == k for layer in lens)
        assert max_difference(lens, reference_lens(reference, ids, position, k)) <= TOLERANCE


def test_the_last_layer_is_the_models_own_next_token_distribution(ours, reference):
    ids = encode(ours, reference, TEXTS["english"])
    _, lm = reference
    with torch.no_grad():
        logits = lm(torch.tensor([ids])).logits[0, -1]
    top = torch.softmax(logits, -1).topk(5)
    last = logit_lens(ours.decoder, ids, len(ids) - 1)[-1]
    assert last.ids.tolist() == top.indices.tolist()
    assert (last.probabilities - top.values).abs().max().item() <= TOLERANCE
    assert (last.logits - logits[top.indices]).abs().max().item() <= 1e-4


def test_the_full_token_limit(ours, reference):
    limit = ours.tokenizer.max_tokens
    assert limit == 64
    text = "Hello" + " attention" * (limit - 1)
    ids = encode(ours, reference, text)
    assert len(ids) == limit
    for position in (0, limit // 2, limit - 1):
        assert max_difference(logit_lens(ours.decoder, ids, position), reference_lens(reference, ids, position, 5)) \
            <= TOLERANCE


def test_a_perturbed_weight_breaks_the_comparison(ours, reference):
    """Control: the comparison can fail. A changed last-block weight changes the last layer only."""
    ids = encode(ours, reference, TEXTS["english"])
    position = len(ids) - 1
    expected = reference_lens(reference, ids, position, 5)
    changed = copy.deepcopy(ours.decoder)
    with torch.no_grad():
        changed.block(1).ff_out.weight.mul_(3.0)
    lens = logit_lens(changed, ids, position)
    assert max_difference(lens[:2], expected[:2]) <= TOLERANCE
    last_ids, last_probabilities = expected[-1]
    assert (lens[-1].ids.tolist() != last_ids
            or (lens[-1].probabilities - last_probabilities).abs().max().item() > 1e-3)


def test_probabilities_are_a_softmax_over_the_vocabulary(ours):
    ids = ours.tokenizer.encode(TEXTS["chinese"]).ids
    lens = logit_lens(ours.decoder, ids, 3, MAX_TOP_K)
    for layer in lens:
        p = layer.probabilities
        assert (p[:-1] >= p[1:]).all() and p.sum().item() <= 1.0 + 1e-6 and (p > 0).all()
        # softmax ratios are logit differences
        assert torch.allclose(torch.log(p[0] / p[1:]), layer.logits[0] - layer.logits[1:], atol=1e-4)


def test_position_rules(ours):
    n = 7
    assert checked_position(None, n) == n - 1
    assert checked_position(0, n) == 0
    for bad in (-1, n, 1000):
        with pytest.raises(PositionOutOfRange) as caught:
            checked_position(bad, n)
        assert isinstance(caught.value, IndexOutOfRange)
        assert caught.value.type == "index_out_of_range" and caught.value.loc == ("position",)
        assert f"0..{n - 1}" in caught.value.message and str(bad) in caught.value.message
    ids = ours.tokenizer.encode(TEXTS["english"]).ids
    with pytest.raises(PositionOutOfRange):
        logit_lens(ours.decoder, ids, len(ids))
    for k in (0, MAX_TOP_K + 1):
        with pytest.raises(ValueError, match="top_k"):
            logit_lens(ours.decoder, ids, 0, k)


def test_token_display_is_the_reference_tokenizers_decoding(ours, reference):
    """Readable text for any id (no Ġ), equal to transformers' decode of that one id."""
    tok, _ = reference
    vocab = ours.cfg.vocab_size
    for token_id in range(vocab):
        token, display = ours.tokenizer.token_text(token_id)
        assert token == tok.convert_ids_to_tokens(token_id)
        assert display == tok.decode([token_id], skip_special_tokens=False, clean_up_tokenization_spaces=False)
        assert "Ġ" not in display
    world = tok(" world")["input_ids"]
    assert len(world) == 1 and ours.tokenizer.token_text(world[0]) == ("Ġworld", " world")
    # a character whose UTF-8 bytes span several tokens: each part alone is the replacement character
    partial = [i for i in range(vocab) if ours.tokenizer.token_text(i)[1] == "\ufffd"]
    assert partial
