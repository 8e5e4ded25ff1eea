"""model/lab/cost.py against numbers worked out by hand here, the parameters counted in real modules and
weights, and the FLOPs counted by torch's FlopCounterMode on a real forward."""

from __future__ import annotations

import re

import pytest
import torch
from safetensors.numpy import load_file
from torch.utils.flop_counter import FlopCounterMode

from model.checkpoints.registry import minilm_dir
from model.lab import cost
from model.lab.cost import MAX_EXACT, CostError, Served, Sizes
from model.nets.attention import MultiHeadAttention


def value(s: Sizes, name: str) -> int:
    return cost.cost(s).per_layer[name].value


def evaluate(filled: str) -> int:
    """A filled formula read as arithmetic: · multiplies, ² squares (only digits, + and parentheses besides)."""
    assert re.fullmatch(r"[0-9·² +()]+", filled), filled
    return int(eval(filled.replace("²", "**2").replace("·", "*")))  # noqa: S307 - digits and operators only


def test_the_notes_attention_matrix_at_100k_tokens_and_64_heads():
    s = Sizes(d_model=1024, n_heads=64, seq_len=100_000, batch=1, bytes_per_number=2)
    matrix = value(s, "attention_matrix_bytes")
    # 100000² entries per head x 64 heads x 2 bytes (fp16)
    assert matrix == 100000**2 * 64 * 2 == 1_280_000_000_000
    assert round(matrix / 2**30, 2) == 1192.09  # GiB: the notes' "1.192 TB" is 1192 GiB
    assert round(matrix / 2**40, 3) == 1.164  # TiB
    assert matrix / 10**12 == 1.28  # TB (decimal)
    # the matrix does not depend on E: any width that H divides gives the same bytes
    for e in (64, 4096, 65536):
        assert value(Sizes(e, 64, 100_000, 1, 2), "attention_matrix_bytes") == 1_280_000_000_000


def test_the_iris_layer():
    s = Sizes(d_model=8, n_heads=2, seq_len=4, batch=16, bytes_per_number=8, bias=True)
    c = cost.cost(s)
    assert c.per_layer["parameters"].value == 4 * 64 + 4 * 8 == 288
    assert c.per_layer["parameter_bytes"].value == 288 * 8 == 2304
    assert c.per_layer["attention_matrix_bytes"].value == 16 * 2 * 4 * 4 * 8 == 4096
    # x, Q, K, V, ctx: 5 x (16 x 4 x 8) = 2560 numbers; A: 16 x 2 x 4 x 4 = 512 numbers
    assert c.per_layer["cache_bytes"].value == (2560 + 512) * 8 == 24576
    # projections 8 x 16 x 4 x 64 = 32768; scores + weighted sum 4 x 16 x 16 x 8 = 8192
    assert c.per_layer["flops"].value == 32768 + 8192 == 40960
    # O: 16 x 2 x 4 x 4 = 512 numbers; m and l: 2 x 16 x 2 x 4 = 256
    assert c.per_layer["flash_attention_bytes"].value == (512 + 256) * 8 == 6144
    # K and V of the 4 tokens: 2 x 16 x 4 x 8 = 1024 numbers
    assert c.per_layer["kv_cache_bytes"].value == 1024 * 8 == 8192
    assert c.total == {name: q.value for name, q in c.per_layer.items()}  # one layer


def test_bias_off():
    assert cost.parameters(8, bias=False) == 4 * 64 == 256
    assert cost.parameters(384, bias=False) == 4 * 147456 == 589824
    c = cost.cost(Sizes(384, 12, 128, bias=False))
    assert (c.per_layer["parameters"].formula, c.per_layer["parameters"].filled) == ("4·E²", "4·384²")
    # nothing else counts the biases
    with_bias = cost.cost(Sizes(384, 12, 128, bias=True))
    for name in ("attention_matrix_bytes", "cache_bytes", "flops", "flash_attention_bytes"):
        assert c.per_layer[name].value == with_bias.per_layer[name].value


def test_minilm_all_layers():
    s = Sizes(d_model=384, n_heads=12, seq_len=512, batch=1, bytes_per_number=4, n_layers=6)
    c = cost.cost(s)
    per_layer = 4 * 384**2 + 4 * 384  # 589824 + 1536
    assert per_layer == 591_360
    assert c.total["parameters"] == 6 * 591_360 == 3_548_160
    assert c.total["parameter_bytes"] == 3_548_160 * 4 == 14_192_640
    assert c.total["attention_matrix_bytes"] == 6 * 12 * 512**2 * 4 == 75_497_472
    assert 5 * 512 * 384 == 983_040 and 12 * 512**2 == 3_145_728  # x, Q, K, V, ctx; A
    assert c.total["cache_bytes"] == 6 * (983_040 + 3_145_728) * 4 == 99_090_432
    assert c.total["flops"] == 6 * (8 * 512 * 384**2 + 4 * 512**2 * 384) == 6 * (603_979_776 + 402_653_184)
    assert c.total["flash_attention_bytes"] == 6 * (12 * 512 * 32 + 2 * 12 * 512) * 4 == 5_013_504


def test_minilm_weights_hold_the_counted_parameters():
    """The attention parameters of every layer in the packaged checkpoint: W and b of query, key, value, output."""
    weights = load_file(minilm_dir() / "model.safetensors")
    pattern = re.compile(
        r"(?:.*\.)?encoder\.layer\.(\d+)\.attention\.(?:self\.(?:query|key|value)|output\.dense)\.(weight|bias)")
    per_layer: dict[int, dict[str, int]] = {}
    for name, array in weights.items():
        match = pattern.fullmatch(name)
        if match:
            counts = per_layer.setdefault(int(match[1]), {"weight": 0, "bias": 0})
            counts[match[2]] += array.size
    assert sorted(per_layer) == list(range(6))
    for counts in per_layer.values():
        assert counts["weight"] + counts["bias"] == cost.parameters(384, bias=True)
        assert counts["weight"] == cost.parameters(384, bias=False)


@pytest.mark.parametrize(("d_model", "n_heads"), [(8, 2), (12, 3), (32, 4)])
def test_module_parameters(d_model, n_heads):
    layer = MultiHeadAttention(d_model, n_heads)
    assert sum(p.numel() for p in layer.parameters()) == cost.parameters(d_model, bias=True)
    weights = sum(p.numel() for n, p in layer.named_parameters() if n.endswith("weight"))
    assert weights == cost.parameters(d_model, bias=False)


@pytest.mark.parametrize(("batch", "seq_len", "d_model", "n_heads"), [(1, 4, 8, 2), (3, 7, 12, 3), (2, 33, 32, 4)])
def test_flops_equal_torchs_count_of_a_real_forward(batch, seq_len, d_model, n_heads):
    """FlopCounterMode counts 2 FLOPs per multiply-add of every matrix product (linear, bmm, matmul)."""
    torch.manual_seed(0)
    layer = MultiHeadAttention(d_model, n_heads).double()
    x = torch.randn(batch, seq_len, d_model, dtype=torch.float64)  # (B, S, E)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x)
    assert counter.get_total_flops() == cost.flops(batch, seq_len, d_model)
    # and the two parts by hand: projections 4 x 2·B·S·E², scores and weighted sum 2 x 2·B·H·S²·D
    d_head = d_model // n_heads
    assert cost.projection_flops(batch, seq_len, d_model) == 4 * 2 * batch * seq_len * d_model * d_model
    assert cost.attention_flops(batch, seq_len, d_model) == 2 * 2 * batch * n_heads * seq_len * seq_len * d_head


@pytest.mark.parametrize("s", [
    Sizes(1024, 64, 100_000, 1, 2), Sizes(8, 2, 4, 16, 8), Sizes(384, 12, 512, 3, 4, False, 6), Sizes(1, 1, 1, 1, 1),
    Sizes(4096, 32, 8192, 1, 2, True, 32, 8), Sizes(4096, 32, 8192, 2, 2, False, 32, 1),
    Sizes(32, 4, 100, 3, 4, True, 2, 2, 16), Sizes(1024, 16, 4096, 1, 2, False, 28, 8, 128),
])
def test_filled_formulas_evaluate_to_their_values(s):
    c = cost.cost(s)
    assert list(c.per_layer) == list(cost.QUANTITIES)
    for name, q in c.per_layer.items():
        assert evaluate(q.filled) == q.value, name
        assert type(q.value) is int and type(c.total[name]) is int
        assert c.total[name] == q.value * s.n_layers


def test_the_memory_curve():
    s = Sizes(1024, 64, 100_000, 1, 2)
    curve = cost.cost(s).curve
    assert curve.seq_len == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000,
                             100_000, 200_000, 500_000, 1_000_000]
    at = curve.seq_len.index(100_000)
    assert curve.attention_matrix_bytes[at] == 1_280_000_000_000
    assert curve.flash_attention_bytes[at] == (64 * 100_000 * 16 + 2 * 64 * 100_000) * 2 == 230_400_000
    assert curve.attention_matrix_bytes[-1] == 64 * 10**12 * 2  # S = 10^6
    # an S off the grid is on the curve too
    assert cost.curve_lengths(300) == [1, 2, 5, 10, 20, 50, 100, 200, 300, 500, 1000, 2000, 5000]
    assert cost.curve_lengths(10**7)[-1] == 10**7 and cost.curve_lengths(4_000_000)[-1] == 10**7


def test_the_curve_ends_before_numbers_stop_being_exact():
    # S = 10^6 at 64 heads, fp64: 64 x 10^12 x 8 = 5.12e14 fits, and so does S = 2·10^6 (2.048e15);
    # S = 5·10^6 would be 64 x 25·10^12 x 8 = 1.28e16 > 2^53, so the curve stops at 2·10^6
    curve = cost.cost(Sizes(64, 64, 1_000_000, 1, 8)).curve
    assert 64 * (2 * 10**6) ** 2 * 8 == 2_048_000_000_000_000 <= MAX_EXACT < 64 * (5 * 10**6) ** 2 * 8
    assert curve.seq_len[-3:] == [500_000, 1_000_000, 2_000_000]
    assert curve.attention_matrix_bytes[-1] == 2_048_000_000_000_000


def test_every_number_stays_exact():
    assert MAX_EXACT == 9_007_199_254_740_991 == 2**53 - 1
    # 10^7 tokens at 64 heads in fp16: 64 x 10^14 x 2 = 1.28e16 bytes, over 2^53 (9.007e15)
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(64, 64, 10**7, 1, 2))
    assert caught.value.type == "cost_not_exact" and caught.value.loc == ("seq_len",)
    assert caught.value.ctx == {"quantity": "attention_matrix_bytes", "value": 1.28e16, "max": MAX_EXACT}
    assert "per layer" in str(caught.value)
    # the notes' example at the largest batch: the matrix still fits (4096 x 1.28e12 = 5.24e15), the FLOPs
    # 4 x 4096 x 10^10 x 1024 = 1.68e17 do not
    assert 4096 * 1_280_000_000_000 <= MAX_EXACT < 4 * 4096 * 10**10 * 1024
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(1024, 64, 100_000, 4096, 2))
    assert caught.value.ctx["quantity"] == "flops"
    # per layer fits, all layers do not: 8 layers x 1.28e15 = 1.024e16
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(1024, 64, 100_000, 1000, 2, n_layers=8))
    assert caught.value.ctx["quantity"] == "attention_matrix_bytes"
    assert "for the whole model" in str(caught.value)
    # FLOPs break first at a wide model: 8 x 10^5 x 65536² = 3.4e15 fits, 4 x 10^5 tokens do not
    flops = cost.cost(Sizes(65536, 1, 100_000, 1, 1)).per_layer["flops"].value
    assert flops == 8 * 10**5 * 65536**2 + 4 * 10**10 * 65536
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(65536, 1, 400_000, 1, 1))
    assert caught.value.ctx["quantity"] == "flops"


def test_rules_between_the_sizes():
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(384, 7, 16))
    assert (caught.value.type, caught.value.loc, caught.value.ctx) == ("cost_heads_divide", ("n_heads",),
                                                                       {"n_heads": 7, "d_model": 384})
    assert "send 6 or 8" in str(caught.value)
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(8, 16, 16))
    assert "send 8" in str(caught.value)
    with pytest.raises(CostError) as caught:
        cost.cost(Sizes(8, 2, 16, bytes_per_number=3))
    assert (caught.value.type, caught.value.loc, caught.value.ctx) == ("cost_bytes", ("bytes",), {"bytes": 3})


def test_sizes_of_a_request():
    minilm = Served("minilm", 384, 12, 6, 512)
    assert cost.request_sizes(None, None, None, None, 1, 4, True, minilm) == Sizes(384, 12, 512, 1, 4, True, 6)
    assert cost.request_sizes(None, None, None, 128, 2, 2, False, minilm) == Sizes(384, 12, 128, 2, 2, False, 6)
    assert cost.request_sizes(None, None, None, None, 1, 4, True) == Sizes(512, 8, 1024, 1, 4, True, 1)
    assert cost.request_sizes(64, 4, 3, 10, 1, 4, True) == Sizes(64, 4, 10, 1, 4, True, 3)
    for field, args in (("d_model", (8, None, None)), ("n_heads", (None, 2, None)), ("n_layers", (None, None, 2))):
        with pytest.raises(CostError) as caught:
            cost.request_sizes(*args, None, 1, 4, True, minilm)
        assert (caught.value.type, caught.value.loc, caught.value.ctx) == (
            "cost_model_sizes", (field,), {"parameter": field, "model": "minilm"})
    with pytest.raises(CostError) as caught:
        cost.request_sizes(None, None, None, 513, 1, 4, True, minilm)
    assert caught.value.ctx == {"seq_len": 513, "max_tokens": 512, "model": "minilm"}


# ---- grouped-query attention and the KV cache ------------------------------------------------------


def numbers(*shapes: tuple[int, ...]) -> int:
    """How many numbers tensors of these shapes hold, counted by torch."""
    return sum(torch.empty(*shape).numel() for shape in shapes)


@pytest.mark.parametrize(("batch", "seq_len", "d_model", "n_heads", "n_kv_heads", "head_dim"), [
    (1, 4, 8, 2, 2, None), (2, 7, 32, 4, 2, None), (3, 5, 48, 8, 1, None), (1, 9, 64, 8, 4, None),
    (2, 6, 32, 4, 2, 16),  # Qwen3's way: H·D = 64 != E = 32
])
def test_gqa_against_tensors_counted_here(batch, seq_len, d_model, n_heads, n_kv_heads, head_dim):
    """Every memory quantity is the numbers of the tensors of its shapes, written out here; the parameters
    are a real module's, and the FLOPs those FlopCounterMode counts in its forward."""
    s = Sizes(d_model, n_heads, seq_len, batch, 4, True, 1, n_kv_heads, head_dim)
    d = d_model // n_heads if head_dim is None else head_dim
    c = cost.cost(s)
    value = {name: q.value for name, q in c.per_layer.items()}
    b, n, e, h, g = batch, seq_len, d_model, n_heads, n_kv_heads
    # the keys and values a decoder keeps: torch.empty(B, G, S, D) each
    assert value["kv_cache_bytes"] == numbers((b, g, n, d), (b, g, n, d)) * 4
    assert value["kv_cache_bytes"] == 2 * b * n * g * d * 4
    # the backward's: x (B, S, E), Q and ctx (B, H, S, D), K and V (B, G, S, D), A (B, H, S, S)
    assert value["cache_bytes"] == numbers((b, n, e), (b, h, n, d), (b, h, n, d), (b, g, n, d), (b, g, n, d),
                                           (b, h, n, n)) * 4
    assert value["attention_matrix_bytes"] == numbers((b, h, n, n)) * 4
    assert value["flash_attention_bytes"] == numbers((b, h, n, d), (b, h, n), (b, h, n)) * 4
    layer = MultiHeadAttention(e, h, d_keys=head_dim, d_values=head_dim, n_kv_heads=g).double()
    # W_q (E x H·D), W_k, W_v (E x G·D), W_o (H·D x E), and their biases
    assert value["parameters"] == sum(p.numel() for p in layer.parameters())
    assert value["parameters"] == numbers((e, h * d), (e, g * d), (e, g * d), (h * d, e), (h * d,), (g * d,),
                                          (g * d,), (e,))
    weights = sum(p.numel() for name, p in layer.named_parameters() if name.endswith("weight"))
    assert cost.cost(Sizes(e, h, n, b, 4, False, 1, g, head_dim)).per_layer["parameters"].value == weights
    x = torch.randn(b, n, e, dtype=torch.float64)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x)
    assert value["flops"] == counter.get_total_flops()


def test_gqa_written_forms():
    mha = cost.cost(Sizes(512, 8, 1024, n_kv_heads=8)).per_layer
    assert mha == cost.cost(Sizes(512, 8, 1024)).per_layer  # G = H: nothing changes
    assert (mha["parameters"].formula, mha["parameters"].filled) == ("4·E² + 4·E", "4·512² + 4·512")
    assert mha["cache_bytes"].formula == "(5·B·S·E + B·H·S²)·b"
    assert mha["flops"].formula == "8·B·S·E² + 4·B·S²·E"
    assert (mha["kv_cache_bytes"].formula, mha["kv_cache_bytes"].filled) == ("2·B·S·G·D·b", "2·1·1024·8·64·4")
    gqa = cost.cost(Sizes(512, 8, 1024, n_kv_heads=2)).per_layer
    assert (gqa["parameters"].formula, gqa["parameters"].filled) == (
        "2·E² + 2·E·G·D + 2·E + 2·G·D", "2·512² + 2·512·2·64 + 2·512 + 2·2·64")
    assert gqa["parameters"].value == 2 * 512**2 + 2 * 512 * 128 + 2 * 512 + 2 * 128 == 656_640
    assert gqa["kv_cache_bytes"].value == 2 * 1024 * 2 * 64 * 4 == mha["kv_cache_bytes"].value // 4
    assert gqa["attention_matrix_bytes"] == mha["attention_matrix_bytes"]
    # the scores' FLOPs do not change, the projections of K and V shrink to G·D columns
    assert mha["flops"].value - gqa["flops"].value == 2 * 2 * 1024 * 512 * (512 - 128)
    own = cost.cost(Sizes(32, 4, 10, n_kv_heads=2, head_dim=16)).per_layer
    assert own["parameters"].formula == "2·E·H·D + 2·E·G·D + H·D + E + 2·G·D"
    assert own["flops"].formula == "4·B·S·E·H·D + 4·B·S·E·G·D + 4·B·S²·H·D"


def test_the_kv_cache_of_a_llama_3_8b_shaped_layer():
    """E = 4096, H = 32, G = 8, D = 128, 8192 tokens in bf16, 32 layers: 1 GiB of keys and values."""
    c = cost.cost(Sizes(4096, 32, 8192, 1, 2, False, 32, 8))
    assert c.per_layer["kv_cache_bytes"].value == 2 * 8192 * 8 * 128 * 2 == 33_554_432
    assert c.total["kv_cache_bytes"] == 32 * 33_554_432 == 2**30
    assert c.per_layer["parameters"].value == 2 * 4096**2 + 2 * 4096 * 1024 == 41_943_040


def test_the_curve_has_the_kv_cache():
    s = Sizes(64, 8, 300, 2, 2, n_kv_heads=2)
    curve = cost.cost(s).curve
    assert curve.kv_cache_bytes == [2 * 2 * n * 2 * 8 * 2 for n in curve.seq_len]
    at = curve.seq_len.index(300)
    assert curve.kv_cache_bytes[at] == cost.cost(s).per_layer["kv_cache_bytes"].value
    assert len(curve.kv_cache_bytes) == len(curve.attention_matrix_bytes) == len(curve.flash_attention_bytes)


def test_kv_heads_must_divide_heads():
    for g, advice in ((3, "send 2 or 4"), (5, "send 4 or 8"), (16, "send 8"), (7, "send 4 or 8")):
        with pytest.raises(CostError) as caught:
            cost.cost(Sizes(512, 8, 16, n_kv_heads=g))
        assert (caught.value.type, caught.value.loc, caught.value.ctx) == (
            "cost_kv_heads_divide", ("n_kv_heads",), {"n_kv_heads": g, "n_heads": 8})
        assert advice in str(caught.value)
    for g in (1, 2, 4, 8):
        cost.cost(Sizes(512, 8, 16, n_kv_heads=g))


def test_sizes_of_a_model_with_kv_heads_and_its_own_head_width():
    mistral = Served("tiny-mistral", 32, 4, 2, 64, 2, 8)
    assert cost.request_sizes(None, None, None, None, 1, 4, True, mistral) == Sizes(32, 4, 64, 1, 4, True, 2, 2)
    qwen3 = Served("tiny-qwen3", 32, 4, 2, 64, 2, 16)
    sizes = cost.request_sizes(None, None, None, 10, 1, 4, True, qwen3)
    assert sizes == Sizes(32, 4, 10, 1, 4, True, 2, 2, 16) and sizes.d_head == 16 and sizes.q_width == 64
    with pytest.raises(CostError) as caught:
        cost.request_sizes(None, None, None, None, 1, 4, True, mistral, n_kv_heads=1)
    assert caught.value.ctx == {"parameter": "n_kv_heads", "model": "tiny-mistral"}
    assert cost.request_sizes(64, 8, None, 10, 1, 4, True, None, n_kv_heads=2) == Sizes(64, 8, 10, 1, 4, True, 1, 2)
