"""Three ways to process a sequence, side by side: an RNN (a GRU), a stack of 1-D convolutions and one
self-attention layer, all of the same width d (the CS231n notes, section 3.2).

Who can see whom. A position j reaches a later position i (distance Δ = |i − j|) through

* the RNN: Δ sequential steps, h_j → h_{j+1} → … → h_i; the whole sequence takes N sequential steps;
* a convolution stack of kernel k: each layer reaches k − 1 positions further back, so it takes
  ⌈Δ / (k − 1)⌉ layers; with dilation 2^l in layer l (l = 0, 1, …) the receptive field after L layers is
  1 + (k − 1)(2^L − 1) positions, and it takes the fewest L with 1 + (k − 1)(2^L − 1) ≥ Δ + 1 layers.
  Every layer runs all its positions at once: one sequential step per layer;
* self-attention: one step, whatever Δ; one sequential step for the whole sequence.

`reach` measures it on random layers: the norm of the Jacobian ‖∂y_{N−1} / ∂x_j‖_F of the output at the
last position with respect to each input position j (torch autograd; the GRU's by the chain rule over its
steps, gru_jacobian_norms). The convolution stack is causal
(left-padded) and attention is causal too, so that, like the GRU's, the last output sees only the past.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import cast

import torch
from torch import nn

from model.errors import InputError

MAX_LENGTH = 512  # N, the positions of the reach's sequence
MAX_D = 128  # d, the width of the three layers
MIN_KERNEL, MAX_KERNEL = 2, 9  # k: a kernel of 1 would never reach another position
MAX_LAYERS = 12  # the convolution stack's layers in the reach
MAX_SEED = 2**31 - 1
KINDS = ("rnn", "conv", "attention")


class SequenceSizeError(InputError):
    """A size outside its bounds; `loc` names the field (the web layer answers 422 naming it)."""

    type = "sequence_size"

    def __init__(self, field: str, value: object, low: int, high: int) -> None:
        super().__init__((field,), f"{field} = {value!r} is outside {low}..{high}; send a whole number in that range")
        self.ctx = {"min": low, "max": high}


def _check(field: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SequenceSizeError(field, value, low, high)


# ---- the formulas ------------------------------------------------------------------------------------------


def rnn_path_length(i: int, j: int) -> int:
    """Sequential steps from position j to position i through a recurrence: |i − j|."""
    return abs(i - j)


def receptive_field(kernel: int, layers: int, dilated: bool) -> int:
    """Positions the output at one position of a `layers`-deep causal stack depends on:
    1 + (k − 1)·L without dilation, 1 + (k − 1)(2^L − 1) with dilation 2^l in layer l."""
    return 1 + (kernel - 1) * ((2**layers - 1) if dilated else layers)


def receptive_fields(kernel: int, layers: int, dilated: bool) -> list[int]:
    """The receptive field after each layer 1..layers."""
    return [receptive_field(kernel, n, dilated) for n in range(1, layers + 1)]


def conv_path_length(i: int, j: int, kernel: int, dilated: bool) -> int:
    """Layers a convolution stack needs before position i sees position j: ⌈|i − j| / (k − 1)⌉ without
    dilation; with dilation the fewest L with 1 + (k − 1)(2^L − 1) ≥ |i − j| + 1."""
    distance = abs(i - j)
    if not dilated:
        return -(-distance // (kernel - 1))  # ⌈Δ / (k − 1)⌉ in integers
    layers = 0
    while receptive_field(kernel, layers, True) < distance + 1:
        layers += 1
    return layers


def attention_path_length(i: int, j: int) -> int:
    """Self-attention connects every pair of positions directly: 1 step (0 from a position to itself)."""
    return 0 if i == j else 1


def layers_to_cover(length: int, kernel: int, dilated: bool) -> int:
    """The fewest layers whose receptive field holds a whole sequence of `length` positions."""
    return conv_path_length(length - 1, 0, kernel, dilated)


def sequential_operations(kind: str, length: int) -> int:
    """Steps that must run one after another to process a whole sequence of N positions, per layer:
    the RNN N (h_t needs h_{t−1}); a convolution layer and an attention layer 1 (all positions at once)."""
    if kind == "rnn":
        return length
    if kind in ("conv", "attention"):
        return 1
    raise ValueError(f"unknown kind {kind!r}; one of {KINDS}")


def conv_path(i: int, j: int, kernel: int, dilated: bool) -> list[int]:
    """One dependency path from input position j (j ≤ i) up to the output at i through the fewest layers:
    the position at each level 0 (the input) … L (the output). Each layer steps back by m·dilation,
    m in 0..k − 1; the steps are taken largest first, which always lands on j (a proof: model tests)."""
    if j > i:
        raise ValueError(f"a causal path goes from an earlier position to a later one; got j = {j} > i = {i}")
    layers = conv_path_length(i, j, kernel, dilated)
    positions = [i]
    left = i - j
    for layer in reversed(range(layers)):  # from the top layer down to the input
        dilation = 2**layer if dilated else 1
        step = min(kernel - 1, left // dilation)
        left -= step * dilation
        positions.append(positions[-1] - step * dilation)
    return positions[::-1]


# ---- the three layers --------------------------------------------------------------------------------------


class CausalConvStack(nn.Module):
    """`layers` 1-D convolutions d → d of kernel k, each left-padded by (k − 1)·dilation so that the output at
    t sees inputs ≤ t only, dilation 2^l in layer l when `dilated` (else 1); tanh between layers (never zero,
    so every input inside the receptive field gets a non-zero gradient)."""

    def __init__(self, d: int, kernel: int, layers: int, dilated: bool) -> None:
        super().__init__()
        self.kernel = kernel
        self.dilations = [2**layer if dilated else 1 for layer in range(layers)]
        self.convs = nn.ModuleList(nn.Conv1d(d, d, kernel, dilation=dil) for dil in self.dilations)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.transpose(1, 2)  # (B, D, T)
        for n, (conv, dil) in enumerate(zip(self.convs, self.dilations, strict=True)):
            h = conv(nn.functional.pad(h, ((self.kernel - 1) * dil, 0)))  # (B, D, T)
            if n < len(self.convs) - 1:
                h = torch.tanh(h)
        return h.transpose(1, 2)  # (B, T, D)

    def cone(self, length: int) -> list[list[int]]:
        """The positions each level 0 (the input) … L (the output) must have for the output at the last position:
        level L holds N − 1, and level l the positions p − (k − 1 − m)·dilation_l (m = 0..k − 1, ≥ 0) of level
        l + 1's (below 0 is the left padding's zeros)."""
        levels = [[length - 1]]
        for dil in reversed(self.dilations):
            levels.insert(0, sorted({p - (self.kernel - 1 - m) * dil for p in levels[0] for m in range(self.kernel)
                                     if p - (self.kernel - 1 - m) * dil >= 0}))
        return levels

    def last(self, x: torch.Tensor) -> torch.Tensor:
        """The output at the last position only, y[:, N − 1] of forward(x), computed on the positions it depends
        on (cone) instead of all N at every layer: the same weights, taps and tanh on far fewer positions (N = 512,
        k = 9, 12 layers: 514 positions computed dilated, 540 undilated, instead of 12 × 512)."""
        levels = self.cone(x.shape[1])
        h = x[:, levels[0], :]  # (B, P0, D): the input's needed positions
        for n, (conv, dil) in enumerate(zip(self.convs, self.dilations, strict=True)):
            row = {p: r for r, p in enumerate(levels[n])}  # position -> its row in h
            taps = torch.tensor([[row.get(p - (self.kernel - 1 - m) * dil, len(row)) for m in range(self.kernel)]
                                 for p in levels[n + 1]])  # (P, k): a row of h, or the zero row for the padding
            padded = torch.cat([h, h.new_zeros(h.shape[0], 1, h.shape[2])], dim=1)  # (B, P_prev + 1, D)
            weight, bias = cast(nn.Conv1d, conv).weight, cast(torch.Tensor, cast(nn.Conv1d, conv).bias)
            h = torch.einsum("bpkd,odk->bpo", padded[:, taps], weight) + bias  # (B, P, D)
            if n < len(self.convs) - 1:
                h = torch.tanh(h)
        return h[:, 0]  # (B, D)


class SelfAttention(nn.Module):
    """One head of self-attention of width d, written with matmuls: softmax(Q Kᵀ / √d + mask) V, Q = x W_q,
    K = x W_k, V = x W_v; `causal` hides the later positions. It holds the T × T matrix."""

    def __init__(self, d: int, causal: bool = True) -> None:
        super().__init__()
        self.query = nn.Linear(d, d, bias=False)
        self.key = nn.Linear(d, d, bias=False)
        self.value = nn.Linear(d, d, bias=False)
        self.causal = causal

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.query(x), self.key(x), self.value(x)  # (B, T, D) each
        scores = q @ k.transpose(1, 2) / math.sqrt(q.shape[-1])  # (B, T, T)
        if self.causal:
            t = x.shape[1]
            hidden = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)  # (T, T): key after query
            scores = scores.masked_fill(hidden, float("-inf"))
        out: torch.Tensor = torch.softmax(scores, dim=-1) @ v  # (B, T, D)
        return out


class GRULayer(nn.Module):
    """torch.nn.GRU of width d → d, batch first: the output at t is the hidden state h_t."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.gru = nn.GRU(d, d, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.gru(x)[0]  # (B, T, D)
        return out


def make_layers(d: int, kernel: int, dilated: bool, layers: int, seed: int,
                dtype: torch.dtype = torch.float32) -> dict[str, nn.Module]:
    """The three layers with torch's default initialisation, drawn from a generator seeded with `seed`
    (the GRU first, then the convolutions, then attention's W_q, W_k, W_v)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        made: dict[str, nn.Module] = {
            "rnn": GRULayer(d), "conv": CausalConvStack(d, kernel, layers, dilated), "attention": SelfAttention(d),
        }
    return {name: layer.to(dtype) for name, layer in made.items()}


# ---- the reach ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reach:
    """‖∂y_{N−1} / ∂x_j‖_F for j = 0..N−1 for each layer, and the convolution stack's receptive field."""

    length: int
    d: int
    kernel: int
    dilated: bool
    layers: int
    seed: int
    rnn: torch.Tensor  # (T,), float64 (gru_jacobian_norms)
    conv: torch.Tensor  # (T,), float32
    attention: torch.Tensor  # (T,), float32
    receptive_field: list[int]  # after each conv layer 1..layers
    rnn_path: list[int]  # path lengths from each input j to the last position N − 1, per kind
    conv_path: list[int]
    attention_path: list[int]
    sequential: dict[str, int]  # sequential operations for the whole sequence, per kind (one layer)


def check_sizes(length: int, d: int, kernel: int, layers: int, seed: int = 0) -> None:
    _check("length", length, 2, MAX_LENGTH)
    _check("d", d, 1, MAX_D)
    _check("kernel", kernel, MIN_KERNEL, MAX_KERNEL)
    _check("layers", layers, 1, MAX_LAYERS)
    _check("seed", seed, 0, MAX_SEED)


def reach_flops(length: int, d: int, kernel: int, dilated: bool, layers: int) -> float:
    """An estimate of reach's floating-point operations. The GRU: each step's two d × d Jacobians (d backward
    passes of one cell step, about 3 × 12·d² each) and their product chain (4·d³ a step). The stack and
    attention: d copies (one per row of the Jacobian), forward and backward (3 × the forward) of the stack's
    cone (2·k·d² a position computed) and of attention (6·N·d² + 4·N²·d)."""
    gru = length * (36 * d**3 + 4 * d**3)
    stack = CausalConvStack(1, kernel, layers, dilated)
    computed = sum(len(level) for level in stack.cone(length)[1:])
    return float(gru + 3 * d * (2 * computed * kernel * d * d + 6 * length * d * d + 4 * length**2 * d))


def last_output_jacobian_norms(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """‖∂y_{N−1} / ∂x_j‖_F for every j: the d rows of the Jacobian at once, as a batch of d copies of x
    (the layers treat batch rows independently), copy b backpropagating the output's coordinate b. The
    convolution stack computes its last output alone (CausalConvStack.last; a test checks it against forward)."""
    n, d = x.shape
    copies = x.detach().expand(d, n, d).clone().requires_grad_(True)  # (D, T, D): one copy per output coordinate
    last = layer.last(copies) if isinstance(layer, CausalConvStack) else layer(copies)[:, n - 1, :]  # (D, D)
    picked = torch.diagonal(last)  # (D,): copy b's coordinate b of the last output
    (grad,) = torch.autograd.grad(picked.sum(), copies)  # (D, T, D): grad[b, j] = ∂y_{N−1, b} / ∂x_j
    return grad.pow(2).sum(dim=(0, 2)).sqrt()  # (T,)


def gru_jacobian_norms(layer: GRULayer, x: torch.Tensor) -> torch.Tensor:
    """‖∂h_{N−1} / ∂x_j‖_F for every j by the chain rule over the GRU's steps, in float64:

        ∂h_{N−1} / ∂x_j = A_{N−1} ⋯ A_{j+1} · B_j,   A_t = ∂h_t / ∂h_{t−1},   B_t = ∂h_t / ∂x_t

    each step's A_t and B_t by torch.func.jacrev on torch.gru_cell with the layer's own weights (all steps at
    once), the product G = A_{N−1} ⋯ A_{j+1} kept at norm 1 with its scale as a float64 logarithm. The same
    numbers as last_output_jacobian_norms (a test), faster (N = 512, d = 128: 3.2 s against 18.7 s on this
    loaded 2-core machine: the d copies' backward steps through the GRU one step at a time) and without its
    underflow: there the float32 backward read exactly 0 far back (N = 128, d = 16, seed 0: the first 30
    positions), where this gives 7.3 × 10⁻³⁰ at position 0."""
    from torch.func import jacrev, vmap

    gru = layer.gru
    weights = tuple(cast(torch.Tensor, getattr(gru, name)).detach()
                    for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"))
    n, d = x.shape
    with torch.no_grad():
        h = layer(x[None])[0]  # (T, D)
    before = torch.cat([torch.zeros(1, d, dtype=x.dtype), h[:-1]])  # (T, D): h_{t−1}, h_{−1} = 0

    def cell(x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.gru_cell(x_t[None], h_prev[None], *weights)[0]  # (D,)
        return out

    step_h, step_x = vmap(jacrev(cell, argnums=(1, 0)))(x.detach(), before)  # (T, D, D) each: A_t, B_t
    log_norms = torch.full((n,), float("-inf"), dtype=torch.float64)
    product = torch.eye(d, dtype=x.dtype)  # (D, D): A_{N−1} ⋯ A_{j+1} / its scale
    log_scale = 0.0
    with torch.no_grad():
        for j in reversed(range(n)):
            size = float(torch.linalg.matrix_norm(product @ step_x[j]))
            if size == 0.0:
                break  # the product is 0: so is every earlier position's
            log_norms[j] = log_scale + math.log(size)
            product = product @ step_h[j]  # (D, D)
            scale = float(torch.linalg.matrix_norm(product))
            if scale == 0.0:
                break
            product = product / scale
            log_scale += math.log(scale)
    return log_norms.exp()  # (T,), float64


def reach_input(length: int, d: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The input sequence: N × d standard normal numbers from a generator seeded with seed + 1."""
    gen = torch.Generator().manual_seed(seed + 1)
    return torch.randn(length, d, generator=gen, dtype=torch.float64).to(dtype)  # (T, D)


def reach(length: int, d: int, kernel: int, dilated: bool, layers: int, seed: int = 0) -> Reach:
    """How strongly the last output depends on each input position, in each of the three random layers."""
    check_sizes(length, d, kernel, layers, seed)
    made = make_layers(d, kernel, dilated, layers, seed)
    x = reach_input(length, d, seed)
    with torch.enable_grad():
        norms = {name: last_output_jacobian_norms(layer, x) for name, layer in made.items() if name != "rnn"}
        norms["rnn"] = gru_jacobian_norms(cast(GRULayer, made["rnn"]), x)
    last = length - 1
    return Reach(
        length=length, d=d, kernel=kernel, dilated=dilated, layers=layers, seed=seed,
        rnn=norms["rnn"], conv=norms["conv"], attention=norms["attention"],
        receptive_field=receptive_fields(kernel, layers, dilated),
        rnn_path=[rnn_path_length(last, j) for j in range(length)],
        conv_path=[conv_path_length(last, j, kernel, dilated) for j in range(length)],
        attention_path=[attention_path_length(last, j) for j in range(length)],
        sequential={kind: sequential_operations(kind, length) for kind in KINDS},
    )
