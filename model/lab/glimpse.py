"""The glimpse lab: hard attention trained. A CNN + GRU decoder reads 1-4 handwritten digits off a 3 × 3 canvas in
reading order, attending over the 9 cells at each step, softly or by picking one cell, trained four ways.

Data: model/lab/glimpse_data.py (scikit-learn's 8 × 8 digits on 24 × 24 canvases; training, validation and test
canvases from disjoint digit images). Network and the four ways to attend: model/lab/glimpse_net.py.

Training objective, per batch of fresh training canvases, teacher-forced: the mean cross-entropy ℓ_t over the
target's steps (digits and END, nats; this is the `loss` reported), plus for `reinforce` the score-function
surrogate (glimpse_net.score_function_loss):
    reward      r_t = −ℓ_t, the log-likelihood of the right token at that step (each step's glimpse is credited with
                its own step's outcome only);
    baseline    b_t, one per step position t = 1..5: an exponential moving average of the batch's mean reward at t,
                b_t ← BASELINE_DECAY · b_t + (1 − BASELINE_DECAY) · mean r_t, 0 before the first step, set to the
                first batch's mean after it, and updated after each step's gradient; with `baseline=False`, b_t = 0;
    entropy     an entropy bonus −β · H(p_t) added to the surrogate, β = `entropy_bonus` (default 0.01).
The encoder and decoder learn through the glimpsed cell's annotation by backpropagation; the attention's W, U, v get
only the score-function term (and the entropy bonus's gradient). `gumbel` and `straight_through` train everything by
backpropagation through their relaxed weights, at a temperature annealed geometrically from `tau_start` at step 1 to
`tau_end` at the last step: τ(step) = tau_start · (tau_end / tau_start)^((step − 1) / (steps − 1)).
Adam, its learning rate falling from `lr` along a half cosine to FINAL_LR · lr, gradients clipped to a norm of CLIP.

Evaluation (every `eval_every` steps, at 0 and at the last step) on EVAL_CANVASES fixed validation canvases, greedy
(y_t = argmax, up to MAX_TARGET steps); the hard methods glimpse the argmax cell of p_t, without noise:
    accuracy        the share of canvases whose output up to and including its first END equals the target;
    digit_accuracy  the share of the canvases' digits read right at their own position (a missing one is wrong);
    entropy         the mean of H(p_t) in nats over the target's steps, teacher-forced;
    grad_variance   on GRAD_CANVASES fixed training canvases at the current weights (and temperature and baseline):
                    the method's gradient estimate g_r of the training objective with respect to W, U, v (P numbers),
                    drawn GRAD_REPEATS times with fresh samples (one torch.Generator seeded from the seed and step,
                    drawn in turn); grad_variance = (1/P) Σ_p Var_r(g_rp), the unbiased sample variance across the
                    repeats, averaged over the parameters; grad_mean_square = (1/P) Σ_p (mean_r g_rp)², the squared
                    signal beside it. Soft attention samples nothing, so its variance is 0 (up to float rounding).
    glimpses        for the first WATCHED test canvases: the weights over the 9 cells at each greedy step (one-hot
                    for the hard methods) with the digits emitted, and the canvas's pixels.
The done report: the same accuracies on TEST_CANVASES fixed test canvases. With one intra-op thread the same
settings give the same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from model.errors import LabInputError
from model.lab.glimpse_data import END, MAX_PIXEL, MAX_TARGET, PAD, SIDE, START, Canvases, draw, split
from model.lab.glimpse_net import METHODS, Decoded, GlimpseNet, entropy, score_function_loss
from model.lab.reports import CancelledReport, DoneReport

MAX_STEPS, MAX_BATCH, MAX_CHANNELS, MAX_HIDDEN, MAX_LR, MAX_SEED = 20_000, 256, 64, 256, 0.1, 2**31 - 1
MIN_HIDDEN = 4
MIN_TAU, MAX_TAU = 0.05, 10.0
MAX_ENTROPY_BONUS = 1.0
ANNOTATION = 64  # K, the width of a cell's annotation
ATTENTION = 32  # A, the width of the additive scores' hidden layer
CLIP = 1.0
FINAL_LR = 0.1
BASELINE_DECAY = 0.9
EVAL_CANVASES, TEST_CANVASES = 500, 500
GRAD_CANVASES, GRAD_REPEATS = 32, 16
WATCHED = 4


@dataclass(frozen=True)
class GlimpseConfig:
    """One run's settings. Limits: method one of METHODS; steps and eval_every 1 to MAX_STEPS; batch 1 to MAX_BATCH;
    channels 1 to MAX_CHANNELS; hidden MIN_HIDDEN to MAX_HIDDEN; lr above 0, at most MAX_LR; seed 0 to MAX_SEED;
    entropy_bonus 0 to MAX_ENTROPY_BONUS; tau_start and tau_end MIN_TAU to MAX_TAU.

    Measured at the defaults (bench/glimpse.py, seeds 0-2, one intra-op thread, 56-60 CPU seconds a run with its
    evaluations): test canvases read exactly 0.970-0.982 soft, 0.966-0.978 REINFORCE, 0.976-0.984 Gumbel-softmax,
    0.978-0.988 straight-through; REINFORCE without its baseline 0.950, 0.718 and 0.974. With 16 channels soft
    attention read 0.930 on seed 0 (0.970 of its digits), and on seed 0 a temperature from 1.0 to 0.3 left
    Gumbel-softmax at 0.792 after 3000 steps, from 1.0 to 0.1 at 0.496 (from 2.0 to 0.5: 0.962 of the validation
    canvases at step 1500): at a low temperature the relaxed sample is nearly one-hot and passes the scores little
    gradient."""

    method: str = "soft"
    steps: int = 2400
    seed: int = 0
    baseline: bool = True
    batch: int = 64
    lr: float = 3e-3
    eval_every: int = 150
    channels: int = 24
    hidden: int = 64
    entropy_bonus: float = 0.01
    tau_start: float = 2.0
    tau_end: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise LabInputError("lab_setting", ("method",), f"method is {self.method!r}; send one of "
                                f"{', '.join(METHODS)}", min=0, max=len(METHODS) - 1)
        if not isinstance(self.baseline, bool):
            raise LabInputError("lab_setting", ("baseline",), f"baseline is {self.baseline!r}; send true or false",
                                min=0, max=1)
        ranges: tuple[tuple[str, float, float, float], ...] = (
            ("steps", self.steps, 1, MAX_STEPS), ("seed", self.seed, 0, MAX_SEED),
            ("batch", self.batch, 1, MAX_BATCH), ("eval_every", self.eval_every, 1, MAX_STEPS),
            ("channels", self.channels, 1, MAX_CHANNELS), ("hidden", self.hidden, MIN_HIDDEN, MAX_HIDDEN),
        )
        for name, value, low, high in ranges:
            if not low <= value <= high:
                raise LabInputError("lab_setting", (name,), f"{name} is {value}; send {low} to {high}",
                                    min=low, max=high)
        reals: tuple[tuple[str, float, float, float, bool], ...] = (
            ("lr", self.lr, 0.0, MAX_LR, False), ("entropy_bonus", self.entropy_bonus, 0.0, MAX_ENTROPY_BONUS, True),
            ("tau_start", self.tau_start, MIN_TAU, MAX_TAU, True), ("tau_end", self.tau_end, MIN_TAU, MAX_TAU, True),
        )
        for name, real, low, high, closed in reals:
            inside = math.isfinite(real) and (low <= real if closed else low < real) and real <= high
            if not inside:
                raise LabInputError("lab_setting", (name,), f"{name} is {real}; send {'' if closed else 'above '}"
                                    f"{low}{' or more' if closed else ''}, at most {high}", min=low, max=high)


@dataclass(frozen=True)
class Watched:
    """A held-out canvas read greedily: weights (T, 9) over the cells at each step (the END step included; T is
    the output's length + 1, or MAX_TARGET when no END came), the digits emitted (END left out)."""

    canvas: int  # its index among the run's test canvases
    pixels: np.ndarray  # (24, 24) uint8, 0..16
    target: list[int]
    regions: torch.Tensor  # (T, 9)
    output: list[int]


@dataclass(frozen=True)
class EvalReport:
    """After `step` steps (0: the untrained network); see the module's docstring for each number."""

    step: int
    steps: int
    seconds: float
    loss: float | None  # the mean training cross-entropy over the steps since the last report; None at step 0
    eval_loss: float  # the validation canvases' teacher-forced cross-entropy, nats per target token
    accuracy: float
    digit_accuracy: float
    entropy: float
    grad_variance: float
    grad_mean_square: float
    tau: float | None  # the temperature of the last step (gumbel, straight_through); None for the others
    glimpses: list[Watched]


@dataclass(frozen=True)
class GlimpseDoneReport(DoneReport):
    """After the last step, on the run's test canvases."""

    test_accuracy: float
    digit_accuracy: float


Report = EvalReport | GlimpseDoneReport | CancelledReport


@dataclass(frozen=True)
class Batch:
    """Canvases as tensors: pixels (B, 24, 24) float, inputs (B, T) START y_1 .. y_{T−1}, targets (B, T) with PAD."""

    pixels: torch.Tensor
    inputs: torch.Tensor
    targets: torch.Tensor

    @classmethod
    def of(cls, canvases: Canvases) -> Batch:
        targets = torch.from_numpy(canvases.targets())  # (B, T)
        inputs = torch.cat([torch.full((len(canvases), 1), START), targets[:, :-1].clamp_min(0)], dim=1)  # (B, T)
        return cls(torch.from_numpy(canvases.pixels.astype(np.float32)), inputs, targets)


@dataclass(frozen=True)
class Objective:
    total: torch.Tensor  # what is minimised
    cross_entropy: torch.Tensor  # the mean over the target's steps, nats
    rewards: torch.Tensor  # (B, T): −ℓ_t, 0 at PAD
    decoded: Decoded


def temperature(config: GlimpseConfig, step: int) -> float:
    """τ at step `step` (1-based): geometric from tau_start at step 1 to tau_end at the last step."""
    progress = (step - 1) / max(1, config.steps - 1)
    return float(config.tau_start * (config.tau_end / config.tau_start) ** progress)


def learning_rate(config: GlimpseConfig, step: int) -> float:
    progress = (step - 1) / max(1, config.steps - 1)
    return config.lr * (FINAL_LR + (1 - FINAL_LR) * 0.5 * (1 + math.cos(math.pi * progress)))


def objective(net: GlimpseNet, annotations: torch.Tensor, batch: Batch, *, tau: float, baseline: torch.Tensor,
              entropy_bonus: float, generator: torch.Generator | None) -> Objective:
    """The training objective on `batch` from its annotations (B, R, K), glimpses sampled (see the docstring)."""
    decoded = net.decode(annotations, batch.inputs, sample=True, tau=tau, generator=generator)
    real = batch.targets != PAD  # (B, T)
    per_step = nn.functional.cross_entropy(decoded.logits.transpose(1, 2), batch.targets, ignore_index=PAD,
                                           reduction="none")  # (B, T), 0 at PAD
    cross_entropy = per_step.sum() / real.sum()
    total = cross_entropy
    if net.method == "reinforce" and decoded.choices is not None:
        total = total + score_function_loss(decoded.log_p, decoded.choices, -per_step, baseline, entropy_bonus, real)
    return Objective(total, cross_entropy, -per_step.detach(), decoded)


def gradient_estimates(net: GlimpseNet, batch: Batch, *, tau: float, baseline: torch.Tensor, entropy_bonus: float,
                       repeats: int, generator: torch.Generator) -> torch.Tensor:
    """(repeats, P): the objective's gradient with respect to W, U, v, flattened, once per repeat at the same
    weights; only the glimpses' samples differ (drawn from `generator` in turn)."""
    with torch.no_grad():
        annotations = net.encoder(batch.pixels)  # (B, R, K)
    params = net.attention_parameters()
    rows = []
    for _ in range(repeats):
        total = objective(net, annotations, batch, tau=tau, baseline=baseline, entropy_bonus=entropy_bonus,
                          generator=generator).total
        rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(total, params)]))  # (P,)
    return torch.stack(rows)  # (R, P)


def grad_variance(estimates: torch.Tensor) -> tuple[float, float]:
    """estimates (R, P) -> (mean over p of the unbiased variance across r, mean over p of the squared mean)."""
    return float(estimates.var(dim=0, correction=1).mean()), float(estimates.mean(dim=0).square().mean())


def read(net: GlimpseNet, pixels: torch.Tensor) -> tuple[list[list[int]], list[bool], Decoded]:
    """Greedy reading: per canvas the digits before its first END, whether an END came, and the decoder's pass."""
    decoded = net(pixels, max_steps=MAX_TARGET)
    outputs, ended = [], []
    for row in decoded.logits.argmax(dim=-1).tolist():  # (B, T)
        cut = row.index(END) if END in row else len(row)
        outputs.append(row[:cut])
        ended.append(END in row)
    return outputs, ended, decoded


def accuracies(net: GlimpseNet, canvases: Canvases) -> tuple[float, float]:
    """(the share of canvases read exactly, END included; the share of their digits read at their position)."""
    outputs, ended, _ = read(net, Batch.of(canvases).pixels)
    exact = right = 0
    for i, (out, end) in enumerate(zip(outputs, ended, strict=True)):
        target = canvases.sequence(i)
        exact += end and out == target
        right += sum(j < len(out) and out[j] == d for j, d in enumerate(target))
    return exact / len(canvases), right / int(canvases.counts.sum())


def watch(net: GlimpseNet, canvases: Canvases) -> list[Watched]:
    outputs, ended, decoded = read(net, Batch.of(canvases).pixels)
    return [Watched(i, canvases.pixels[i].copy(), canvases.sequence(i),
                    decoded.weights[i, : len(out) + 1 if end else MAX_TARGET].clone(), out)
            for i, (out, end) in enumerate(zip(outputs, ended, strict=True))]


class Training:
    """One run: `run()` yields an EvalReport every `eval_every` steps (and at 0 and the last step), then done."""

    def __init__(self, config: GlimpseConfig) -> None:
        self.config = config
        parts = split(config.seed)
        self.pool = parts.train
        self.rng = np.random.default_rng([config.seed, 1])
        self.validation = draw(parts.validation, EVAL_CANVASES, np.random.default_rng([config.seed, 2]))
        self.test = draw(parts.test, TEST_CANVASES, np.random.default_rng([config.seed, 3]))
        self.fixed = Batch.of(draw(parts.train, GRAD_CANVASES, np.random.default_rng([config.seed, 4])))
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            self.model = GlimpseNet(config.method, config.channels, config.hidden, ANNOTATION, ATTENTION)
        self.generator = torch.Generator().manual_seed(config.seed)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.baseline = torch.zeros(MAX_TARGET)  # (T,): b_t
        self.baseline_started = False
        self.tau = temperature(config, 1)
        self.started = time.perf_counter()

    def update_baseline(self, rewards: torch.Tensor, real: torch.Tensor) -> None:
        """b_t ← decay · b_t + (1 − decay) · the batch's mean reward at t (the first batch's mean at first)."""
        if not self.config.baseline:
            return
        counts = real.sum(dim=0)  # (T,)
        means = torch.where(counts > 0, (rewards * real).sum(dim=0) / counts.clamp_min(1), self.baseline)  # (T,)
        self.baseline = means if not self.baseline_started else BASELINE_DECAY * self.baseline + (
            1 - BASELINE_DECAY) * means
        self.baseline_started = True

    def train_step(self, step: int) -> float:
        self.tau = temperature(self.config, step)
        for group in self.optimizer.param_groups:
            group["lr"] = learning_rate(self.config, step)
        batch = Batch.of(draw(self.pool, self.config.batch, self.rng))
        result = objective(self.model, self.model.encoder(batch.pixels), batch, tau=self.tau,
                           baseline=self.baseline, entropy_bonus=self.config.entropy_bonus, generator=self.generator)
        self.optimizer.zero_grad()
        result.total.backward()
        nn.utils.clip_grad_norm_(self.model.parameters(), CLIP)
        self.optimizer.step()
        self.update_baseline(result.rewards, batch.targets != PAD)
        return result.cross_entropy.item()

    def estimates(self, step: int) -> torch.Tensor:
        """The GRAD_REPEATS gradient estimates (R, P) on the fixed canvases at the current weights."""
        generator = torch.Generator().manual_seed(self.config.seed * MAX_STEPS + step)
        return gradient_estimates(self.model, self.fixed, tau=self.tau, baseline=self.baseline,
                                  entropy_bonus=self.config.entropy_bonus, repeats=GRAD_REPEATS, generator=generator)

    def evaluate(self, step: int, loss: float | None) -> EvalReport:
        variance, mean_square = grad_variance(self.estimates(step))
        with torch.no_grad():
            batch = Batch.of(self.validation)
            decoded = self.model(batch.pixels, batch.inputs)
            real = batch.targets != PAD  # (B, T)
            eval_loss = nn.functional.cross_entropy(decoded.logits.transpose(1, 2), batch.targets, ignore_index=PAD)
            mean_entropy = (entropy(decoded.log_p) * real).sum() / real.sum()
            accuracy, digit_accuracy = accuracies(self.model, self.validation)
            glimpses = watch(self.model, self.test.take(list(range(WATCHED))))
        tau = self.tau if self.config.method in ("gumbel", "straight_through") else None
        return EvalReport(step, self.config.steps, time.perf_counter() - self.started, loss, float(eval_loss),
                          accuracy, digit_accuracy, float(mean_entropy), variance, mean_square, tau, glimpses)

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Report]:
        self.started = time.perf_counter()
        yield self.evaluate(0, None)
        losses: list[float] = []
        for step in range(1, self.config.steps + 1):
            if stop():
                yield CancelledReport(step - 1, time.perf_counter() - self.started)
                return
            losses.append(self.train_step(step))
            if step % self.config.eval_every == 0 or step == self.config.steps:
                yield self.evaluate(step, sum(losses) / len(losses))
                losses = []
        with torch.no_grad():
            test_accuracy, digit_accuracy = accuracies(self.model, self.test)
        yield GlimpseDoneReport(self.config.steps, time.perf_counter() - self.started, test_accuracy, digit_accuracy)


@dataclass(frozen=True)
class Prediction:
    """A canvas read greedily: the digits and the weights (T, 9) of each step over the cells (END step included)."""

    output: list[int]
    regions: torch.Tensor


@torch.no_grad()
def predict(model: GlimpseNet | Training, canvas: np.ndarray) -> Prediction:
    """The model's reading of one canvas, (24, 24) values 0..16."""
    net = model.model if isinstance(model, Training) else model
    pixels = np.asarray(canvas, dtype=np.float32)
    if pixels.shape != (SIDE, SIDE):
        raise LabInputError("lab_setting", ("canvas",), f"canvas is {'x'.join(map(str, pixels.shape))}; send "
                            f"{SIDE}x{SIDE} values", min=0, max=MAX_PIXEL)
    if not (np.isfinite(pixels).all() and pixels.min() >= 0 and pixels.max() <= MAX_PIXEL):
        raise LabInputError("lab_setting", ("canvas",), f"canvas values must be 0 to {MAX_PIXEL}", min=0,
                            max=MAX_PIXEL)
    outputs, ended, decoded = read(net, torch.from_numpy(pixels)[None])
    return Prediction(outputs[0], decoded.weights[0, : len(outputs[0]) + 1 if ended[0] else MAX_TARGET].clone())
