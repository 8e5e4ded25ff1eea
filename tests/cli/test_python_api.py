"""The Python API (`import attnscope`) against transformers: the packaged MiniLM and test checkpoints."""

from __future__ import annotations

import doctest
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import attnscope
from model.checkpoints.registry import minilm_dir

from .conftest import hf_maps

ROOT = Path(__file__).resolve().parents[2]
TOLERANCE = 1e-5
TEXT = "The quick brown fox jumps over the lazy dog."
STEP_KEYS = ["input", "project.q", "project.k", "project.v", "split.q", "split.k", "split.v", "scores", "scale", "mask",
             "softmax", "weighted_sum", "concat", "output"]
PAIR = ("Where is the cat?", "The cat sat on the mat.")


@pytest.fixture(scope="module")
def minilm() -> attnscope.Model:
    return attnscope.load()


@pytest.fixture(scope="module")
def minilm_hf():
    directory = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(directory)
    model = transformers.BertModel.from_pretrained(directory, attn_implementation="eager", add_pooling_layer=False)
    return tok, model.eval()


def test_info_of_the_packaged_model(minilm):
    assert minilm.info == attnscope.ModelInfo(
        id="minilm", name=minilm.info.name, architecture="bert", layers=6, heads=12, max_tokens=512, causal=False,
        pairs=True)
    assert "6 layers x 12 heads" in repr(minilm)


def test_attention_equals_transformers(minilm, minilm_hf):
    answer = minilm.attention(TEXT)
    ids, want = hf_maps(minilm_hf, TEXT)
    assert answer.ids == ids
    assert isinstance(answer.maps, np.ndarray) and answer.maps.dtype == np.float32
    assert answer.maps.shape == (6, 12, len(ids), len(ids)) == tuple(want.shape)
    assert np.abs(answer.maps - want.numpy()).max() <= TOLERANCE
    assert answer.layers == list(range(6)) and answer.heads == list(range(12))
    assert [t.display for t in answer.tokens][:3] == ["[CLS]", "the", "quick"]
    assert answer.tokens[0].special and answer.tokens[1].start == 0 and answer.tokens[1].end == 3
    assert np.allclose(answer.maps.sum(-1), 1, atol=1e-5)


def test_pair_equals_transformers(minilm, minilm_hf):
    answer = minilm.attention(*PAIR)
    ids, want = hf_maps(minilm_hf, *PAIR)
    assert answer.ids == ids
    assert {t.segment for t in answer.tokens} == {0, 1}
    assert np.abs(answer.maps - want.numpy()).max() <= TOLERANCE


def test_chosen_layers_and_heads(minilm, minilm_hf):
    answer = minilm.attention(TEXT, layers=[5, 0], heads=[11, 2, 7])
    _, want = hf_maps(minilm_hf, TEXT)
    assert answer.maps.shape[:2] == (2, 3) and answer.layers == [5, 0] and answer.heads == [11, 2, 7]
    assert np.abs(answer.maps - want[[5, 0]][:, [11, 2, 7]].numpy()).max() <= TOLERANCE
    assert np.array_equal(answer.map(0, 7), answer.maps[1, 2])
    with pytest.raises(KeyError, match="not in this answer"):
        answer.map(1, 7)


def test_attention_batch_equals_transformers_in_order(minilm, minilm_hf):
    texts = ["a", TEXT, PAIR, "注意力机制让模型关注输入中最相关的部分。", "Where is the dog?"]
    seen = []
    answers = minilm.attention_batch(texts, batch_size=2, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 5), (4, 5), (5, 5)]
    for item, answer in zip(texts, answers, strict=True):
        text, pair = (item, None) if isinstance(item, str) else item
        ids, want = hf_maps(minilm_hf, text, pair)
        assert (answer.text, answer.pair, answer.ids) == (text, pair, ids)
        assert np.abs(answer.maps - want.numpy()).max() <= TOLERANCE
        assert np.abs(answer.maps - minilm.attention(text, pair).maps).max() <= TOLERANCE


def hf_layer_steps(minilm_hf, text: str, layer: int) -> dict[str, torch.Tensor]:
    """transformers' values of one BERT layer's attention: the hidden state entering it, its q/k/v
    projections and output projection (forward hooks) and its attention weights."""
    tok, model = minilm_hf
    attention = model.encoder.layer[layer].attention
    seen: dict[str, torch.Tensor] = {}
    modules = {"q": attention.self.query, "k": attention.self.key, "v": attention.self.value,
               "output": attention.output.dense}
    hooks = [m.register_forward_hook(lambda _m, _i, out, name=name: seen.__setitem__(name, out[0]))
             for name, m in modules.items()]
    try:
        with torch.no_grad():
            out = model(**tok(text, return_tensors="pt"), output_attentions=True, output_hidden_states=True)
    finally:
        for hook in hooks:
            hook.remove()
    return {"input": out.hidden_states[layer][0], "softmax": out.attentions[layer][0], **seen}


def test_trace_with_the_block_reaches_the_next_layers_input(minilm, minilm_hf):
    """trace(block=True) adds the rest of the block after the attention's steps, in the block's order; its output
    (post-norm: block.norm_2) is transformers' hidden state after the layer, and the MLP's inner row is d_ff wide."""
    steps = minilm.trace(TEXT, 2, block=True)
    names = [name for name in steps if name.startswith("block.")]
    assert names == ["block.block_input", "block.add_1", "block.norm_1", "block.mlp_hidden", "block.mlp_act",
                     "block.mlp_out", "block.add_2", "block.norm_2"]
    assert list(steps)[:len(STEP_KEYS)] == STEP_KEYS and "block.block_input" not in minilm.trace(TEXT, 2)
    tok, model = minilm_hf
    with torch.no_grad():
        hidden = model(**tok(TEXT, return_tensors="pt"), output_hidden_states=True).hidden_states
    assert np.abs(steps["block.norm_2"] - hidden[3][0].numpy()).max() <= TOLERANCE
    assert steps["block.mlp_hidden"].shape == (steps["input"].shape[0], 1536)
    assert all(a.dtype == np.float32 for a in steps.values())


def test_trace_steps_equal_transformers(minilm, minilm_hf):
    layer = 2
    steps = minilm.trace(TEXT, layer)
    ref = hf_layer_steps(minilm_hf, TEXT, layer)
    t, d, h = len(minilm.attention(TEXT)), 384, 12
    assert list(steps) == STEP_KEYS
    assert all(a.dtype == np.float32 for a in steps.values())
    assert steps["input"].shape == (t, d) and steps["split.q"].shape == (h, t, d // h)
    assert steps["scores"].shape == (h, t, t) and steps["weighted_sum"].shape == (h, t, d // h)
    for ours, theirs in (("input", "input"), ("project.q", "q"), ("project.k", "k"), ("project.v", "v"),
                         ("softmax", "softmax"), ("output", "output")):
        assert np.abs(steps[ours] - ref[theirs].numpy()).max() <= TOLERANCE, ours
    # the steps between, from transformers' own q, k, v and weights with numpy
    q, k, v = (ref[n].numpy().reshape(t, h, d // h).transpose(1, 0, 2) for n in "qkv")
    assert np.abs(steps["split.q"] - q).max() <= TOLERANCE
    assert np.abs(steps["scores"] - q @ k.transpose(0, 2, 1)).max() <= 1e-4
    assert np.abs(steps["scale"] - q @ k.transpose(0, 2, 1) / np.sqrt(d // h)).max() <= TOLERANCE
    assert np.array_equal(steps["mask"], steps["scale"])  # no mask on an encoder's single input
    mixed = ref["softmax"].numpy() @ v
    assert np.abs(steps["weighted_sum"] - mixed).max() <= TOLERANCE
    assert np.abs(steps["concat"] - mixed.transpose(1, 0, 2).reshape(t, d)).max() <= TOLERANCE


def test_trace_of_one_head(minilm):
    every = minilm.trace(TEXT, 4)
    one = minilm.trace(TEXT, 4, head=5)
    assert one["softmax"].shape == every["softmax"].shape[1:]
    for step in ("split.q", "split.k", "split.v", "scores", "scale", "mask", "softmax", "weighted_sum"):
        assert np.array_equal(one[step], every[step][5]), step
    for step in ("input", "project.q", "concat", "output"):
        assert np.array_equal(one[step], every[step]), step
    assert np.abs(one["softmax"] - minilm.attention(TEXT).map(4, 5)).max() <= 1e-6


@pytest.fixture(scope="module")
def gpt2(checkpoint_dirs) -> attnscope.Model:
    return attnscope.load(checkpoint_dirs["gpt2"])


def test_a_gpt2_checkpoint(gpt2, checkpoint_dirs, references):
    assert gpt2.info == attnscope.ModelInfo(id="tiny-gpt2", name=gpt2.info.name, architecture="gpt2", layers=2,
                                            heads=4, max_tokens=64, causal=True, pairs=False)
    text = "Hello world, attention is all you need."
    answer = gpt2.attention(text)
    ids, want = hf_maps(references["gpt2"], text)
    assert answer.ids == ids
    assert np.abs(answer.maps - want.numpy()).max() <= TOLERANCE
    assert np.array_equal(np.triu(answer.maps, k=1), np.zeros_like(answer.maps))  # causal: nothing above
    assert "".join(t.display for t in answer.tokens) == text
    steps = gpt2.trace(text, 1, head=2)
    upper = np.triu(np.ones((len(ids), len(ids)), dtype=bool), k=1)
    assert np.isneginf(steps["mask"][upper]).all() and np.isfinite(steps["mask"][~upper]).all()
    assert np.abs(steps["softmax"] - want[1, 2].numpy()).max() <= TOLERANCE


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert", "electra"])
def test_encoder_checkpoints(kind, checkpoint_dirs, references):
    model = attnscope.load(str(checkpoint_dirs[kind]))
    assert (model.info.id, model.info.architecture, model.info.causal) == (f"tiny-{kind}", kind, False)
    answers = model.attention_batch(["The cat sat on the mat.", PAIR, "Where is the dog?"], batch_size=3)
    for answer in answers:
        _, want = hf_maps(references[kind], answer.text, answer.pair)
        assert np.abs(answer.maps - want.numpy()).max() <= TOLERANCE


def test_refusals(minilm, gpt2, tmp_path):
    with pytest.raises(attnscope.UnknownModel, match="use one of: minilm"):
        attnscope.load("no-such-model")
    with pytest.raises(attnscope.CheckpointError, match="config.json: missing file"):
        attnscope.load(tmp_path)
    with pytest.raises(ValueError, match="not supported; use one of cpu, cuda"):
        attnscope.load(device="tpu")
    with pytest.raises(attnscope.IndexOutOfRange, match=r"layers \[6\] out of range; this model has layers 0..5"):
        minilm.attention(TEXT, layers=[6])
    with pytest.raises(attnscope.IndexOutOfRange, match=r"heads 0..11"):
        minilm.trace(TEXT, 0, head=12)
    with pytest.raises(attnscope.TooManyTokens, match="takes at most 512") as long:
        minilm.attention("word " * 600)
    assert long.value.count == 602
    with pytest.raises(attnscope.InputError, match="takes one text, not a pair; leave pair out"):
        gpt2.attention("Hello", "world")
    with pytest.raises(attnscope.InputError, match="makes no tokens"):
        gpt2.attention("")
    with pytest.raises(attnscope.ItemError, match=r"texts\[1\]: the input has 66 tokens") as item:
        gpt2.attention_batch(["fine", "a" * 66])
    assert item.value.index == 1 and isinstance(item.value.error, attnscope.TooManyTokens)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch has CUDA")
def test_cuda_refused_without_it():
    with pytest.raises(ValueError, match=r"torch.cuda.is_available\(\) is False here.*use device 'cpu'"):
        attnscope.load(device="cuda")


def test_the_reference_docstring_runs():
    failures, tried = doctest.testmod(attnscope, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert tried >= 6 and failures == 0


def test_the_documented_example_runs(tmp_path):
    """docs/cli.md's Python example, run as a user would (a fresh interpreter)."""
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    done = subprocess.run([sys.executable, "-c", code.group(1)], cwd=tmp_path, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "tokens" in done.stdout
