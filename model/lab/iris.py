"""The notes' tiny transformer on Iris, trained with attnscope's own backward.

Data: model/lab/data/iris.csv, the 150 flowers of Fisher's Iris data (R. A. Fisher, "The use of multiple
measurements in taxonomic problems", Annals of Eugenics 7, 1936; public domain), in the row order of
the copy scikit-learn ships (sklearn/datasets/data/iris.csv): four measurements in centimetres
(sepal length, sepal width, petal length, petal width) and the species name.

Split: fixed and stratified, 120 training and 30 test flowers, 10 test flowers of each species. The
flowers of each species are taken in file order and permuted by torch.randperm with
torch.Generator().manual_seed(SPLIT_SEED); the first 10 of the permutation are that species' test
flowers. Both index lists are sorted. Features are standardised with the training split's mean and
(population) standard deviation, never the test split's.

Network (the notes' example): Dense(4 -> 32) + ReLU -> reshape (B, 4, 8): four tokens of width 8 ->
multi-head attention (E = 8, H = 2, biases; model.nets.attention.MultiHeadAttention in float64) -> the mean
over the 4 tokens -> Dense(8 -> 3) -> softmax cross-entropy. Every backward is attnscope's own
(model/lab/layers.py, and model/lab/backward.py for attention); SGD and Adam are in model/lab/layers.py.

Initialisation: torch.Generator().manual_seed(seed) draws, in this order, the embedding weight (4 x 32),
W_q, W_k, W_v, W_o (8 x 8 each, in x out) and the classifier weight (8 x 3), each uniform in
[-a, a] with a = sqrt(6 / (in + out)) (Glorot & Bengio 2010); every bias starts at 0. The same
generator then draws each epoch's order of the training flowers (torch.randperm). Same seed, same
settings: the same numbers, epoch by epoch.
"""

from __future__ import annotations

import csv
import functools
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from model.errors import IrisInputError
from model.lab import layers
from model.lab.backward import AttentionCache, attention_backward, attention_forward
from model.nets.attention import MultiHeadAttention
from model.trace import Trace, select

DATA_FILE = Path(__file__).resolve().parent / "data" / "iris.csv"
FEATURES = ("sepal_length", "sepal_width", "petal_length", "petal_width")
CLASSES = ("setosa", "versicolor", "virginica")
SPLIT_SEED = 0
TEST_PER_CLASS = 10

SEQ_LEN = 4  # tokens: the 32 numbers of the embedding cut into 4 rows
EMB_DIM = 8  # E, the width of a token
N_HEADS = 2  # H

MAX_EPOCHS = 2000
MAX_LR = 1.0
MAX_SEED = 2**32 - 1
TRAIN_SIZE = 120
TEST_SIZE = 30
MAX_FEATURE = 100.0  # cm; keeps every standardised input, and so every logit, finite

DTYPE = torch.float64


@dataclass(frozen=True)
class IrisData:
    """The 150 flowers, their fixed split and the training split's statistics."""

    rows: torch.Tensor  # (150, 4) measurements in cm
    labels: torch.Tensor  # (150,) class indices into CLASSES
    train: torch.Tensor  # (120,) row indices, ascending
    test: torch.Tensor  # (30,) row indices, ascending
    mean: torch.Tensor  # (4,) of the training rows
    std: torch.Tensor  # (4,) of the training rows (population standard deviation)

    def standardise(self, rows: torch.Tensor) -> torch.Tensor:
        """(x - mean) / std with the training split's statistics."""
        return (rows - self.mean) / self.std  # (N, 4)


def stratified_split(labels: torch.Tensor, per_class: int = TEST_PER_CLASS,
                     seed: int = SPLIT_SEED) -> tuple[torch.Tensor, torch.Tensor]:
    """(train, test) row indices: `per_class` test rows of each class, drawn as the module docstring says."""
    generator = torch.Generator().manual_seed(seed)
    test = []
    for c in range(int(labels.max()) + 1):
        members = (labels == c).nonzero().flatten()  # (n_c,) in file order
        order = torch.randperm(members.numel(), generator=generator)
        test.append(members[order[:per_class]])
    test_rows = torch.cat(test).sort().values  # (C * per_class,)
    is_test = torch.zeros(labels.numel(), dtype=torch.bool)
    is_test[test_rows] = True
    return (~is_test).nonzero().flatten(), test_rows


@functools.cache
def load() -> IrisData:
    """The packaged data set with its split and statistics (read once)."""
    with DATA_FILE.open(newline="", encoding="utf-8") as f:
        records = list(csv.DictReader(f))
    rows = torch.tensor([[float(r[name]) for name in FEATURES] for r in records], dtype=DTYPE)  # (150, 4)
    labels = torch.tensor([CLASSES.index(r["species"]) for r in records])  # (150,)
    train, test = stratified_split(labels)
    mean = rows[train].mean(dim=0)  # (4,)
    std = rows[train].std(dim=0, correction=0)  # (4,)
    return IrisData(rows=rows, labels=labels, train=train, test=test, mean=mean, std=std)


def _glorot(fan_in: int, fan_out: int, generator: torch.Generator) -> torch.Tensor:
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    return (torch.rand(fan_in, fan_out, generator=generator, dtype=DTYPE) * 2.0 - 1.0) * bound  # (in, out)


ATTENTION_PARAMETERS = ("query", "key", "value", "output")  # the layer's nn.Linear modules
_GRADIENT_NAMES = {"query": "q", "key": "k", "value": "v", "output": "o"}  # model/lab/backward.py's w_q, b_q, ...


@dataclass
class ForwardCache:
    """What the backward needs from one training forward."""

    x: torch.Tensor  # (B, 4) standardised features
    embedded: torch.Tensor  # (B, 32) before ReLU
    tokens: torch.Tensor  # (B, 4, 8) after ReLU
    attention: AttentionCache
    pooled: torch.Tensor  # (B, 8)


class IrisTransformer:
    """The network's parameters, its forward and its backward (module docstring)."""

    def __init__(self, seed: int = 0) -> None:
        generator = torch.Generator().manual_seed(seed)
        self.embed_weight = _glorot(4, SEQ_LEN * EMB_DIM, generator)  # (4, 32)
        self.embed_bias = torch.zeros(SEQ_LEN * EMB_DIM, dtype=DTYPE)
        self.attention = MultiHeadAttention(EMB_DIM, N_HEADS).to(DTYPE).requires_grad_(False)
        for name in ATTENTION_PARAMETERS:
            linear = getattr(self.attention, name)
            linear.weight.copy_(_glorot(EMB_DIM, EMB_DIM, generator).T)  # nn.Linear keeps out x in
            linear.bias.zero_()
        self.classifier_weight = _glorot(EMB_DIM, len(CLASSES), generator)  # (8, 3)
        self.classifier_bias = torch.zeros(len(CLASSES), dtype=DTYPE)
        self.generator = generator  # goes on to draw the epochs' orders

    def parameters(self) -> layers.Parameters:
        """Every trainable tensor by name; the attention's in nn.Linear's layout (out x in)."""
        found = {"embed.weight": self.embed_weight, "embed.bias": self.embed_bias}
        for name in ATTENTION_PARAMETERS:
            linear = getattr(self.attention, name)
            found[f"attention.{name}.weight"] = linear.weight.data
            found[f"attention.{name}.bias"] = linear.bias.data
        found["classifier.weight"] = self.classifier_weight
        found["classifier.bias"] = self.classifier_bias
        return found

    def load(self, parameters: layers.Parameters) -> None:
        """Copy parameters (as `parameters()` names them) into this network."""
        for name, p in self.parameters().items():
            p.copy_(parameters[name])

    def embed(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(before ReLU (B, 32), tokens (B, 4, 8)) of standardised features x (B, 4)."""
        embedded = layers.dense(x, self.embed_weight, self.embed_bias)  # (B, 32)
        tokens = layers.relu(embedded).reshape(-1, SEQ_LEN, EMB_DIM)  # (B, 4, 8)
        return embedded, tokens

    def head(self, mixed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(pooled (B, 8), logits (B, 3)) of the attention's output (B, 4, 8)."""
        pooled = layers.mean_tokens(mixed)  # (B, 8)
        return pooled, layers.dense(pooled, self.classifier_weight, self.classifier_bias)  # (B, 3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ForwardCache]:
        """Logits (B, 3) of standardised features x (B, 4), and the cache for `backward`."""
        embedded, tokens = self.embed(x)
        mixed, attention_cache = attention_forward(self.attention, tokens)  # (B, 4, 8)
        pooled, logits = self.head(mixed)
        return logits, ForwardCache(x=x, embedded=embedded, tokens=tokens, attention=attention_cache, pooled=pooled)

    def backward(self, cache: ForwardCache, d_logits: torch.Tensor) -> layers.Parameters:
        """dL/d every parameter (named and shaped as `parameters()`) from dL/dlogits (B, 3)."""
        d_pooled, d_cls_w, d_cls_b = layers.dense_backward(cache.pooled, self.classifier_weight, d_logits)
        d_mixed = layers.mean_tokens_backward(d_pooled, SEQ_LEN)  # (B, 4, 8)
        d_attention = attention_backward(self.attention, cache.attention, d_mixed)
        d_tokens = d_attention["queries"] + d_attention["keys"] + d_attention["values"]  # (B, 4, 8): self-attention
        d_embedded = layers.relu_backward(cache.embedded, d_tokens.reshape(-1, SEQ_LEN * EMB_DIM))  # (B, 32)
        _, d_embed_w, d_embed_b = layers.dense_backward(cache.x, self.embed_weight, d_embedded)
        grads = {"embed.weight": d_embed_w, "embed.bias": d_embed_b}
        for name in ATTENTION_PARAMETERS:
            short = _GRADIENT_NAMES[name]
            grads[f"attention.{name}.weight"] = d_attention[f"w_{short}"].T  # (in, out) -> nn.Linear's (out, in)
            grads[f"attention.{name}.bias"] = d_attention[f"b_{short}"]
        grads["classifier.weight"] = d_cls_w
        grads["classifier.bias"] = d_cls_b
        return grads

    @torch.no_grad()
    def evaluate(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(logits (B, 3), attention weights (B, H, 4, 4)) of standardised features x (B, 4), without a cache."""
        _, tokens = self.embed(x)
        trace = Trace(layers=[0], steps=["softmax"])
        mixed = self.attention(tokens, record=trace.recorder(0))  # (B, 4, 8)
        _, logits = self.head(mixed)
        return logits, trace.tensor(0, "softmax")

    @torch.no_grad()
    def trace(self, x: torch.Tensor) -> dict[str, Any]:
        """Every step of the attention layer for one flower's standardised features x (4,), in the
        shape of model.lab.toy.run_toy's answer (the weights in x out), plus the biases."""
        _, tokens = self.embed(x[None])  # (1, 4, 8)
        trace = Trace(layers=[0])
        self.attention(tokens, record=trace.recorder(0))
        steps = {**select(trace[0]), "input": {"q": tokens[0], "k": tokens[0], "v": tokens[0]}}
        linears = [getattr(self.attention, name) for name in ATTENTION_PARAMETERS]
        short = [_GRADIENT_NAMES[name] for name in ATTENTION_PARAMETERS]
        return {
            "d_model": EMB_DIM, "n_heads": N_HEADS, "d_head": self.attention.d_keys,
            "d_keys": self.attention.d_keys, "d_values": self.attention.d_values, "scale": self.attention.scale,
            "variant": "scaled_dot", "temperature": 1.0, "seed": 0,  # no random draw in scaled_dot attention
            "straight_through": False, "positions": "none",
            "hidden_keys": [], "soft": None, "additive": None, "steps": steps,
            "weights": {s: lin.weight.T.clone() for s, lin in zip(short, linears, strict=True)},  # (in, out)
            "biases": {s: lin.bias.clone() for s, lin in zip(short, linears, strict=True)},
        }


def check_features(features: list[float]) -> torch.Tensor:
    """A flower's four measurements (cm) as a tensor (4,); IrisInputError names the one at fault."""
    if len(features) != len(FEATURES):
        raise IrisInputError("iris_features", ("features",),
                             f"features holds {len(features)} numbers; send 4: {', '.join(FEATURES)} in cm",
                             count=len(features))
    for i, value in enumerate(features):
        if not (math.isfinite(value) and 0.0 <= value <= MAX_FEATURE):
            raise IrisInputError("iris_feature_range", ("features", i),
                                 f"{FEATURES[i]} is {value}; send a measurement from 0 to {MAX_FEATURE:g} cm",
                                 min=0.0, max=MAX_FEATURE)
    return torch.tensor(features, dtype=DTYPE)


@dataclass(frozen=True)
class TrainConfig:
    """The settings of one training run; defaults are the API's (API.md "The Iris transformer")."""

    epochs: int = 300
    lr: float = 0.01
    optimizer: str = "adam"
    batch: int = 16
    seed: int = 0
    watch: int = 0  # the test flower (0..29, an index into the test split) whose attention the epochs report

    def __post_init__(self) -> None:
        ranges: tuple[tuple[str, float, float, float], ...] = (
            ("epochs", self.epochs, 1, MAX_EPOCHS), ("batch", self.batch, 1, TRAIN_SIZE),
            ("seed", self.seed, 0, MAX_SEED), ("watch", self.watch, 0, TEST_SIZE - 1),
        )
        for name, value, low, high in ranges:
            if not low <= value <= high:
                raise IrisInputError("iris_setting", (name,), f"{name} is {value}; send {low} to {high}",
                                     min=low, max=high)
        if not (math.isfinite(self.lr) and 0.0 < self.lr <= MAX_LR):
            raise IrisInputError("iris_setting", ("lr",), f"lr is {self.lr}; send a number above 0, at most {MAX_LR:g}",
                                 min=0.0, max=MAX_LR)
        if self.optimizer not in layers.OPTIMIZERS:
            raise IrisInputError("iris_optimizer", ("optimizer",),
                                 f"optimizer {self.optimizer!r} is unknown; use one of {', '.join(layers.OPTIMIZERS)}",
                                 optimizer=self.optimizer)


@dataclass(frozen=True)
class Snapshot:
    """The parameters after a finished epoch (0: before training)."""

    epoch: int
    parameters: layers.Parameters

    def model(self) -> IrisTransformer:
        net = IrisTransformer()
        net.load(self.parameters)
        return net


@dataclass(frozen=True)
class EpochReport:
    epoch: int  # 1-based; 0 is the untrained network
    epochs: int
    loss: float  # the mean training loss of the epoch's batches, weighted by batch size (epoch 0: of the untrained net)
    train_accuracy: float
    test_accuracy: float
    attention: torch.Tensor  # (H, 4, 4): the watched test flower's maps after the epoch
    seconds: float  # since the run started


@dataclass(frozen=True)
class DoneReport:
    epochs: int
    train_accuracy: float
    test_accuracy: float
    confusion: torch.Tensor  # (3, 3) test flowers, rows the true class, columns the predicted one
    seconds: float


@dataclass(frozen=True)
class CancelledReport:
    epoch: int  # the last finished epoch
    seconds: float


Report = EpochReport | DoneReport | CancelledReport


@dataclass(frozen=True)
class Prediction:
    probabilities: torch.Tensor  # (3,)
    predicted: int
    epoch: int
    trace: dict[str, Any]


def predict(snapshot: Snapshot, features: list[float], data: IrisData | None = None) -> Prediction:
    """Class probabilities and the attention trace of one flower's raw measurements (cm)."""
    data = data or load()
    x = data.standardise(check_features(features))  # (4,)
    net = snapshot.model()
    logits, _ = net.evaluate(x[None])  # (1, 3)
    probabilities = torch.softmax(logits[0], dim=0)  # (3,)
    return Prediction(probabilities=probabilities, predicted=int(probabilities.argmax()),
                      epoch=snapshot.epoch, trace=net.trace(x))


class Training:
    """One training run: `run()` yields a report after each epoch; `latest` is the newest snapshot."""

    def __init__(self, config: TrainConfig, data: IrisData | None = None) -> None:
        self.config = config
        self.data = data or load()
        self.model = IrisTransformer(config.seed)
        self.optimizer = layers.optimizer(config.optimizer, config.lr)
        self.x = self.data.standardise(self.data.rows)  # (150, 4)
        self.latest = self._snapshot(0)
        self.started = time.perf_counter()

    def _snapshot(self, epoch: int) -> Snapshot:
        return Snapshot(epoch, {name: p.clone() for name, p in self.model.parameters().items()})

    def _accuracy(self, predicted: torch.Tensor, rows: torch.Tensor) -> float:
        return float((predicted[rows] == self.data.labels[rows]).double().mean())

    def _evaluate(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(logits (150, 3), predicted classes (150,), the watched flower's maps (H, 4, 4))."""
        logits, maps = self.model.evaluate(self.x)  # (150, 3), (150, H, 4, 4)
        return logits, logits.argmax(dim=1), maps[self.data.test[self.config.watch]]

    def _train_epoch(self, stop: Callable[[], bool]) -> float | None:
        """One pass over the training flowers in a fresh order; the mean loss, or None when stopped."""
        order = self.data.train[torch.randperm(TRAIN_SIZE, generator=self.model.generator)]  # (120,)
        total = 0.0
        parameters = self.model.parameters()
        for start in range(0, TRAIN_SIZE, self.config.batch):
            if stop():
                return None
            rows = order[start : start + self.config.batch]  # (b,)
            labels = self.data.labels[rows]
            logits, cache = self.model.forward(self.x[rows])  # (b, 3)
            loss, probabilities = layers.softmax_cross_entropy(logits, labels)
            grads = self.model.backward(cache, layers.softmax_cross_entropy_backward(probabilities, labels))
            self.optimizer.step(parameters, grads)
            total += float(loss) * rows.numel()
        return total / TRAIN_SIZE

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Report]:
        """Epoch 0 (the untrained network), then each epoch; then done, or cancelled as soon as `stop()`
        says so before a batch."""
        self.started = time.perf_counter()
        train, test = self.data.train, self.data.test
        logits, predicted, maps = self._evaluate()
        loss, _ = layers.softmax_cross_entropy(logits[train], self.data.labels[train])
        yield EpochReport(0, self.config.epochs, float(loss), self._accuracy(predicted, train),
                          self._accuracy(predicted, test), maps, time.perf_counter() - self.started)
        for epoch in range(1, self.config.epochs + 1):
            mean_loss = self._train_epoch(stop)
            if mean_loss is None:
                yield CancelledReport(epoch - 1, time.perf_counter() - self.started)
                return
            _, predicted, maps = self._evaluate()
            self.latest = self._snapshot(epoch)
            yield EpochReport(epoch, self.config.epochs, mean_loss, self._accuracy(predicted, train),
                              self._accuracy(predicted, test), maps, time.perf_counter() - self.started)
        confusion = torch.zeros(len(CLASSES), len(CLASSES), dtype=torch.long)
        confusion.index_put_((self.data.labels[test], predicted[test]), torch.ones(test.numel(), dtype=torch.long),
                             accumulate=True)  # (3, 3)
        yield DoneReport(self.config.epochs, self._accuracy(predicted, train), self._accuracy(predicted, test),
                         confusion, time.perf_counter() - self.started)


def train(config: TrainConfig | None = None) -> list[Report]:
    """A whole run's reports (for scripts and tests)."""
    return list(Training(config or TrainConfig()).run())
