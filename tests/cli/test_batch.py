"""Batched forwards (model/checkpoints/batch.py): inputs of different lengths padded into one forward give each
input the maps it gets alone, and transformers' maps of that input alone.

Measured on these checkpoints (2 layers x 4 heads, weights drawn large so that the maps are sharp): batched
against one-at-a-time runs, max |difference| 1.4e-6 in float32 (the rounding of kernels that see other
shapes: the same input alone against transformers differs as much) and 4e-15 in float64, where rounding
no longer hides a wrong mask or position: the float64 test is the one that holds batching to equality.
"""

from __future__ import annotations

import copy

import pytest
import torch

from model.checkpoints import batch, load
from model.checkpoints.tokenizer import Encoded, TooManyTokens

from ..checkpoints import KINDS, SIZES
from .conftest import hf_maps

FLOAT32 = 1e-5  # as every comparison with transformers in this suite
FLOAT64 = 1e-12

ENCODER_INPUTS = [
    ("The cat sat on the mat.", None),
    ("Where is the dog?", None),
    ("Hello world, attention is all you need. Models looking at attention, again and again.", None),
    ("注意力机制让模型关注输入中最相关的部分。", None),
    ("Where is the cat?", "The cat sat on the mat."),  # a pair: segment 1 where the model uses segments
    ("a", None),
    ("Where is the dog?", "Hello world."),
]
DECODER_INPUTS = [
    ("Hello world, attention is all you need.", None),
    ("The cat", None),
    ("注意力机制让模型关注输入中最相关的部分。", None),
    ("Models looking at attention, again and again. Where is the dog?", None),
    ("a", None),
]


def inputs(kind: str) -> list[tuple[str, str | None]]:
    return DECODER_INPUTS if kind == "gpt2" else ENCODER_INPUTS


@pytest.fixture(scope="module", params=KINDS)
def case(request, checkpoint_dirs, references):
    kind = request.param
    model = load(checkpoint_dirs[kind])
    longest = longest_input(model)
    texts = [*inputs(kind), (longest, None)]
    encodings = [model.tokenizer.encode(text, pair) for text, pair in texts]
    return kind, model, texts, encodings, references[kind]


def longest_input(model) -> str:
    """A text of exactly the model's max_tokens tokens: the last position each model has (RoBERTa's
    padding_idx + max_tokens) takes part in the batch."""
    words = ["cat"]
    while True:
        try:
            model.tokenizer.encode(" ".join([*words, "cat"]))
        except TooManyTokens:
            break
        words.append("cat")
    text = " ".join(words)
    assert len(model.tokenizer.encode(text)) == model.tokenizer.max_tokens
    return text


def single(model, encoded: Encoded) -> torch.Tensor:
    """The model's own one-input forward (LoadedModel.attention_maps, as the server runs it)."""
    return torch.stack(model.attention_maps(encoded).per_layer)  # (L, H, T, T)


@pytest.mark.parametrize("batch_size", [3, 8])
def test_batched_maps_equal_single_runs(case, batch_size):
    kind, model, texts, encodings, _ = case
    lengths = [len(e) for e in encodings]
    assert len(set(lengths)) >= 5  # inputs of many lengths: every batch pads
    maps = batch.attention_maps(model, encodings, batch_size=batch_size)
    for encoded, got in zip(encodings, maps, strict=True):
        want = single(model, encoded)
        assert got.shape == want.shape == (SIZES["layers"], SIZES["heads"], len(encoded), len(encoded))
        assert got.dtype == torch.float32
        assert (got - want).abs().max().item() <= FLOAT32, (kind, len(encoded))


def test_batched_maps_equal_single_runs_in_float64(case):
    """In float64 the rounding is 1e-16: a padded key that kept any weight, a shifted position or a segment
    taken from the wrong place would show far above FLOAT64."""
    kind, model, texts, encodings, _ = case
    wide = copy.deepcopy(model)
    wide.net.double()
    maps = batch.attention_maps(wide, encodings, batch_size=4)
    worst = max((got - single(wide, e)).abs().max().item() for e, got in zip(encodings, maps, strict=True))
    assert maps[0].dtype == torch.float64
    assert worst <= FLOAT64, kind


def test_batched_maps_equal_transformers(case):
    kind, model, texts, encodings, reference = case
    maps = batch.attention_maps(model, encodings, batch_size=8)
    for (text, pair), encoded, got in zip(texts, encodings, maps, strict=True):
        ids, want = hf_maps(reference, text, pair)
        assert encoded.ids == ids
        assert got.shape == want.shape
        assert (got - want).abs().max().item() <= FLOAT32, (kind, text)


def test_chosen_layers_and_heads_in_the_order_given(case):
    kind, model, texts, encodings, _ = case
    maps = batch.attention_maps(model, encodings, layers=[1, 0], heads=[3, 1], batch_size=8)
    for encoded, got in zip(encodings, maps, strict=True):
        want = single(model, encoded)
        assert got.shape == (2, 2, len(encoded), len(encoded))
        assert (got - want[[1, 0]][:, [3, 1]]).abs().max().item() <= FLOAT32


def test_padding_is_on_the_right_with_the_pad_id(case):
    kind, model, texts, encodings, reference = case
    padded = batch.pad(model, encodings)
    tok = reference[0]
    for row, encoded in enumerate(encodings):
        n = len(encoded)
        assert padded.ids[row, :n].tolist() == encoded.ids
        assert padded.padding is not None and padded.padding[row].tolist() == [False] * n + [True] * (
            padded.ids.shape[1] - n)
        if kind == "roberta":  # positions count from the pad id: the padding must be it
            assert set(padded.ids[row, n:].tolist()) <= {tok.pad_token_id}
        uses_segments = kind in ("bert", "electra")
        assert padded.segments[row, :n].tolist() == (encoded.segments if uses_segments else [0] * n)


@pytest.mark.parametrize("kind", ["bert", "roberta", "distilbert", "electra"])
def test_padding_without_the_mask_changes_the_maps(checkpoint_dirs, kind):
    """Control: the same padded batch run without its key-padding mask gives the shorter inputs other maps,
    so the equality tests above can fail."""
    model = load(checkpoint_dirs[kind])
    encodings = [model.tokenizer.encode(text, pair) for text, pair in ENCODER_INPUTS]
    padded = batch.pad(model, encodings)
    unmasked = batch.Padded(padded.ids, padded.segments, None, padded.lengths)
    trace = batch.Trace(steps=("softmax",))
    batch.forward(model, unmasked, trace)
    worst = 0.0
    for row, encoded in enumerate(encodings):
        n = len(encoded)
        got = torch.stack([trace.tensor(i, "softmax")[row, :, :n, :n] for i in range(SIZES["layers"])])
        worst = max(worst, (got - single(model, encoded)).abs().max().item())
    assert worst > 1e-2


def test_left_padding_changes_gpt2s_maps(checkpoint_dirs):
    """Control for GPT-2, whose causal mask already hides padding on the right: padding on the left, even
    masked, moves every real token's position, and the maps change; batch.pad pads on the right."""
    model = load(checkpoint_dirs["gpt2"])
    short, long = (model.tokenizer.encode(DECODER_INPUTS[i][0]) for i in (1, 3))
    n, width = len(short), len(long)
    assert width > n
    ids = torch.tensor([[0] * (width - n) + short.ids, long.ids])
    padding = torch.tensor([[True] * (width - n) + [False] * n, [False] * width])
    trace = batch.Trace(steps=("softmax",))
    model.net(ids, torch.zeros_like(ids), trace=trace, padding=padding)
    got = torch.stack([trace.tensor(i, "softmax")[0, :, width - n:, width - n:] for i in range(SIZES["layers"])])
    assert (got - single(model, short)).abs().max().item() > 1e-2


def test_batches_are_sorted_by_length():
    assert batch.batches([3, 9, 5, 9, 1], batch_size=2) == [[1, 3], [2, 0], [4]]
    with pytest.raises(ValueError, match="at least 1"):
        batch.batches([3], batch_size=0)


@pytest.mark.parametrize("kind", ["bert", "gpt2"])
def test_no_padding_no_mask(checkpoint_dirs, kind):
    """A batch of equal lengths runs without a mask; a batch of one is exactly the forward of that input."""
    model = load(checkpoint_dirs[kind])
    encoded = model.tokenizer.encode("The cat sat on the mat.")
    assert batch.pad(model, [encoded, encoded]).padding is None
    maps = batch.attention_maps(model, [encoded, encoded])
    assert torch.equal(maps[1], maps[0])
    assert (maps[0] - single(model, encoded)).abs().max().item() <= FLOAT32
    assert torch.equal(batch.attention_maps(model, [encoded])[0], single(model, encoded))
