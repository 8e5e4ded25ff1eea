"""The step functions: properties, and MultiHeadAttention against independent references."""

import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch.nn import functional as F

from model.nets.attention import (
    MultiHeadAttention,
    apply_mask,
    causal_mask,
    merge_heads,
    softmax_rows,
    split_heads,
)
from model.steps import BLOCK_STEPS, STEPS
from model.trace import Trace
from tests.properties import examples

finite = st.floats(min_value=-30, max_value=30, allow_nan=False, allow_infinity=False, width=32)


def test_steps_are_pinned():
    assert STEPS == ("input", "project", "split", "scores", "scale",
                     "mask", "softmax", "weighted_sum", "concat", "output")
    assert BLOCK_STEPS == ("block_input", "norm_1", "post_norm_1", "add_1", "norm_2", "mlp_gate", "mlp_gate_act",
                           "mlp_hidden", "mlp_act", "mlp_out", "post_norm_2", "add_2", "final_norm")


def test_the_pages_step_list_is_model_steps():
    """static/js/figures/steps.js keeps its own copy for the browser; it must equal model/steps.py."""
    source = (Path(__file__).resolve().parents[2] / "static" / "js" / "figures" / "steps.js").read_text("utf-8")
    match = re.search(r"export const STEPS\s*=\s*(?:Object\.freeze\(\s*)?\[(.*?)\]", source, re.S)
    assert match, "steps.js no longer declares `export const STEPS = [...]`"
    names = re.findall(r"""['"]([a-z_]+)['"]""", match.group(1))
    assert re.sub(r"""['"][a-z_]+['"]|[\s,]""", "", match.group(1)) == ""  # nothing but quoted names
    assert tuple(names) == STEPS


@st.composite
def score_rows(draw):
    t = draw(st.integers(1, 6))
    s = draw(st.integers(1, 6))
    values = draw(st.lists(finite, min_size=t * s, max_size=t * s))
    hidden = draw(st.lists(st.booleans(), min_size=t * s, max_size=t * s))
    scores = torch.tensor(values, dtype=torch.float32).view(1, 1, t, s)
    mask = torch.zeros(t * s).masked_fill(torch.tensor(hidden), float("-inf")).view(t, s)
    return scores, mask


@examples(100)
@given(score_rows())
def test_softmax_rows_are_distributions_and_masked_keys_get_nothing(case):
    scores, mask = case
    weights = softmax_rows(apply_mask(scores, mask))
    assert not torch.isnan(weights).any()
    hidden = torch.isinf(mask).expand_as(weights)
    assert (weights[hidden] == 0).all()
    sums = weights.sum(-1)[0, 0]
    fully_hidden = torch.isinf(mask).all(-1)
    assert torch.allclose(sums[~fully_hidden], torch.ones_like(sums[~fully_hidden]), atol=1e-5)
    assert (sums[fully_hidden] == 0).all()  # a row with every key hidden is zeros, never NaN


@examples(100)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.data())
def test_merge_after_split_is_identity(b, t, h, dh, data):
    values = data.draw(st.lists(finite, min_size=b * t * h * dh, max_size=b * t * h * dh))
    x = torch.tensor(values).view(b, t, h * dh)
    heads = split_heads(x, h)
    assert heads.shape == (b, h, t, dh)
    assert torch.equal(heads[:, 1 % h], x[:, :, (1 % h) * dh : (1 % h + 1) * dh])  # head i = column slice i
    assert torch.equal(merge_heads(heads), x)


def test_split_rejects_width_not_divisible():
    with pytest.raises(ValueError, match="divisible"):
        split_heads(torch.zeros(1, 2, 6), 4)


def _layer(d_model=8, n_heads=2, seed=0):
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, n_heads)
    for p in layer.parameters():
        torch.nn.init.normal_(p, std=0.5)
    return layer.eval()


@pytest.mark.parametrize("causal", [False, True])
def test_attention_equals_torch_sdpa(causal):
    layer = _layer()
    x = torch.randn(2, 5, 8)
    with torch.no_grad():
        ours = layer(x, mask=causal_mask(5) if causal else None)
        q, k, v = (split_heads(lin(x), 2) for lin in (layer.query, layer.key, layer.value))
        ref = layer.output(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=causal)))
    assert torch.allclose(ours, ref, atol=1e-5)


def test_cross_attention_equals_numpy_reimplementation():
    layer = _layer(d_model=6, n_heads=3, seed=1)
    x, ctx = torch.randn(1, 4, 6), torch.randn(1, 7, 6)
    with torch.no_grad():
        ours = layer(x, keys=ctx).numpy()[0]
    w = {n: getattr(layer, n).weight.detach().numpy().astype(np.float64) for n in ("query", "key", "value", "output")}
    b = {n: getattr(layer, n).bias.detach().numpy().astype(np.float64) for n in ("query", "key", "value", "output")}
    xq, xc = x.numpy()[0].astype(np.float64), ctx.numpy()[0].astype(np.float64)
    q, k, v = xq @ w["query"].T + b["query"], xc @ w["key"].T + b["key"], xc @ w["value"].T + b["value"]
    heads = []
    for h in range(3):
        cols = slice(2 * h, 2 * h + 2)
        s = q[:, cols] @ k[:, cols].T / math.sqrt(2)
        p = np.exp(s - s.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        heads.append(p @ v[:, cols])
    ref = np.concatenate(heads, axis=1) @ w["output"].T + b["output"]
    assert np.abs(ours - ref).max() < 1e-5


def test_trace_records_every_step_consistently():
    layer = _layer()
    x = torch.randn(1, 4, 8)
    trace = Trace()
    with torch.no_grad():
        out = layer(x, mask=causal_mask(4), record=trace.recorder(0))
    rec = trace[0]
    assert set(rec) == set(STEPS)
    assert torch.equal(rec["input"], x)
    assert torch.equal(rec["split"]["q"], split_heads(rec["project"]["q"], 2))
    assert torch.allclose(rec["scale"], rec["scores"] / math.sqrt(4))
    assert torch.isneginf(rec["mask"][0, :, 0, 1:]).all()
    assert (rec["softmax"][0, :, 0, 1:] == 0).all()
    assert torch.allclose(rec["weighted_sum"], rec["softmax"] @ rec["split"]["v"])
    assert torch.equal(rec["concat"], merge_heads(rec["weighted_sum"]))
    assert torch.equal(rec["output"], out)


def test_trace_keeps_only_what_was_asked():
    trace = Trace(layers=[1], steps=["softmax"])
    assert trace.recorder(0) is None
    rec = trace.recorder(1)
    rec("scores", torch.zeros(1))
    rec("softmax", torch.ones(1))
    assert set(trace[1]) == {"softmax"}
    with pytest.raises(ValueError, match="unknown steps"):
        Trace(steps=["sotfmax"])


def test_a_forward_through_a_layer_records_what_the_whole_forward_records(minilm):
    """trace_layer stops after the traced layer: its steps are those of a forward through every layer, and the
    hidden state it stops at is the one the next layer's trace takes as its input."""
    encoded = minilm.tokenizer.encode("Stopping early must not change a single number.")
    whole = Trace(layers=[2, 3])
    minilm.run(encoded, whole)
    early = Trace(layers=[2])
    hidden = minilm.run(encoded, early, through=2)
    for step in STEPS:
        ours, ref = early[2][step], whole[2][step]
        pairs = [(ours[k], ref[k]) for k in ref] if isinstance(ref, dict) else [(ours, ref)]
        assert all(torch.equal(a, b) for a, b in pairs), step
    assert set(early.records) == {2}  # no later layer ran
    assert torch.equal(hidden, whole[3]["input"])
