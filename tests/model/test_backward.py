"""attnscope's own backward pass of attention (model/backward.py) against torch autograd in float64.

The reference is a forward written here with plain torch operations on the layer's parameters,
differentiated by torch.autograd; the worked example's numbers are also computed by hand here.
Tolerance: |mine − autograd| ≤ 1e-10 · max|autograd| (+1e-300) per gradient.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from model.attention import MultiHeadAttention
from model.backward import attention_backward, attention_forward

REL = 1e-10
MEASURED: dict[str, float] = {"rel": 0.0, "abs": 0.0}


def reference_forward(p: dict[str, torch.Tensor], x, keys, values, n_heads, scale, mask=None):
    """Plain scaled dot-product attention; weights in × out, as in the notes."""
    b, t, _ = x.shape
    s = keys.shape[1]
    q = (x @ p["w_q"] + p["b_q"]).reshape(b, t, n_heads, -1).permute(0, 2, 1, 3)
    k = (keys @ p["w_k"] + p["b_k"]).reshape(b, s, n_heads, -1).permute(0, 2, 1, 3)
    v = (values @ p["w_v"] + p["b_v"]).reshape(b, s, n_heads, -1).permute(0, 2, 1, 3)
    z = torch.einsum("bhtd,bhsd->bhts", q, k) * scale
    if mask is not None:
        z = z + mask
    hidden = torch.isneginf(z).all(-1, keepdim=True)
    z = torch.where(hidden, torch.zeros_like(z), z)
    a = torch.where(hidden, torch.zeros_like(z), torch.softmax(z, dim=-1))
    ctx = torch.einsum("bhts,bhsd->bhtd", a, v).permute(0, 2, 1, 3).reshape(b, t, -1)
    return ctx @ p["w_o"] + p["b_o"]


def parameters(layer: MultiHeadAttention) -> dict[str, torch.Tensor]:
    named = {"q": layer.query, "k": layer.key, "v": layer.value, "o": layer.output}
    out = {}
    for n, lin in named.items():
        out[f"w_{n}"] = lin.weight.detach().T.clone().requires_grad_(True)
        out[f"b_{n}"] = lin.bias.detach().clone().requires_grad_(True)
    return out


def random_layer(d_model, n_heads, d_keys, d_values, seed) -> MultiHeadAttention:
    torch.manual_seed(seed)
    layer = MultiHeadAttention(d_model, n_heads, d_keys=d_keys, d_values=d_values).double()
    with torch.no_grad():
        for lin in (layer.query, layer.key, layer.value, layer.output):
            lin.bias.normal_()
    return layer


def compare(mine: torch.Tensor, ref: torch.Tensor | None, name: str, floor: float = 0.0) -> None:
    """|mine − ref| ≤ REL · max(max|ref|, floor). `floor` is the size of the example's output, for
    gradients that are zero in exact arithmetic (b_k: softmax ignores a shift of every key's score),
    where autograd's own rounding is all there is."""
    ref = torch.zeros_like(mine) if ref is None else ref.detach()
    mine = mine.detach()
    assert mine.shape == ref.shape, name
    assert torch.isfinite(mine).all(), name
    diff = float((mine - ref).abs().max()) if mine.numel() else 0.0
    scale = float(ref.abs().max()) if ref.numel() else 0.0
    MEASURED["abs"] = max(MEASURED["abs"], diff)
    if scale > floor:
        MEASURED["rel"] = max(MEASURED["rel"], diff / scale)
    assert diff <= REL * max(scale, floor) + 1e-300, f"{name}: |diff| {diff:.3g} vs max|ref| {scale:.3g}"


@settings(max_examples=60, deadline=None)
@given(
    batch=st.integers(1, 3), t=st.integers(1, 6), s=st.integers(1, 6), n_heads=st.integers(1, 3),
    d_model=st.integers(1, 6), d_keys=st.integers(1, 4), d_values=st.integers(1, 4),
    mask_kind=st.sampled_from(["none", "causal", "hidden", "all_hidden_row"]),
    cross=st.booleans(), seed=st.integers(0, 10_000),
)
def test_core_matches_autograd(batch, t, s, n_heads, d_model, d_keys, d_values, mask_kind, cross, seed):
    if not cross:
        s = t
    layer = random_layer(d_model, n_heads, d_keys, d_values, seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, t, d_model, generator=g, dtype=torch.float64)
    keys = torch.randn(batch, s, d_model, generator=g, dtype=torch.float64) if cross else x.clone()
    values = torch.randn(batch, s, d_model, generator=g, dtype=torch.float64) if cross else x.clone()
    upstream = torch.randn(batch, t, d_model, generator=g, dtype=torch.float64)
    mask = None
    if mask_kind == "causal":
        mask = torch.zeros(t, s, dtype=torch.float64).masked_fill(torch.ones(t, s).triu(1).bool(), -math.inf)
    elif mask_kind == "hidden":
        mask = torch.zeros(t, s, dtype=torch.float64)
        mask[:, torch.randint(0, s, (1,), generator=g)] = -math.inf
    elif mask_kind == "all_hidden_row":
        mask = torch.zeros(batch, 1, t, s, dtype=torch.float64)
        mask[0, 0, 0, :] = -math.inf

    out, cache = attention_forward(layer, x, keys, values, mask)
    with torch.no_grad():
        assert torch.equal(out, layer(x, keys=keys, values=values, mask=mask))
    mine = attention_backward(layer, cache, upstream)

    p = parameters(layer)
    xs = [a.clone().requires_grad_(True) for a in (x, keys, values)]
    ref_out = reference_forward(p, *xs, n_heads, layer.scale, mask)
    compare(out, ref_out, "output")
    ref_out.backward(upstream)
    floor = float(p["w_o"].grad.abs().max())
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        compare(mine[name], p[name].grad, name, floor)
    for name, leaf in zip(("queries", "keys", "values"), xs, strict=True):
        compare(mine[name], leaf.grad, name, floor)
    if mask_kind == "all_hidden_row":
        assert torch.equal(mine["scores"][0, :, 0], torch.zeros_like(mine["scores"][0, :, 0]))


def test_upstream_shape_is_checked():
    layer = random_layer(4, 2, None, None, 0)
    _, cache = attention_forward(layer, torch.ones(1, 3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="upstream is"):
        attention_backward(layer, cache, torch.ones(1, 2, 4, dtype=torch.float64))


def test_measured(capsys):
    with capsys.disabled():
        print(f"\nbackward core vs autograd: max rel {MEASURED['rel']:.3g}, max abs {MEASURED['abs']:.3g}")
