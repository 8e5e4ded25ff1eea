"""The configurations of the one network that no supported family uses yet (RMSNorm, grouped- and
multi-query attention, a gated MLP, a sliding window, no biases) against references written here with
torch's own functions: F.scaled_dot_product_attention (its enable_gqa for the grouped heads), F.rms_norm,
and the formulas of each piece; plus a control that must fail."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F

from model.nets.attention import MultiHeadAttention
from model.nets.config import NetConfig
from model.nets.transformer import Transformer
from model.trace import Trace

TOLERANCE = 1e-5


def random_weights(module: torch.nn.Module, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3)


def reference_attention(layer: MultiHeadAttention, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Grouped-query attention as torch computes it: the projections by hand, then SDPA with enable_gqa."""
    b, t, _ = x.shape
    h, g, dh = layer.n_heads, layer.n_kv_heads, layer.d_keys

    def heads(linear: torch.nn.Linear, n: int) -> torch.Tensor:
        return F.linear(x, linear.weight, linear.bias).view(b, t, n, dh).transpose(1, 2)

    q, k, v = heads(layer.query, h), heads(layer.key, g), heads(layer.value, g)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)  # (B, H, T, Dh)
    return F.linear(out.transpose(1, 2).reshape(b, t, h * dh), layer.output.weight, layer.output.bias)


@pytest.mark.parametrize("n_kv_heads", [4, 2, 1])
def test_grouped_and_multi_query_attention_equal_sdpa(n_kv_heads):
    layer = MultiHeadAttention(16, 4, n_kv_heads=n_kv_heads)
    random_weights(layer, n_kv_heads)
    assert layer.key.weight.shape == (n_kv_heads * 4, 16)  # G heads of keys, not H
    x = torch.randn(2, 7, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert (layer(x) - reference_attention(layer, x, None)).abs().max().item() <= TOLERANCE


def test_the_reference_can_tell_a_wrong_grouping():
    """The control: query head h must read key-value head h // 2 (0, 0, 1, 1), not h % 2 (0, 1, 0, 1)."""
    layer = MultiHeadAttention(16, 4, n_kv_heads=2)
    random_weights(layer, 2)
    x = torch.randn(1, 6, 16, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        swapped = MultiHeadAttention(16, 4, n_kv_heads=2)
        swapped.load_state_dict(layer.state_dict())
        for linear in (swapped.query, swapped.output):  # query heads 1 and 2 trade places
            order = torch.tensor([0, 2, 1, 3]).repeat_interleave(4)
            if linear is swapped.query:
                linear.weight.copy_(linear.weight[order])
                linear.bias.copy_(linear.bias[order])
            else:
                linear.weight.copy_(linear.weight[:, order])
        assert (swapped(x) - reference_attention(layer, x, None)).abs().max().item() > TOLERANCE


def test_query_heads_of_one_group_read_the_same_keys():
    layer = MultiHeadAttention(16, 4, n_kv_heads=2)
    random_weights(layer, 3)
    trace = Trace(steps=("split",))
    with torch.no_grad():
        layer(torch.randn(1, 5, 16), record=trace.recorder(0))
    k = trace[0]["split"]["k"][0]  # (H, T, Dh)
    assert torch.equal(k[0], k[1]) and torch.equal(k[2], k[3]) and not torch.equal(k[1], k[2])


def tiny(**changes) -> NetConfig:
    base = dict(vocab_size=50, d_model=16, n_layers=2, n_heads=4, d_ff=24, max_positions=32, type_vocab_size=0,
                layer_norm_eps=1e-6, norm_place="pre", causal=True, norm="rms", n_kv_heads=2, mlp="gated",
                activation="silu", bias=False, tied_head=True)
    return NetConfig(**{**base, **changes})


def reference_forward(net: Transformer, ids: torch.Tensor, window: int | None) -> torch.Tensor:
    """A pre-RMSNorm causal network with a SwiGLU MLP, from the formulas: x += attn(rms(x)); x += mlp(rms(x))."""
    cfg = net.cfg
    t = ids.shape[1]
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    if window is not None:
        allowed &= ~torch.ones(t, t, dtype=torch.bool).tril(diagonal=-window)
    x = net.embeddings.word.weight[ids] + net.embeddings.position.weight[:t]
    for block in net.blocks:
        normed = F.rms_norm(x, (cfg.d_model,), block.attention_norm.weight, cfg.layer_norm_eps)
        x = x + reference_attention(block.attention, normed, allowed)
        normed = F.rms_norm(x, (cfg.d_model,), block.ff_norm.weight, cfg.layer_norm_eps)
        gate, up = normed @ block.ff_gate.weight.T, normed @ block.ff_in.weight.T
        x = x + (gate * torch.sigmoid(gate) * up) @ block.ff_out.weight.T  # SiLU(g) = g·σ(g)
    return F.rms_norm(x, (cfg.d_model,), net.final_norm.weight, cfg.layer_norm_eps)


@pytest.mark.parametrize("window", [None, 3])
def test_a_pre_rmsnorm_gated_grouped_network_equals_the_formulas(window):
    net = Transformer(tiny(window=window)).eval()
    random_weights(net, 7)
    assert not any(name.endswith(".bias") for name in net.state_dict())  # bias False: none anywhere
    ids = torch.randint(0, 50, (2, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        trace = Trace(steps=("softmax",))
        ours = net(ids, trace=trace)
        reference = reference_forward(net, ids, window)
    assert (ours - reference).abs().max().item() <= TOLERANCE
    weights = trace.tensor(1, "softmax")[0]  # (H, T, T)
    i, j = torch.meshgrid(torch.arange(9), torch.arange(9), indexing="ij")
    hidden = (j > i) | ((j <= i - window) if window is not None else torch.zeros(9, 9, dtype=torch.bool))
    assert weights[:, hidden].abs().max().item() == 0.0 and weights[:, ~hidden].min().item() > 0.0


def test_the_reference_can_tell_a_wrong_window():
    net = Transformer(tiny(window=3)).eval()
    random_weights(net, 7)
    ids = torch.randint(0, 50, (1, 9), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert (net(ids) - reference_forward(net, ids, None)).abs().max().item() > TOLERANCE


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"n_kv_heads": 3}, "n_kv_heads 3 must be a positive integer that divides n_heads 4"),
        ({"window": 0}, "window must be a positive integer or None, got 0"),
        ({"window": 4, "causal": False, "tied_head": False}, "a sliding window is a causal network's"),
        ({"norm": "batch"}, "norm must be 'layer' or 'rms', got 'batch'"),
        ({"mlp": "moe"}, "mlp must be 'plain' or 'gated', got 'moe'"),
    ],
)
def test_config_refuses_what_it_cannot_build(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny(**changes)
