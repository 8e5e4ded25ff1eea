"""The glimpse lab's network (model/lab/glimpse.py): a small CNN encoder with one annotation per cell, and a GRU
decoder that attends over the REGIONS cells at each step, in one of four ways (`METHODS`).

Encoder. The canvas (pixels / 16) goes through conv 3×3 (1 → C) · ReLU · max-pool 2, then conv 3×3 (C → 2C) ·
ReLU · max-pool 2: a (2C, 6, 6) feature map in which each 8 × 8 cell of the canvas is a 2 × 2 block. Each block,
flattened (8C numbers), goes through one linear layer and a ReLU, and a learned embedding of the cell's position is
added: h_i (K = `annotation` wide), i = 0..8 in reading order. The position term is what lets the attention find
"the next occupied cell": a digit's features alone do not say where it is.

Decoder step t (1-based), state s_{t−1} (s_0 = tanh(B · mean_i h_i + b)) and previous token y_{t−1} (START first):
    log p_t = log_softmax_i(vᵀ tanh(W s_{t−1} + U h_i))      Bahdanau's additive scores over the 9 cells
    c_t = Σ_i w_ti h_i                                        w_t from `attend`, per method
    s_t = GRUCell([E y_{t−1}, c_t], s_{t−1})
    logits_t = O [s_t, c_t, E y_{t−1}] + o                    over 0..9 and END

`attend` when training (sample=True), with g_i independent Gumbel(0, 1) noise (`gumbel`):
    soft              w = p: the weighted sum of every cell's annotation.
    reinforce         k = argmax_i(log p_i + g_i), a sample from p (the Gumbel-max trick); w = one_hot(k): c = h_k.
                      No gradient reaches W, U, v through w; `score_function_loss` gives them theirs.
    gumbel            w = softmax((log p + g) / τ): the relaxed sample (Gumbel-softmax), used as the weights.
    straight_through  w = y_hard − stop_gradient(y_soft) + y_soft, y_soft as gumbel's and y_hard = one_hot(argmax
                      y_soft): one cell forward, the relaxed sample's gradient backward.
When evaluating (sample=False) the hard methods glimpse the single most likely cell, w = one_hot(argmax_i p_i);
soft attention keeps w = p.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from model.lab.glimpse_data import CELL, GRID, MAX_PIXEL, OUTPUTS, REGIONS, START

METHODS = ("soft", "reinforce", "gumbel", "straight_through")
HARD = ("reinforce", "gumbel", "straight_through")
EMBED = 16  # the width of a token's embedding
TINY = 1e-20  # the exponential draws are kept above it, so the Gumbel noise stays finite


def gumbel(shape: tuple[int, ...], generator: torch.Generator | None) -> torch.Tensor:
    """Independent Gumbel(0, 1) draws: −log E, E ~ Exponential(1)."""
    return -torch.empty(shape).exponential_(generator=generator).clamp_min(TINY).log()


@dataclass(frozen=True)
class Glimpse:
    """One decoding step's attention for a batch."""

    context: torch.Tensor  # (B, K): c_t
    weights: torch.Tensor  # (B, R): w_t, the weights c_t was formed with (one-hot for a hard glimpse)
    choice: torch.Tensor | None  # (B,) int64: the cell glimpsed, None for soft attention


def attend(method: str, log_p: torch.Tensor, annotations: torch.Tensor, *, sample: bool, tau: float,
           noise: torch.Tensor | None) -> Glimpse:
    """log_p (B, R), annotations (B, R, K), noise (B, R) Gumbel draws (needed when sampling a hard method)."""
    choice: torch.Tensor | None = None
    if method == "soft":
        weights = log_p.exp()  # (B, R)
    elif not sample:
        choice = log_p.argmax(dim=-1)  # (B,)
        weights = nn.functional.one_hot(choice, log_p.shape[-1]).to(log_p.dtype)  # (B, R)
    else:
        if noise is None:
            raise ValueError(f"{method} needs Gumbel noise to sample")
        perturbed = log_p + noise  # (B, R)
        choice = perturbed.argmax(dim=-1)  # (B,)
        hard = nn.functional.one_hot(choice, log_p.shape[-1]).to(log_p.dtype)  # (B, R)
        if method == "reinforce":
            weights = hard
        else:
            relaxed = torch.softmax(perturbed / tau, dim=-1)  # (B, R): y_soft
            weights = relaxed if method == "gumbel" else hard - relaxed.detach() + relaxed
    context = torch.bmm(weights[:, None, :], annotations).squeeze(1)  # (B, K)
    return Glimpse(context, weights, choice)


def entropy(log_p: torch.Tensor) -> torch.Tensor:
    """H(p) = −Σ_i p_i log p_i in nats, over the last axis."""
    return -(log_p.exp() * log_p).sum(dim=-1)


def score_function_loss(log_p: torch.Tensor, choice: torch.Tensor, reward: torch.Tensor, baseline: torch.Tensor,
                        entropy_bonus: float, real: torch.Tensor) -> torch.Tensor:
    """REINFORCE's surrogate, mean over the real steps: −(r − b) · log p(k) − β · H(p).

    log_p (B, T, R), choice (B, T), reward (B, T) (no gradient is taken through it), baseline (T,) or (B, T), real
    (B, T) True at the target's steps. Its gradient is the score-function estimate (r − b) · ∇(−log p(k)) of the
    expected loss's gradient through the choice, minus β times the entropy's gradient."""
    chosen = log_p.gather(-1, choice[..., None]).squeeze(-1)  # (B, T): log p(k)
    advantage = (reward - baseline).detach()  # (B, T)
    per_step = -advantage * chosen - entropy_bonus * entropy(log_p)  # (B, T)
    return (per_step * real).sum() / real.sum().clamp_min(1)


class AdditiveScores(nn.Module):
    """Bahdanau's scores vᵀ tanh(W s + U h_i) as log-probabilities over the regions."""

    def __init__(self, state: int, keys: int, width: int) -> None:
        super().__init__()
        self.W = nn.Linear(state, width, bias=False)
        self.U = nn.Linear(keys, width, bias=False)
        self.v = nn.Linear(width, 1, bias=False)

    def forward(self, s: torch.Tensor, projected: torch.Tensor) -> torch.Tensor:
        """s (B, Ds), projected = U h (B, R, A) -> log p (B, R)."""
        scores = self.v(torch.tanh(self.W(s)[:, None, :] + projected)).squeeze(-1)  # (B, R)
        return torch.log_softmax(scores, dim=-1)


class Encoder(nn.Module):
    """Canvas (B, 24, 24) 0..16 -> annotations h (B, R, K): conv, pool, conv, pool, a linear layer per cell, plus
    a learned position per cell."""

    def __init__(self, channels: int, annotation: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, padding=1)
        self.block = CELL // 4  # a cell's side after the two poolings
        self.cell = nn.Linear(2 * channels * self.block * self.block, annotation)
        self.position = nn.Parameter(torch.randn(REGIONS, annotation) * 0.1)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        b, k = pixels.shape[0], self.block
        x = pixels[:, None].float() / MAX_PIXEL  # (B, 1, 24, 24)
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)  # (B, C, 12, 12)
        x = nn.functional.max_pool2d(torch.relu(self.conv2(x)), 2)  # (B, 2C, 6, 6)
        x = x.reshape(b, -1, GRID, k, GRID, k).permute(0, 2, 4, 1, 3, 5)  # (B, 3, 3, 2C, 2, 2)
        cells = x.reshape(b, REGIONS, -1)  # (B, R, 8C), reading order
        return torch.relu(self.cell(cells)) + self.position  # (B, R, K)


@dataclass(frozen=True)
class Decoded:
    """A decoder pass over T steps."""

    logits: torch.Tensor  # (B, T, OUTPUTS)
    log_p: torch.Tensor  # (B, T, R): the attention distribution log p_t
    weights: torch.Tensor  # (B, T, R): the weights w_t used
    choices: torch.Tensor | None  # (B, T) int64: the cells glimpsed; None for soft attention
    states: torch.Tensor  # (B, T, hidden): s_{t−1}, the state each step's attention read


class GlimpseNet(nn.Module):
    """The encoder and the attending GRU decoder; `method` picks how the decoder attends."""

    def __init__(self, method: str, channels: int, hidden: int, annotation: int, attention: int) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method is {method!r}; one of {', '.join(METHODS)}")
        self.method = method
        self.encoder = Encoder(channels, annotation)
        self.bridge = nn.Linear(annotation, hidden)
        self.embed = nn.Embedding(START + 1, EMBED)
        self.attention = AdditiveScores(hidden, annotation, attention)
        self.cell = nn.GRUCell(EMBED + annotation, hidden)
        self.out = nn.Linear(hidden + annotation + EMBED, OUTPUTS)

    def decode(self, annotations: torch.Tensor, inputs: torch.Tensor | None = None, max_steps: int = 0, *,
               sample: bool = False, tau: float = 1.0, generator: torch.Generator | None = None) -> Decoded:
        """Teacher forcing on `inputs` (B, T) (START y_1 ..), or greedy for `max_steps` steps when inputs is None.
        `sample`: the training's glimpses (Gumbel noise from `generator`); else the evaluation's (see `attend`)."""
        b, regions, _ = annotations.shape
        projected = self.attention.U(annotations)  # (B, R, A)
        s = torch.tanh(self.bridge(annotations.mean(dim=1)))  # (B, hidden)
        y = torch.full((b,), START, dtype=torch.int64)  # (B,)
        steps = inputs.shape[1] if inputs is not None else max_steps
        noisy = sample and self.method in HARD
        logits, log_ps, weights, choices, states = [], [], [], [], []
        for t in range(steps):
            e = self.embed(inputs[:, t] if inputs is not None else y)  # (B, EMBED)
            log_p = self.attention(s, projected)  # (B, R)
            noise = gumbel((b, regions), generator) if noisy else None
            glimpse = attend(self.method, log_p, annotations, sample=sample, tau=tau, noise=noise)
            states.append(s)
            s = self.cell(torch.cat([e, glimpse.context], dim=-1), s)  # (B, hidden)
            logits.append(self.out(torch.cat([s, glimpse.context, e], dim=-1)))  # (B, V)
            y = logits[-1].argmax(dim=-1)  # (B,)
            log_ps.append(log_p)
            weights.append(glimpse.weights)
            if glimpse.choice is not None:
                choices.append(glimpse.choice)
        return Decoded(torch.stack(logits, 1), torch.stack(log_ps, 1), torch.stack(weights, 1),  # (B, T, ·)
                       torch.stack(choices, 1) if choices else None, torch.stack(states, 1))

    def forward(self, pixels: torch.Tensor, inputs: torch.Tensor | None = None, max_steps: int = 0, *,
                sample: bool = False, tau: float = 1.0, generator: torch.Generator | None = None) -> Decoded:
        return self.decode(self.encoder(pixels), inputs, max_steps, sample=sample, tau=tau, generator=generator)

    def attention_parameters(self) -> list[torch.Tensor]:
        """W, U, v: the parameters whose gradient estimate `grad_variance` measures."""
        return [self.attention.W.weight, self.attention.U.weight, self.attention.v.weight]
