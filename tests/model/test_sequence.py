"""model/lab/sequence.py: the path-length formulas against a breadth-first search over the layers' own
connectivity, the Jacobian norms against finite differences in float64 and the GRU against a GRU written
out in numpy from torch's weights, the receptive field against which inputs get a non-zero gradient."""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pytest
import torch

from model.errors import InputError
from model.lab.sequence import (
    MAX_D,
    MAX_KERNEL,
    MAX_LAYERS,
    MAX_LENGTH,
    CausalConvStack,
    attention_path_length,
    conv_path,
    conv_path_length,
    gru_jacobian_norms,
    last_output_jacobian_norms,
    layers_to_cover,
    make_layers,
    reach,
    reach_flops,
    reach_input,
    receptive_field,
    receptive_fields,
    rnn_path_length,
    sequential_operations,
)

# ---- path lengths by breadth-first search over the dependency graph ------------------------------------------


def conv_edges(stack: CausalConvStack, length: int) -> list[list[tuple[int, int]]]:
    """Per layer, the edges (input position, output position) of the stack's convolutions as torch runs them:
    Conv1d of kernel k and dilation δ over a left pad of (k − 1)·δ, so output t reads inputs t − (k − 1 − m)·δ."""
    layers = []
    for conv in stack.convs:
        k, dil = conv.kernel_size[0], conv.dilation[0]
        pad = (k - 1) * dil
        layers.append([(t + m * dil - pad, t) for t in range(length) for m in range(k) if t + m * dil - pad >= 0])
    return layers


def bfs_conv_layers(edges: list[list[tuple[int, int]]], j: int) -> dict[int, int]:
    """For input j, the fewest layers L after which each output position i is reachable from j (a BFS, level
    by level, over a real stack's connectivity): {i: L}."""
    first = {j: 0}
    frontier = {j}
    for depth, layer in enumerate(edges, 1):
        frontier = {dst for src, dst in layer if src in frontier}
        for i in frontier:
            first.setdefault(i, depth)
    return first


def bfs_rnn(length: int, j: int, i: int) -> int:
    """Steps from h_j to h_i in the recurrence's graph (edges t − 1 → t)."""
    seen = {j: 0}
    queue = deque([j])
    while queue:
        t = queue.popleft()
        if t + 1 < length and t + 1 not in seen:
            seen[t + 1] = seen[t] + 1
            queue.append(t + 1)
    return seen[i]


def bfs_attention(length: int, j: int, i: int) -> int:
    """Steps from j to i when every position attends to every position up to itself (causal) in one layer."""
    seen = {j: 0}
    queue = deque([j])
    while queue:
        t = queue.popleft()
        for u in range(t, length):  # u attends to t when t ≤ u
            if u not in seen:
                seen[u] = seen[t] + 1
                queue.append(u)
    return seen[i]


@pytest.mark.parametrize("kernel", [2, 3, 4, 5])
@pytest.mark.parametrize("dilated", [False, True])
def test_conv_path_length_is_the_fewest_layers_of_a_real_stack(kernel: int, dilated: bool):
    length = 40
    edges = conv_edges(CausalConvStack(1, kernel, length if not dilated else 7, dilated), length)
    for j in range(length):
        first = bfs_conv_layers(edges, j)
        assert sorted(first) == list(range(j, length))  # every later position, and no earlier one
        for i in range(j, length):
            assert conv_path_length(i, j, kernel, dilated) == first[i], (i, j)


def test_rnn_and_attention_path_lengths_by_bfs():
    length = 30
    for i in range(length):
        for j in range(i + 1):
            assert rnn_path_length(i, j) == bfs_rnn(length, j, i) == i - j
            assert attention_path_length(i, j) == bfs_attention(length, j, i)
    assert rnn_path_length(3, 9) == 6 and attention_path_length(3, 9) == 1  # the formulas take either order


def test_the_closed_forms():
    assert conv_path_length(100, 0, 3, False) == 50 == math.ceil(100 / 2)
    assert conv_path_length(100, 1, 3, False) == 50 and conv_path_length(100, 2, 3, False) == 49
    # dilated, k = 3: receptive field 1 + 2·(2^L − 1) = 3, 7, 15, 31, 63, 127 after L = 1..6
    assert receptive_fields(3, 6, True) == [3, 7, 15, 31, 63, 127]
    assert receptive_fields(3, 3, False) == [3, 5, 7]
    assert conv_path_length(126, 0, 3, True) == 6 and conv_path_length(127, 0, 3, True) == 7
    assert layers_to_cover(256, 3, True) == 8 and layers_to_cover(16384, 3, True) == 14
    assert [sequential_operations(k, 300) for k in ("rnn", "conv", "attention")] == [300, 1, 1]
    with pytest.raises(ValueError):
        sequential_operations("lstm", 3)


@pytest.mark.parametrize("kernel", [2, 3, 7])
@pytest.mark.parametrize("dilated", [False, True])
def test_conv_path_is_a_path_of_the_stack(kernel: int, dilated: bool):
    for i in range(0, 70, 3):
        for j in range(i + 1):
            path = conv_path(i, j, kernel, dilated)
            assert path[0] == j and path[-1] == i and len(path) == conv_path_length(i, j, kernel, dilated) + 1
            for layer, (low, high) in enumerate(zip(path, path[1:], strict=False)):
                dilation = 2**layer if dilated else 1
                assert (high - low) % dilation == 0 and 0 <= (high - low) // dilation <= kernel - 1
    with pytest.raises(ValueError):
        conv_path(2, 5, 3, False)


# ---- the Jacobian norms ----------------------------------------------------------------------------------------


def finite_difference_norms(layer: torch.nn.Module, x: torch.Tensor, eps: float = 1e-6) -> np.ndarray:
    """‖∂y_{N−1} / ∂x_j‖_F by central differences in float64, one input coordinate at a time."""
    n, d = x.shape
    jac = np.zeros((d, n, d))
    with torch.no_grad():
        for j in range(n):
            for c in range(d):
                plus, minus = x.clone(), x.clone()
                plus[j, c] += eps
                minus[j, c] -= eps
                diff = (layer(plus[None])[0, n - 1] - layer(minus[None])[0, n - 1]) / (2 * eps)
                jac[:, j, c] = diff.numpy()
    return np.sqrt((jac**2).sum(axis=(0, 2)))


@pytest.mark.parametrize("dilated", [False, True])
def test_jacobian_norms_equal_finite_differences(dilated: bool):
    layers = make_layers(3, 2, dilated, 3, seed=5, dtype=torch.float64)
    x = reach_input(9, 3, seed=5, dtype=torch.float64)
    for name, layer in layers.items():
        got = last_output_jacobian_norms(layer, x).numpy()
        want = finite_difference_norms(layer, x)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, err_msg=name)


def numpy_gru(weights: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """PyTorch's GRU equations written out: r = σ(W_ir x + b_ir + W_hr h + b_hr), z likewise,
    n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)), h' = (1 − z) ⊙ n + z ⊙ h; h_{-1} = 0."""
    w_ih, w_hh, b_ih, b_hh = (weights[k] for k in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"))
    d = w_hh.shape[1]
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    h = np.zeros(d)
    out = []
    for xt in x:
        gi, gh = w_ih @ xt + b_ih, w_hh @ h + b_hh
        r = sigmoid(gi[:d] + gh[:d])
        z = sigmoid(gi[d:2 * d] + gh[d:2 * d])
        n = np.tanh(gi[2 * d:] + r * gh[2 * d:])
        h = (1 - z) * n + z * h
        out.append(h)
    return np.array(out)


def test_the_gru_is_pytorchs_gru_and_its_reach_is_the_numpy_grus():
    d, n = 4, 12
    layer = make_layers(d, 3, True, 2, seed=3, dtype=torch.float64)["rnn"]
    weights = {k: v.detach().numpy() for k, v in layer.gru.named_parameters()}  # type: ignore[union-attr]
    x = reach_input(n, d, seed=3, dtype=torch.float64)
    with torch.no_grad():
        np.testing.assert_allclose(layer(x[None])[0].numpy(), numpy_gru(weights, x.numpy()), atol=1e-12)
    # the Jacobian of the numpy GRU's last state, by central differences, against autograd's on torch's
    eps, xs = 1e-6, x.numpy()
    jac = np.zeros((d, n, d))
    for j in range(n):
        for c in range(d):
            plus, minus = xs.copy(), xs.copy()
            plus[j, c] += eps
            minus[j, c] -= eps
            jac[:, j, c] = (numpy_gru(weights, plus)[-1] - numpy_gru(weights, minus)[-1]) / (2 * eps)
    want = np.sqrt((jac**2).sum(axis=(0, 2)))
    np.testing.assert_allclose(last_output_jacobian_norms(layer, x).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(gru_jacobian_norms(layer, x).numpy(), want, rtol=1e-6)  # the chain rule, step by step
    assert want[0] < want[-1] / 100  # a random GRU's reach fades with distance


@pytest.mark.parametrize(("d", "length", "seed"), [(3, 9, 0), (8, 40, 1), (16, 64, 2)])
def test_the_grus_chain_rule_equals_autograd_through_the_whole_gru(d: int, length: int, seed: int):
    layer = make_layers(d, 3, True, 2, seed=seed, dtype=torch.float64)["rnn"]
    x = reach_input(length, d, seed=seed, dtype=torch.float64)
    torch.testing.assert_close(gru_jacobian_norms(layer, x), last_output_jacobian_norms(layer, x), rtol=1e-9,
                               atol=0)


def test_the_grus_reach_does_not_underflow_where_float32_autograd_reads_0():
    layer = make_layers(16, 4, False, 6, seed=0)["rnn"]
    x = reach_input(128, 16, seed=0)
    through = last_output_jacobian_norms(layer, x)
    assert int((through == 0).sum()) > 0  # float32 autograd: exactly 0 far back
    chained = reach(128, 16, 4, False, 6, seed=0).rnn
    assert chained.dtype == torch.float64 and bool((chained > 0).all())
    kept = through > 1e-12  # where float32 holds it well (far above its smallest numbers), the two agree
    torch.testing.assert_close(chained[kept], through[kept].double(), rtol=1e-3, atol=0)


@pytest.mark.parametrize(("kernel", "dilated", "layers", "length"),
                         [(3, False, 4, 20), (2, True, 5, 40), (4, True, 3, 17), (9, True, 12, 100), (5, False, 7, 9)])
def test_the_stacks_last_output_alone_is_its_forwards(kernel: int, dilated: bool, layers: int, length: int):
    stack = make_layers(4, kernel, dilated, layers, seed=1, dtype=torch.float64)["conv"]
    x = reach_input(length, 4, seed=1, dtype=torch.float64)[None].expand(2, length, 4)
    assert isinstance(stack, CausalConvStack)
    torch.testing.assert_close(stack.last(x), stack(x)[:, -1], rtol=0, atol=1e-12)
    assert stack.cone(length)[-1] == [length - 1] and len(stack.cone(length)) == layers + 1


@pytest.mark.parametrize(("kernel", "dilated", "layers"), [(2, False, 5), (3, False, 4), (3, True, 4), (4, True, 3)])
def test_the_receptive_field_is_where_the_gradient_is_not_zero(kernel: int, dilated: bool, layers: int):
    length = 64
    r = reach(length, 8, kernel, dilated, layers, seed=2)
    field = receptive_field(kernel, layers, dilated)
    assert r.receptive_field[-1] == field
    nonzero = [j for j in range(length) if r.conv[j] != 0]
    assert nonzero == list(range(length - field, length))
    assert bool((r.rnn > 0).all()) and bool((r.attention > 0).all())  # both see every earlier position


def test_reach_float32_matches_float64_and_its_paths():
    r = reach(20, 5, 3, False, 3, seed=4)
    layers = make_layers(5, 3, False, 3, seed=4, dtype=torch.float64)
    x = reach_input(20, 5, seed=4, dtype=torch.float64)
    for name in ("rnn", "conv", "attention"):
        want = last_output_jacobian_norms(layers[name], x)
        got = getattr(r, name).double()
        assert got.shape == (20,)
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-7)
    assert r.rnn_path == [19 - j for j in range(20)]
    assert r.conv_path == [math.ceil((19 - j) / 2) for j in range(20)]
    assert r.attention_path == [1] * 19 + [0]
    assert r.sequential == {"rnn": 20, "conv": 1, "attention": 1}
    again = reach(20, 5, 3, False, 3, seed=4)
    assert torch.equal(again.rnn, r.rnn)  # seeded
    assert not torch.equal(reach(20, 5, 3, False, 3, seed=5).rnn, r.rnn)


@pytest.mark.parametrize(("field", "args"), [
    ("length", (1, 4, 3, True, 2)), ("length", (MAX_LENGTH + 1, 4, 3, True, 2)), ("d", (8, 0, 3, True, 2)),
    ("d", (8, MAX_D + 1, 3, True, 2)), ("kernel", (8, 4, 1, True, 2)), ("kernel", (8, 4, MAX_KERNEL + 1, True, 2)),
    ("layers", (8, 4, 3, True, 0)), ("layers", (8, 4, 3, True, MAX_LAYERS + 1)),
])
def test_sizes_outside_the_bounds_are_refused_naming_the_field(field: str, args: tuple):
    with pytest.raises(InputError) as caught:
        reach(*args)
    assert caught.value.loc == (field,) and field in caught.value.message


def test_the_work_estimate_sends_only_the_largest_requests_to_the_background_lane():
    long_work = 100e9  # app/hub.py's LONG_WORK_FLOPS: more goes to the background lane
    assert reach_flops(64, 32, 3, True, 4) < 1e9
    assert reach_flops(512, 128, 9, True, 12) > long_work
    # the stack's cone: at N = 512, k = 9 and 12 layers, 514 positions computed dilated and 540 undilated,
    # against 12 × 512 for every position of every layer
    assert [sum(len(level) for level in CausalConvStack(1, 9, 12, dilated).cone(512)[1:])
            for dilated in (True, False)] == [514, 540]
