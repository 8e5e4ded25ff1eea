"""The induction-head lab: a two-layer attention-only transformer learns to continue sequences that repeat.

It is evaluated on R R: a half R of different random tokens, then R again. It is trained on sequences that end
in such a repeat, of a length drawn per sequence, after other random tokens, every token of the prefix and of R
drawn on its own (`sequences`): there nothing before a token of R predicts it, so on the evaluation's first half
the loss stays about ln(vocab); in the second half every token but the first can be read off the first half,
and a model that learns to do so drops its loss there towards 0.
Attention-only transformers of two layers learn it by forming a circuit of two heads
(model/analysis/circuits.py): a previous-token head in layer 0 writes into each position which token came
before it, and an induction head in layer 1 attends from the current token to the position whose previous
token it is (the token that followed the current one last time) and copies that token to the output. The
loss on the repeated half falls suddenly when the circuit forms.

The network: token embeddings plus learned position embeddings, then `layers` blocks of x + attention(LN(x))
(model/nets/attention.py's MultiHeadAttention under a causal mask; no MLP), a final LayerNorm and an unembedding
of its own. Trained with torch autograd and Adam on fresh random batches each step, from `seed` (the
initialisation, the batches and the evaluation set); with one intra-op thread the same settings give the
same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from model.analysis import circuits
from model.errors import LabInputError
from model.lab.reports import CancelledReport, DoneReport
from model.nets.attention import MultiHeadAttention, causal_mask
from model.trace import Trace

MAX_VOCAB, MAX_LENGTH, MAX_LAYERS, MAX_HEADS, MAX_D_MODEL = 512, 128, 4, 8, 256
MAX_STEPS, MAX_BATCH, MAX_LR, MAX_SEED = 20_000, 256, 0.1, 2**31 - 1
EVAL_SEQUENCES = 64  # the fixed evaluation batch, drawn once per run
MIN_REPEAT = 4  # the shortest R of a training sequence


@dataclass(frozen=True)
class InductionConfig:
    """One run's settings; `length` is the whole sequence (R R), so R has length // 2 tokens."""

    vocab: int = 64
    length: int = 32
    layers: int = 2
    heads: int = 2
    d_model: int = 128
    steps: int = 2000
    lr: float = 2e-3
    batch: int = 64
    seed: int = 0
    eval_every: int = 50

    def __post_init__(self) -> None:
        ranges: tuple[tuple[str, float, float, float], ...] = (
            ("vocab", self.vocab, 4, MAX_VOCAB), ("length", self.length, 4, MAX_LENGTH),
            ("layers", self.layers, 1, MAX_LAYERS), ("heads", self.heads, 1, MAX_HEADS),
            ("d_model", self.d_model, 4, MAX_D_MODEL), ("steps", self.steps, 1, MAX_STEPS),
            ("batch", self.batch, 1, MAX_BATCH), ("seed", self.seed, 0, MAX_SEED),
            ("eval_every", self.eval_every, 1, MAX_STEPS),
        )
        for name, value, low, high in ranges:
            if not low <= value <= high:
                raise LabInputError("lab_setting", (name,), f"{name} is {value}; send {low} to {high}",
                                          min=low, max=high)
        for name, value in (("length", self.length), ("d_model", self.d_model)):
            if value % 2 or (name == "d_model" and value % self.heads):
                what = "even" if name == "length" else f"a multiple of heads ({self.heads})"
                raise LabInputError("lab_setting", (name,), f"{name} is {value}; send {what}",
                                          min=4, max=MAX_LENGTH if name == "length" else MAX_D_MODEL)
        if self.half > self.vocab:  # the evaluation's R is of `half` different tokens
            raise LabInputError("lab_setting", ("length",),
                                f"length {self.length} needs {self.half} different tokens; the vocab has {self.vocab}",
                                min=4, max=2 * self.vocab)
        if not (math.isfinite(self.lr) and 0.0 < self.lr <= MAX_LR):
            raise LabInputError("lab_setting", ("lr",), f"lr is {self.lr}; send above 0, at most {MAX_LR}",
                                      min=0.0, max=MAX_LR)

    @property
    def half(self) -> int:
        return self.length // 2


def sequences(config: InductionConfig, count: int, generator: torch.Generator, varied: bool = False) -> torch.Tensor:
    """(count, length) int64: each row R R, R of `half` different tokens drawn uniformly from the vocabulary.

    `varied` (the training batches): R has from MIN_REPEAT to `half` tokens, drawn per row, after a prefix of
    other random tokens that fills the row, so the distance back to a token's earlier occurrence varies and a
    head cannot find it by position alone (with one distance, layer 0 learned to look `half` − 1 positions back
    and no induction head formed). The prefix's and R's tokens are drawn each on its own, so a token may occur
    more than once: with all of them different, a token seen before never came next outside the repeat, the
    network learned that first (pushing the first half's loss below ln(vocab)), and on some seeds no circuit
    formed in thousands of steps."""
    if not varied:
        keys = torch.rand(count, config.vocab, generator=generator)  # (count, V)
        first = keys.argsort(dim=1)[:, : config.half]  # (count, half): a random permutation's first tokens
        return torch.cat([first, first], dim=1)
    drawn = torch.randint(config.vocab, (count, config.length), generator=generator)  # (count, T)
    low = min(MIN_REPEAT, config.half)
    lengths = torch.randint(low, config.half + 1, (count,), generator=generator)  # (count,)
    position = torch.arange(config.length)  # (T,)
    # the first length − n drawn tokens (the prefix, then R), then R again
    source = torch.where(position < config.length - lengths[:, None], position, position - lengths[:, None])
    return drawn.gather(1, source)  # (count, T)


class AttentionOnly(nn.Module):
    """Embeddings + learned positions, `layers` pre-LayerNorm attention blocks (no MLP), LayerNorm, unembedding."""

    def __init__(self, config: InductionConfig) -> None:
        super().__init__()
        d = config.d_model
        self.embed = nn.Embedding(config.vocab, d)
        self.position = nn.Embedding(config.length, d)
        self.norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(config.layers))
        self.attention = nn.ModuleList(MultiHeadAttention(d, config.heads) for _ in range(config.layers))
        self.final_norm = nn.LayerNorm(d)
        self.unembed = nn.Linear(d, config.vocab, bias=False)
        self.register_buffer("mask", causal_mask(config.length), persistent=False)

    def forward(self, ids: torch.Tensor, trace: Trace | None = None) -> torch.Tensor:
        """ids (B, T) -> next-token logits (B, T, V); the softmax of every layer recorded into `trace`."""
        t = ids.shape[1]
        x = self.embed(ids) + self.position(torch.arange(t))  # (B, T, D)
        mask = torch.as_tensor(self.mask)[:t, :t]
        for i, (norm, attention) in enumerate(zip(self.norms, self.attention, strict=True)):
            record = trace.recorder(i) if trace is not None else None
            x = x + attention(norm(x), mask=mask, record=record, mask_keeps_a_key=True)  # (B, T, D)
        logits: torch.Tensor = self.unembed(self.final_norm(x))  # (B, T, V)
        return logits


@dataclass(frozen=True)
class EvalReport:
    """After `step` steps (0: the untrained network), on the fixed evaluation sequences."""

    step: int
    steps: int
    loss_first_half: float  # mean next-token loss on the tokens of the first R after its first, nats
    loss_repeated_half: float  # on the tokens of the second R after its first: each can be copied
    previous_token: torch.Tensor  # (L, H) circuits.previous_token_scores
    induction: torch.Tensor  # (L, H) circuits.induction_scores
    maps: torch.Tensor  # (L, H, T, T): the watched sequence's (the first evaluation sequence's) attention
    tokens: list[int]  # the watched sequence
    seconds: float


Report = EvalReport | DoneReport | CancelledReport


def half_losses(logits: torch.Tensor, ids: torch.Tensor, half: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The mean next-token loss over the first R's tokens 1..half−1 and over the second R's tokens half+1..;
    the second R's first token is left out of both (nothing before it predicts it)."""
    losses = nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (B, T−1)
    # losses[:, t] is the loss of token t + 1
    return losses[:, : half - 1].mean(), losses[:, half:].mean()


class Training:
    """One run: `run()` yields an EvalReport every `eval_every` steps (and at 0 and the last step), then done."""

    def __init__(self, config: InductionConfig) -> None:
        self.config = config
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            self.model = AttentionOnly(config)
        self.generator = torch.Generator().manual_seed(config.seed + 1)
        self.evaluation = sequences(config, EVAL_SEQUENCES, torch.Generator().manual_seed(config.seed + 2))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.started = time.perf_counter()

    @torch.no_grad()
    def evaluate(self, step: int) -> EvalReport:
        trace = Trace(steps=("softmax",))
        logits = self.model(self.evaluation, trace)  # (E, T, V)
        first, repeated = half_losses(logits, self.evaluation, self.config.half)
        layers = [trace.tensor(i, "softmax") for i in range(self.config.layers)]  # each (E, H, T, T)
        mean = [a.mean(dim=0) for a in layers]  # the scores are means over rows, so of the batch's mean map
        return EvalReport(step, self.config.steps, float(first), float(repeated),
                          circuits.previous_token_scores(mean, 0, self.config.half),
                          circuits.induction_scores(mean, 0, self.config.half),
                          torch.stack([a[0] for a in layers]), self.evaluation[0].tolist(),
                          time.perf_counter() - self.started)

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Report]:
        self.started = time.perf_counter()
        yield self.evaluate(0)
        for step in range(1, self.config.steps + 1):
            if stop():
                yield CancelledReport(step - 1, time.perf_counter() - self.started)
                return
            ids = sequences(self.config, self.config.batch, self.generator, varied=True)  # (B, T)
            logits = self.model(ids)
            loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, self.config.vocab), ids[:, 1:].reshape(-1))
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            if step % self.config.eval_every == 0 or step == self.config.steps:
                yield self.evaluate(step)
        yield DoneReport(self.config.steps, time.perf_counter() - self.started)
