"""Our encoder against Hugging Face transformers on the same packaged weights."""

import copy

import pytest
import torch
import transformers

from model.checkpoints.registry import minilm_dir
from model.trace import Trace

TOLERANCE = 1e-5

CASES = {
    "english": ("The quick brown fox jumps over the lazy dog.", None),
    "chinese": ("注意力机制让模型关注输入中最相关的部分。", None),
    "emoji": ("I love attention 🙂🚀 and 👩‍💻 too!", None),
    "typed_sep": ("first part [SEP] second part [UNK] [CLS]", None),
    "pair": ("Where is the cat?", "The cat sat on the mat."),
    "max_length": (" ".join(["word"] * 510), None),  # 510 words + [CLS] + [SEP] = 512 tokens
}


@pytest.fixture(scope="module")
def hf():
    directory = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager", add_pooling_layer=False)
    return tok, model.eval()


def hf_forward(hf, text, pair):
    tok, model = hf
    batch = tok(text, pair, return_tensors="pt", truncation=False, padding=False)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    return batch, torch.stack([a[0] for a in out.attentions]), out.last_hidden_state  # (L, H, T, T)


def ours_forward(minilm, encoder, text, pair):
    encoded = minilm.tokenizer.encode(text, pair)
    trace = Trace(steps=("softmax",))
    ids, segments = torch.tensor([encoded.ids]), torch.tensor([encoded.segments])
    hidden = encoder(ids, segments, trace=trace)
    maps = torch.stack([trace[i]["softmax"][0] for i in range(encoder.cfg.n_layers)])
    return encoded, maps, hidden


@pytest.mark.parametrize("case", list(CASES))
def test_attention_and_hidden_state_equal_hf(minilm, hf, case):
    text, pair = CASES[case]
    batch, ref_maps, ref_hidden = hf_forward(hf, text, pair)
    encoded, maps, hidden = ours_forward(minilm, minilm.net, text, pair)

    assert encoded.ids == batch["input_ids"][0].tolist()
    assert encoded.segments == batch["token_type_ids"][0].tolist()
    assert maps.shape == ref_maps.shape == (6, 12, len(encoded), len(encoded))
    assert (maps - ref_maps).abs().max().item() <= TOLERANCE
    assert (hidden - ref_hidden).abs().max().item() <= TOLERANCE


def test_max_length_case_is_at_the_limit(minilm):
    assert len(minilm.tokenizer.encode(*CASES["max_length"])) == 512


def test_a_perturbed_weight_breaks_the_comparison(minilm, hf):
    """Control: the comparison above is able to fail."""
    broken = copy.deepcopy(minilm.net)
    with torch.no_grad():
        broken.blocks[3].attention.key.weight[0, 0] += 0.05
    text, pair = CASES["english"]
    _, ref_maps, ref_hidden = hf_forward(hf, text, pair)
    _, maps, hidden = ours_forward(minilm, broken, text, pair)
    assert (maps[:3] - ref_maps[:3]).abs().max().item() <= TOLERANCE  # layers before the change still agree
    assert (maps[3] - ref_maps[3]).abs().max().item() > TOLERANCE
    assert (hidden - ref_hidden).abs().max().item() > TOLERANCE
