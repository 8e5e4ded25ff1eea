"""The size formulas used for the answer caps count exactly the numbers the answers hold."""

import pytest

from model.analysis.sizes import attention_numbers, pooled_side, trace_numbers


def _count(value) -> int:
    if isinstance(value, dict):
        return sum(_count(v) for v in value.values())
    return value.numel()


@pytest.mark.parametrize("text, heads", [("a short one", [3]), ("The cat sat on the mat, twice over.", None),
                                         ("x", [0, 11, 5])])
def test_trace_numbers_counts_every_traced_step(minilm, text, heads):
    encoded = minilm.tokenizer.encode(text)
    steps = minilm.trace_layer(encoded, 2, heads)
    cfg = minilm.cfg
    h = cfg.n_heads if heads is None else len(heads)
    assert sum(_count(v) for v in steps.values()) == trace_numbers(len(encoded), cfg.d_model, cfg.d_head, h)


def test_attention_numbers_and_pooled_side(minilm):
    encoded = minilm.tokenizer.encode("Attention maps of a few layers and heads.")
    maps = minilm.attention_maps(encoded)
    layers, heads = [0, 4], [1, 2, 3]
    assert sum(b.numel() for b in maps.select(layers, heads)) == attention_numbers(2, 3, len(encoded))
    blocks, _ = maps.pooled(layers, heads, 4)
    assert blocks[0].shape[-1] == pooled_side(len(encoded), 4) == 4
    assert pooled_side(3, 64) == 3
