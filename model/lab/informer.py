"""The Informer lab: a small Informer-style encoder forecasts a real series, with ProbSparse or full self-attention.

Data (model/lab/informer_data.py): statsmodels' weekly Mauna Loa CO₂ or yearly sunspot numbers, split in time into
training, validation and test parts (70/10/20 %), scaled with the training part's mean and standard deviation;
a window of `window` values (L) predicts the next `horizon` values (H).

The network (Zhou et al., AAAI 2021: Informer's encoder, as Time-Series-Library writes it):

    level  = the window's mean; the network reads x − level and its forecast is added to level (so a series whose
             test part lies above the training part's values, as CO₂'s does, is read as the same shapes)
    embed  = Conv1d(1 → D, k=3, circular padding, no bias) of the values + a fixed sinusoidal position encoding
    `layers` encoder layers, each  x = LN(x + attention(x));  x = LN(x + W₂ GELU(W₁ x))   (post-norm, 4·D wide)
    between two encoder layers a distilling layer: Conv1d(D → D, k=3, circular) → BatchNorm1d → ELU →
             MaxPool1d(k=3, stride 2, padding 1), so the length goes L → ⌈L/2⌉ → ⌈L/4⌉ …
    a final LayerNorm, then a linear head from the flattened last sequence (length × D) to the H values.

Attention: model/nets/attention.py's MultiHeadAttention projections (W_q, W_k, W_v, W_o; heads of D / heads), with
its inner attention full softmax attention or ProbSparse (model/lab/informer_net.py). ProbSparse's key sample comes
from the network's training generator (seeded from the run's seed, fresh each step) in training mode, and from a
generator seeded with EVAL_SAMPLE_SEED at the start of every forward in eval mode, so an evaluation or `watch`
repeats its answer.

Training: Adam, its learning rate falling from `lr` along a half cosine to FINAL_LR · lr at the last step, on
random batches of training windows (torch.Generator from the seed), the loss the mean squared error of the scaled
forecast; initialisation from `seed`. Evaluations report the validation windows' MSE in the series' units (ppm², …);
the run ends with the test windows' MSE beside the seasonal-naive and linear baselines' on the same windows.
With one intra-op thread the same settings give the same numbers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from model.errors import LabInputError
from model.lab import informer_data as data
from model.lab.informer_data import SERIES, Series, load_series
from model.lab.informer_net import Distil, EncoderLayer, LayerAttention, encoded_length, position_encoding
from model.lab.reports import CancelledReport

Tensor = torch.Tensor

__all__ = ["SERIES", "Series", "load_series", "InformerConfig", "EvalReport", "InformerDone", "Report", "Training",
           "Informer", "LayerAttention", "Watched", "test_window_count", "watch"]

MAX_WINDOW, MAX_HORIZON, MAX_LAYERS, MAX_HEADS, MAX_D_MODEL, MAX_FACTOR = 1024, 256, 4, 8, 256, 64
MAX_STEPS, MAX_BATCH, MAX_LR, MAX_SEED = 20_000, 256, 0.1, 2**31 - 1
MIN_WINDOW = 8
ATTENTIONS = ("probsparse", "full")
EVAL_SAMPLE_SEED = 1234  # the key sample of every forward in eval mode
SAMPLE_STREAM = 3  # training's key samples: torch.Generator().manual_seed(seed + SAMPLE_STREAM)
BATCH_STREAM = 1  # training's batches: torch.Generator().manual_seed(seed + BATCH_STREAM)
EVAL_BATCH = 256  # windows per forward when evaluating
FINAL_LR = 0.1  # the last step's learning rate, a fraction of `lr`


@dataclass(frozen=True)
class InformerConfig:
    """One run's settings. Limits: window MIN_WINDOW to MAX_WINDOW and at least the series' season (the
    seasonal-naive baseline reads the last season from it), window + horizon within the training part;
    horizon 1 to MAX_HORIZON and within the validation part; layers, heads, d_model (a multiple of heads),
    factor, steps, eval_every, batch from 1, seed from 0, to their MAX_*; lr above 0, at most MAX_LR.

    The defaults (co2: a window of 96 weeks, almost two seasons, forecasting the next 24) train in 36-52 s on this
    2-core machine with one thread; over seeds 0-2 both attentions' test MSE is 0.28-0.33 ppm², the seasonal-naive
    forecast's 3.50 and the linear model's 0.45; ProbSparse's is within 7 % of full attention's (bench/informer.py).
    2000 steps gained nothing on the test windows (0.27-0.31); without the learning rate's decay the validation MSE
    still jumped between 0.39 and 0.76 at the last steps. Sunspots at the same settings has 97 training windows:
    both networks' test MSE (about 5500) is far above the seasonal-naive forecast's (1410)."""

    series: str = "co2"
    attention: str = "probsparse"
    window: int = 96
    horizon: int = 24
    layers: int = 2
    heads: int = 4
    d_model: int = 32
    factor: int = 5
    steps: int = 1500
    batch: int = 32
    lr: float = 1e-3
    seed: int = 0
    eval_every: int = 50

    def __post_init__(self) -> None:
        for field, choice, allowed in (("series", self.series, tuple(SERIES)), ("attention", self.attention,
                                                                              ATTENTIONS)):
            if choice not in allowed:
                raise LabInputError("lab_setting", (field,), f"{field} is {choice!r}; send one of {', '.join(allowed)}",
                                    min=0, max=len(allowed) - 1)
        ranges: tuple[tuple[str, float, float, float], ...] = (
            ("window", self.window, MIN_WINDOW, MAX_WINDOW), ("horizon", self.horizon, 1, MAX_HORIZON),
            ("layers", self.layers, 1, MAX_LAYERS), ("heads", self.heads, 1, MAX_HEADS),
            ("d_model", self.d_model, 1, MAX_D_MODEL), ("factor", self.factor, 1, MAX_FACTOR),
            ("steps", self.steps, 1, MAX_STEPS), ("batch", self.batch, 1, MAX_BATCH),
            ("seed", self.seed, 0, MAX_SEED), ("eval_every", self.eval_every, 1, MAX_STEPS),
        )
        for name, value, low, high in ranges:
            if not low <= value <= high:
                raise LabInputError("lab_setting", (name,), f"{name} is {value}; send {low} to {high}",
                                    min=low, max=high)
        if self.d_model % self.heads:
            raise LabInputError("lab_setting", ("d_model",),
                                f"d_model is {self.d_model}; send a multiple of heads ({self.heads})",
                                min=self.heads, max=MAX_D_MODEL - MAX_D_MODEL % self.heads)
        if not (math.isfinite(self.lr) and 0.0 < self.lr <= MAX_LR):
            raise LabInputError("lab_setting", ("lr",), f"lr is {self.lr}; send above 0, at most {MAX_LR}",
                                min=0.0, max=MAX_LR)
        series = load_series(self.series)
        train_end, validation_end = data.part_bounds(len(series.values))
        longest = min(train_end - self.horizon, MAX_WINDOW)
        if not series.season <= self.window <= longest:
            raise LabInputError("lab_setting", ("window",),
                                f"window is {self.window}; {self.series} (season {series.season}, training part "
                                f"{train_end} values, horizon {self.horizon}) takes {series.season} to {longest}",
                                min=series.season, max=longest)
        shortest_part = min(validation_end - train_end, len(series.values) - validation_end)
        if self.horizon > shortest_part:
            raise LabInputError("lab_setting", ("horizon",),
                                f"horizon is {self.horizon}; {self.series}'s validation part has {shortest_part} "
                                f"values: send 1 to {shortest_part}", min=1, max=shortest_part)


class Informer(nn.Module):
    """The encoder (module docstring) and a linear head: x (B, L) scaled values -> (B, H) scaled forecast."""

    def __init__(self, config: InformerConfig) -> None:
        super().__init__()
        d = config.d_model
        self.embed = nn.Conv1d(1, d, 3, padding=1, padding_mode="circular", bias=False)
        self.layers = nn.ModuleList(EncoderLayer(d, config.heads, config.attention, config.factor)
                                    for _ in range(config.layers))
        self.distils = nn.ModuleList(Distil(d) for _ in range(config.layers - 1))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(encoded_length(config.window, config.layers) * d, config.horizon)
        self.generator = torch.Generator().manual_seed(config.seed + SAMPLE_STREAM)

    def encode(self, x: Tensor, trace: list[LayerAttention] | None = None) -> Tensor:
        """x (B, L) of any length L -> the encoder's output (B, encoded_length(L, layers), D)."""
        generator = self.generator if self.training else torch.Generator().manual_seed(EVAL_SAMPLE_SEED)
        h = self.embed(x[:, None, :]).transpose(1, 2)  # (B, L, D)
        h = h + position_encoding(x.shape[1], h.shape[2])
        for i, layer in enumerate(self.layers):
            if i:
                h = self.distils[i - 1](h)  # (B, ⌈L/2⌉, D)
            h = layer(h, generator, trace)
        out: Tensor = self.norm(h)
        return out

    def forward(self, x: Tensor, trace: list[LayerAttention] | None = None) -> Tensor:
        """x (B, L) scaled -> (B, H) scaled forecast; each layer's attention on x[0] appended to `trace`."""
        level = x.mean(dim=1, keepdim=True)  # (B, 1)
        out: Tensor = self.head(self.encode(x - level, trace).flatten(1)) + level  # (B, H)
        return out


@dataclass(frozen=True)
class EvalReport:
    """After `step` steps (0: the untrained network): train_mse the mean training-batch MSE since the last
    evaluation (None at step 0), val_mse the validation windows' MSE; both in the series' units squared."""

    step: int
    steps: int
    seconds: float
    train_mse: float | None
    val_mse: float


@dataclass(frozen=True)
class InformerDone:
    """The end of a finished run: the test windows' MSE of the network, the seasonal-naive and the linear model."""

    steps: int
    seconds: float
    test_mse: float
    naive_mse: float
    linear_mse: float


Report = EvalReport | InformerDone | CancelledReport


def test_window_count(config: InformerConfig) -> int:
    """How many test windows the config's series has (watch's indices are 0 .. count − 1)."""
    return len(data.prepare(config.series, config.window, config.horizon).starts["test"])


def learning_rate(config: InformerConfig, step: int) -> float:
    """Step `step`'s (1-based) learning rate: from lr along a half cosine down to FINAL_LR · lr at the last step."""
    done = (step - 1) / max(config.steps - 1, 1)
    return config.lr * (FINAL_LR + (1.0 - FINAL_LR) * 0.5 * (1.0 + math.cos(math.pi * done)))


class Training:
    """One run: `run()` yields an EvalReport at step 0, every `eval_every` steps and at the last, then InformerDone."""

    def __init__(self, config: InformerConfig) -> None:
        self.config = config
        self.data = data.prepare(config.series, config.window, config.horizon)
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            self.model = Informer(config)
        self.batches = torch.Generator().manual_seed(config.seed + BATCH_STREAM)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.started = time.perf_counter()

    def mse(self, part: str) -> float:
        """The network's MSE on a part's windows, in the series' units squared (eval mode, no grad)."""
        history, truth = data.gather(self.data.scaled, self.data.starts[part], self.config.window, self.config.horizon)
        was_training = self.model.training
        self.model.eval()
        total = 0.0
        with torch.no_grad():
            for first in range(0, len(history), EVAL_BATCH):
                forecast = self.model(history[first: first + EVAL_BATCH])  # (E, H)
                total += float(((forecast - truth[first: first + EVAL_BATCH]).double() ** 2).sum())
        self.model.train(was_training)
        return total / truth.numel() * self.data.scaling.std ** 2

    def baselines(self) -> tuple[float, float]:
        """The seasonal-naive and linear models' MSE on the test windows, in the series' units squared."""
        c, values = self.config, self.data.series.values
        test = self.data.starts["test"]
        history, truth = data.windows(values, test, c.window, c.horizon)
        naive = data.seasonal_naive(values, test, c.window, c.horizon, self.data.series.season)
        scale = self.data.scaling.scale
        train_history, train_truth = data.windows(values, self.data.starts["train"], c.window, c.horizon)
        fitted = data.fit_linear(scale(train_history), scale(train_truth))
        linear = self.data.scaling.unscale(data.linear_forecast(fitted, scale(history)))
        return float(((naive - truth) ** 2).mean()), float(((linear - truth) ** 2).mean())

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Report]:
        c = self.config
        self.started = time.perf_counter()
        train = torch.from_numpy(self.data.starts["train"])
        validation = self.mse("validation")
        yield EvalReport(0, c.steps, time.perf_counter() - self.started, None, validation)
        losses: list[float] = []
        self.model.train()
        for step in range(1, c.steps + 1):
            if stop():
                yield CancelledReport(step - 1, time.perf_counter() - self.started)
                return
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(c, step)
            picked = train[torch.randint(len(train), (c.batch,), generator=self.batches)].numpy()
            history, truth = data.gather(self.data.scaled, picked, c.window, c.horizon)
            loss = nn.functional.mse_loss(self.model(history), truth)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            losses.append(float(loss.detach()))
            if step % c.eval_every == 0 or step == c.steps:
                train_mse = sum(losses) / len(losses) * self.data.scaling.std ** 2
                losses, validation = [], self.mse("validation")
                yield EvalReport(step, c.steps, time.perf_counter() - self.started, train_mse, validation)
        naive, linear = self.baselines()
        test = self.mse("test")
        yield InformerDone(c.steps, time.perf_counter() - self.started, test, naive, linear)


@dataclass(frozen=True)
class Watched:
    """A test window: its index and first position in the series, the window's and horizon's decimal years, the
    history, the truth, the network's and the seasonal-naive forecasts (series units), every layer's attention."""

    index: int
    start: int
    times: list[float]
    history: list[float]
    truth: list[float]
    forecast: list[float]
    naive: list[float]
    layers: list[LayerAttention]


def watch(model: Informer, config: InformerConfig, index: int) -> Watched:
    """Test window `index` through the network in eval mode without gradients (its mode restored afterwards)."""
    prepared = data.prepare(config.series, config.window, config.horizon)
    starts = prepared.starts["test"]
    if not 0 <= index < len(starts):
        raise LabInputError("lab_setting", ("index",), f"index is {index}; send 0 to {len(starts) - 1}",
                            min=0, max=len(starts) - 1)
    start = int(starts[index])
    history, _ = data.gather(prepared.scaled, starts[index: index + 1], config.window, config.horizon)
    trace: list[LayerAttention] = []
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            forecast = prepared.scaling.unscale(model(history, trace)[0].double().numpy())
    finally:
        model.train(was_training)
    values, span = prepared.series.values, slice(start, start + config.window + config.horizon)
    naive = data.seasonal_naive(values, starts[index: index + 1], config.window, config.horizon,
                                prepared.series.season)[0]
    return Watched(index=index, start=start, times=prepared.series.times[span].tolist(),
                   history=values[start: start + config.window].tolist(),
                   truth=values[start + config.window: span.stop].tolist(), forecast=forecast.tolist(),
                   naive=naive.tolist(), layers=trace)
