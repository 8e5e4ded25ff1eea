"""Models loaded in bfloat16 (load(..., dtype="bfloat16"), attnscope serve --dtype bfloat16): the weights and
the computation in bfloat16, every answer in float32, and maps as close to float32's as transformers' own
bfloat16 computation of the same checkpoint.

bfloat16 keeps 8 significant bits (a relative rounding error of up to 2^-9 per number and per operation), so
its maps cannot equal float32's to 1e-5; how far they are depends on the weights and the depth, not on a bound
worth stating per input. The reference is therefore transformers' eager model in bfloat16 on the same
checkpoint and input: both are measured against the same float32 maps (transformers', float32), and ours may
be at most 1.5 times as far (both round the same numbers to the same 8 bits, in a different order of
operations; measured 0.65 to 0.93 times on these checkpoints: ours scales and masks the scores in float32).
A CPU without bfloat16 arithmetic refuses the dtype instead."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

from model.checkpoints import check_dtype, load
from model.errors import DeviceError
from tests.checkpoints import LLAMA_KINDS

TEXT = "Hello world, attention is all you need. The cat sat on the mat."
KINDS = (*LLAMA_KINDS, "gpt2", "bert")
CLOSE_AS_TRANSFORMERS = 1.5


def _supported() -> bool:
    try:
        check_dtype("bfloat16")
    except DeviceError:
        return False
    return True


BF16 = _supported()


@pytest.fixture(scope="module")
def directories(checkpoint_dirs, llama_dirs):
    return {**llama_dirs, "gpt2": checkpoint_dirs["gpt2"], "bert": checkpoint_dirs["bert"]}


def _transformers_maps(directory, ids: list[int], dtype: torch.dtype, causal: bool) -> np.ndarray:
    auto = transformers.AutoModelForCausalLM if causal else transformers.AutoModel
    model = auto.from_pretrained(str(directory), attn_implementation="eager", dtype=dtype).eval()
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return np.stack([a[0].float().numpy() for a in out.attentions])  # (L, H, T, T)


@pytest.mark.skipif(not BF16, reason="this CPU has no bfloat16 arithmetic: test_a_cpu_without_bfloat16_refuses_it")
@pytest.mark.parametrize("kind", KINDS)
def test_bfloat16_maps_are_as_close_to_float32_as_transformers_own(directories, kind):
    model = load(directories[kind], dtype="bfloat16")
    assert model.dtype == torch.bfloat16 and model.dtype_name == "bfloat16"
    assert {p.dtype for p in model.net.parameters()} == {torch.bfloat16}
    encoded = model.tokenizer.encode(TEXT)
    ours = np.stack([m.numpy() for m in model.attention_maps(encoded).per_layer])  # (L, H, T, T) float32
    assert ours.dtype == np.float32
    # the softmax runs in float32: every row sums to 1 within float32's rounding of T terms
    n = len(encoded)
    assert np.abs(ours.astype(np.float64).sum(-1) - 1).max() <= n * 2.0**-24
    reference = _transformers_maps(directories[kind], encoded.ids, torch.float32, model.causal)
    theirs = _transformers_maps(directories[kind], encoded.ids, torch.bfloat16, model.causal)
    ours_error, their_error = np.abs(ours - reference).max(), np.abs(theirs - reference).max()
    assert 0 < ours_error <= CLOSE_AS_TRANSFORMERS * their_error, (ours_error, their_error)


@pytest.mark.skipif(not BF16, reason="this CPU has no bfloat16 arithmetic: test_a_cpu_without_bfloat16_refuses_it")
def test_bfloat16_answers_are_float32_and_rope_keeps_its_float32_frequencies(directories):
    full, half = load(directories["llama"]), load(directories["llama"], dtype="bfloat16")
    assert torch.equal(half.rope_frequencies, full.rope_frequencies)
    assert half.rope_frequencies.dtype == torch.float32
    weights = sum(p.nbytes for p in half.net.parameters())
    assert 2 * weights == sum(p.nbytes for p in full.net.parameters())  # half the memory
    encoded = half.tokenizer.encode(TEXT)
    assert half.run(encoded).dtype == torch.float32
    steps = half.trace_layer(encoded, 1)
    for step, value in steps.items():
        for tensor in value.values() if isinstance(value, dict) else [value]:
            assert tensor.dtype == torch.float32, step


def test_a_cpu_without_bfloat16_refuses_it_and_other_dtypes_are_refused(directories):
    with pytest.raises(DeviceError, match="dtype 'float16' is not supported; use one of float32, bfloat16"):
        load(directories["llama"], dtype="float16")
    if not BF16:  # the refusal says what to use instead
        with pytest.raises(DeviceError, match="has no bfloat16 arithmetic.*use dtype 'float32'"):
            load(directories["llama"], dtype="bfloat16")
