"""The encoder-decoder lab: a character-level GRU encoder-decoder with Bahdanau's additive attention learns to align.

Tasks (model/lab/seq2seq_data.py): `reverse` (4-30 lowercase letters, backwards) and `dates` (a date in one of
eight human forms -> ISO YYYY-MM-DD), drawn on the fly.

The network. Source characters are embedded (EMBED wide) and read by one GRU of 2·hidden units from the last
character back to the first, not bidirectionally: h_i is its state after reading x_{n−1} .. x_i (n characters), so
x_i is the character it read last, and the count of characters read is i's distance from the end. The final state is
h_0 (after the whole text); the decoder (hidden units) starts from s_0 = tanh(B · h_0 + b). Why not bidirectional:
a bidirectional GRU was tried first. Its forward half at i + 1 holds x_i as the character read just before, so the
state one to the right carries the character too, and the attention split its mass between the two (on reverse,
after 800 steps: 0.59 on n − 1 − t, 0.33 on n − t): the weights did not show the alignment this lab is about.
Read right to left, the only states that hold x_i are i (read last) and those left of it (read earlier, fading):
the attention settles on i (0.84-0.91 over seeds 0-4 at the defaults, docs/performance.md).

Decoder step t (1-based) with previous state s_{t−1} and previous output character y_{t−1} (START first):
    a_ti = softmax_i(vᵀ tanh(W s_{t−1} + U h_i))      Bahdanau's additive score; padding positions get no weight
    c_t  = Σ_i a_ti h_i
    s_t  = GRUCell([E y_{t−1}, c_t], s_{t−1})
    logits_t = O [s_t, c_t, E y_{t−1}] + o
With `attention=False` the same decoder gets the encoder's final state as its context at every step (c_t =
h_0): all it knows of the source must pass through those 2·hidden numbers, the bottleneck attention removes.
Training uses teacher forcing (the true y_{t−1}) and the mean cross-entropy over target characters and END;
evaluation and `predict` decode greedily (y_t = argmax) until END or the task's longest target + 2 characters.

Training: Adam, its learning rate falling from `lr` along a half cosine to FINAL_LR · lr at the last step, gradients
clipped to a norm of CLIP, fresh batches of independent examples each step drawn by random.Random from a stream of
the seed (batches of one length each were twice as fast per step, but their attention aligned worse: 0.62 against
0.78 after 1600 steps); the initialisation is torch's, from `seed`. The evaluation set (EVAL_EXAMPLES examples) is
drawn once per run from another stream of the seed. With one intra-op thread the same settings give the same
numbers.

Alignment share: over the evaluation set, teacher-forced, the mean over target characters that have a source
(the "-" of dates excluded, END too) of the attention mass on their right source positions (Example.right).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import nn

from model.errors import LabInputError
from model.lab.reports import CancelledReport, DoneReport
from model.lab.seq2seq_data import PAD, START, TASKS, Example, Task, source_ids, target_ids, target_text

MAX_STEPS, MAX_BATCH, MAX_HIDDEN, MAX_LR, MAX_SEED = 20_000, 256, 256, 0.1, 2**31 - 1
MIN_HIDDEN = 4
EMBED = 32  # the width of a character's embedding, source and target
CLIP = 1.0  # the gradient norm training clips to
EVAL_EXAMPLES = 500  # the fixed evaluation set, drawn once per run
FINAL_LR = 0.3  # the last step's learning rate, a fraction of `lr`
EXTRA_OUTPUT = 2  # greedy decoding stops after the task's longest target + this many characters


@dataclass(frozen=True)
class Seq2SeqConfig:
    """One run's settings: the task (reverse or dates), with or without attention, and the training's.

    Limits: task one of TASKS; steps and eval_every 1 to MAX_STEPS; batch 1 to MAX_BATCH; hidden MIN_HIDDEN to
    MAX_HIDDEN; lr above 0, at most MAX_LR; seed 0 to MAX_SEED. The defaults reach 95 % exact match on reverse in
    about 100 CPU seconds (hidden 64: a share of 0.78; lr 3e-3: faster to 95 %, less aligned; 1e-3: slow); the
    alignment keeps sharpening after that (1000 steps: shares 0.76-0.85 over seeds 0-4; 2000 steps: 0.91-0.93 for
    the two seeds that were lowest at 1000); dates reaches 95 % in under 300 steps."""

    task: str = "reverse"
    attention: bool = True
    steps: int = 1500
    lr: float = 2e-3
    batch: int = 64
    seed: int = 0
    hidden: int = 96
    eval_every: int = 100

    def __post_init__(self) -> None:
        if self.task not in TASKS:
            names = list(TASKS)
            raise LabInputError("lab_setting", ("task",), f"task is {self.task!r}; send one of {', '.join(names)}",
                                min=0, max=len(names) - 1)
        if not isinstance(self.attention, bool):
            raise LabInputError("lab_setting", ("attention",), f"attention is {self.attention!r}; send true or false",
                                min=0, max=1)
        ranges: tuple[tuple[str, float, float, float], ...] = (
            ("steps", self.steps, 1, MAX_STEPS), ("batch", self.batch, 1, MAX_BATCH),
            ("seed", self.seed, 0, MAX_SEED), ("hidden", self.hidden, MIN_HIDDEN, MAX_HIDDEN),
            ("eval_every", self.eval_every, 1, MAX_STEPS),
        )
        for name, value, low, high in ranges:
            if not low <= value <= high:
                raise LabInputError("lab_setting", (name,), f"{name} is {value}; send {low} to {high}",
                                    min=low, max=high)
        if not (math.isfinite(self.lr) and 0.0 < self.lr <= MAX_LR):
            raise LabInputError("lab_setting", ("lr",), f"lr is {self.lr}; send above 0, at most {MAX_LR}",
                                min=0.0, max=MAX_LR)


class AdditiveAttention(nn.Module):
    """Bahdanau's score vᵀ tanh(W s + U h_i), softmax over the source positions i."""

    def __init__(self, state: int, keys: int, width: int) -> None:
        super().__init__()
        self.W = nn.Linear(state, width, bias=False)
        self.U = nn.Linear(keys, width, bias=False)
        self.v = nn.Linear(width, 1, bias=False)

    def project(self, h: torch.Tensor) -> torch.Tensor:
        """U h_i for every position, once per source: h (B, S, K) -> (B, S, A)."""
        projected: torch.Tensor = self.U(h)  # (B, S, A)
        return projected

    def forward(self, s: torch.Tensor, projected: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """s (B, Ds), projected (B, S, A) from `project`, mask (B, S) True at real positions -> weights (B, S)."""
        scores = self.v(torch.tanh(self.W(s)[:, None, :] + projected)).squeeze(-1)  # (B, S)
        return torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)  # (B, S)


@dataclass(frozen=True)
class Decoded:
    """A decoder pass over T steps; weights are None without attention."""

    logits: torch.Tensor  # (B, T, V)
    weights: torch.Tensor | None  # (B, T, S): a_ti
    states: torch.Tensor  # (B, T, hidden): s_{t−1}, the state each step's attention read
    contexts: torch.Tensor  # (B, T, K), K = 2·hidden: c_t
    encoded: torch.Tensor  # (B, S, K): h_0..h_{S−1}, zero past each source's length
    final: torch.Tensor  # (B, K): the encoder's final state, h_0


class Seq2Seq(nn.Module):
    """The right-to-left GRU encoder (2·hidden units) and the GRU decoder (hidden), with or without attention."""

    def __init__(self, task: Task, hidden: int, attention: bool) -> None:
        super().__init__()
        self.task, self.hidden = task, hidden
        keys = 2 * hidden
        self.source_embed = nn.Embedding(len(task.source_alphabet) + 1, EMBED, padding_idx=PAD)
        self.encoder = nn.GRU(EMBED, keys, batch_first=True)
        self.bridge = nn.Linear(keys, hidden)
        self.target_embed = nn.Embedding(len(task.target_alphabet) + 3, EMBED, padding_idx=PAD)
        self.cell = nn.GRUCell(EMBED + keys, hidden)
        self.attention = AdditiveAttention(hidden, keys, hidden) if attention else None
        self.out = nn.Linear(hidden + keys + EMBED, len(task.target_alphabet) + 3)

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ids (B, S), lengths (B,) -> states h (B, S, K), zero past each length, and the final state h_0 (B, K).

        h_i is the GRU's state after reading the characters from the last one back to i. Each row's characters
        are put in reverse order (padding stays at the end, after them) and read left to right."""
        positions = torch.arange(ids.shape[1])[None, :]  # (1, S)
        real = positions < lengths[:, None]  # (B, S)
        flip = torch.where(real, lengths[:, None] - 1 - positions, positions)  # (B, S): reversed order, padding kept
        read, _ = self.encoder(self.source_embed(ids.gather(1, flip)))  # (B, S, K), in reading order
        h = read.gather(1, flip[:, :, None].expand_as(read)) * real[:, :, None]  # (B, S, K), source order
        return h, h[:, 0]

    def decode(self, ids: torch.Tensor, lengths: torch.Tensor, inputs: torch.Tensor | None = None,
               max_steps: int = 0) -> Decoded:
        """Teacher forcing on `inputs` (B, T) (START y_1 ..), or greedy for `max_steps` steps when inputs is None."""
        h, final = self.encode(ids, lengths)  # (B, S, K), (B, K)
        mask = torch.arange(ids.shape[1])[None, :] < lengths[:, None]  # (B, S)
        projected = self.attention.project(h) if self.attention is not None else None  # (B, S, A)
        s = torch.tanh(self.bridge(final))  # (B, hidden)
        y = torch.full((ids.shape[0],), START, dtype=torch.int64)  # (B,)
        forced = self.target_embed(inputs) if inputs is not None else None  # (B, T, EMBED)
        steps = forced.shape[1] if forced is not None else max_steps
        states: list[torch.Tensor] = []
        contexts: list[torch.Tensor] = []
        weights: list[torch.Tensor] = []
        logits: list[torch.Tensor] = []
        for t in range(steps):
            e = forced[:, t] if forced is not None else self.target_embed(y)  # (B, EMBED)
            c = final  # (B, K): without attention, the encoder's final state at every step
            if self.attention is not None and projected is not None:
                a = self.attention(s, projected, mask)  # (B, S)
                c = torch.bmm(a[:, None, :], h).squeeze(1)  # (B, K)
                weights.append(a)
            states.append(s)
            contexts.append(c)
            s = self.cell(torch.cat([e, c], dim=-1), s)  # (B, hidden)
            if forced is None:
                logits.append(self.out(torch.cat([s, c, e], dim=-1)))  # (B, V)
                y = logits[-1].argmax(dim=-1)  # (B,)
        if forced is not None:  # the output layer over every step at once
            after = torch.stack(states[1:] + [s], dim=1)  # (B, T, hidden): s_t
            all_logits = self.out(torch.cat([after, torch.stack(contexts, 1), forced], -1))  # (B, T, V)
        else:
            all_logits = torch.stack(logits, dim=1)  # (B, T, V)
        return Decoded(all_logits, torch.stack(weights, dim=1) if weights else None,  # (B, T, S)
                       torch.stack(states, dim=1), torch.stack(contexts, dim=1), h, final)

    def loss(self, examples: list[Example]) -> tuple[torch.Tensor, Decoded]:
        """Teacher-forced mean cross-entropy over the examples' target characters and END, nats."""
        ids, lengths = source_ids(self.task, [e.source for e in examples])  # (B, S), (B,)
        inputs, outputs = target_ids(self.task, [e.target for e in examples])  # (B, T), (B, T)
        decoded = self.decode(ids, lengths, inputs)
        loss = nn.functional.cross_entropy(decoded.logits.transpose(1, 2), outputs, ignore_index=PAD)
        return loss, decoded

    def greedy(self, sources: list[str]) -> tuple[list[str], torch.Tensor | None]:
        """Greedy outputs of the sources, each cut before its first END, and the weights (B, T, S) of the longest
        decoding (None without attention)."""
        ids, lengths = source_ids(self.task, sources)  # (B, S), (B,)
        decoded = self.decode(ids, lengths, max_steps=self.task.max_target + EXTRA_OUTPUT)
        ys = decoded.logits.argmax(dim=-1).tolist()  # (B, T)
        return [target_text(self.task, row) for row in ys], decoded.weights


@dataclass(frozen=True)
class Alignment:
    """The watched example: its source characters, the model's greedy output (without END) and the attention
    weights of those output characters over the source, T×S (None without attention)."""

    source: list[str]
    target: list[str]
    weights: torch.Tensor | None  # (T, S)


@dataclass(frozen=True)
class EvalReport:
    """After `step` steps (0: the untrained network), on the run's fixed evaluation set."""

    step: int
    steps: int
    loss: float  # the evaluation set's teacher-forced loss, nats per target character (END included)
    train_loss: float | None  # the mean training-batch loss over the steps since the last report; None at step 0
    accuracy: float  # the fraction of evaluation examples whose greedy output equals the target exactly
    accuracy_by_length: dict[int, float]  # source length (characters) -> that fraction, for the lengths drawn
    alignment: Alignment  # the watched example (the evaluation set's first)
    alignment_share: float | None  # see the module's docstring; None without attention
    seconds: float


Report = EvalReport | DoneReport | CancelledReport


def seeded(config: Seq2SeqConfig, stream: str) -> random.Random:
    """A random.Random of its own for each stream ("train", "eval") of a run's seed."""
    return random.Random(f"seq2seq/{config.task}/{config.seed}/{stream}")


def learning_rate(config: Seq2SeqConfig, step: int) -> float:
    """Step `step`'s (1-based) learning rate: `lr` at step 1, falling along a half cosine to FINAL_LR · lr."""
    progress = (step - 1) / max(1, config.steps - 1)
    return config.lr * (FINAL_LR + (1 - FINAL_LR) * 0.5 * (1 + math.cos(math.pi * progress)))


def alignment_share(weights: torch.Tensor, examples: list[Example]) -> float:
    """weights (B, T, S), teacher-forced on the examples' targets: the mean over target characters with a source
    of the weight on their right positions."""
    rows: list[int] = []
    steps: list[int] = []
    columns: list[int] = []
    for b, e in enumerate(examples):
        for t, right in enumerate(e.right):
            rows += [b] * len(right)
            steps += [t] * len(right)
            columns += right
    on_right = torch.zeros_like(weights)  # (B, T, S): 1 on each target character's right positions
    on_right[rows, steps, columns] = 1.0
    has_source = on_right.amax(dim=-1) > 0  # (B, T)
    return float((weights * on_right).sum(dim=-1)[has_source].mean())


def exact_match(model: Seq2Seq, examples: list[Example], chunk: int = EVAL_EXAMPLES) -> list[bool]:
    """Per example, whether the greedy output equals its target."""
    hits: list[bool] = []
    with torch.no_grad():
        for start in range(0, len(examples), chunk):
            part = examples[start: start + chunk]
            outputs, _ = model.greedy([e.source for e in part])
            hits += [out == e.target for out, e in zip(outputs, part, strict=True)]
    return hits


class Training:
    """One run: `run()` yields an EvalReport every `eval_every` steps (and at 0 and the last step), then done."""

    def __init__(self, config: Seq2SeqConfig) -> None:
        self.config = config
        self.task = TASKS[config.task]
        with torch.random.fork_rng():
            torch.manual_seed(config.seed)
            self.model = Seq2Seq(self.task, config.hidden, config.attention)
        self.rng = seeded(config, "train")
        self.evaluation = self.task.draw_many(EVAL_EXAMPLES, seeded(config, "eval"))
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=config.lr)
        self.started = time.perf_counter()

    @torch.no_grad()
    def evaluate(self, step: int, train_loss: float | None) -> EvalReport:
        self.model.eval()
        loss, decoded = self.model.loss(self.evaluation)
        hits = exact_match(self.model, self.evaluation)
        by_length: dict[int, list[bool]] = {}
        for e, hit in zip(self.evaluation, hits, strict=True):
            by_length.setdefault(len(e.source), []).append(hit)
        watched = self.evaluation[0]
        outputs, weights = self.model.greedy([watched.source])
        target = list(outputs[0])
        alignment = Alignment(list(watched.source), target,
                              None if weights is None else weights[0, : len(target)].clone())  # (T, S)
        share = None if decoded.weights is None else alignment_share(decoded.weights, self.evaluation)
        self.model.train()
        return EvalReport(step, self.config.steps, float(loss), train_loss, sum(hits) / len(hits),
                          {n: sum(v) / len(v) for n, v in sorted(by_length.items())}, alignment, share,
                          time.perf_counter() - self.started)

    def run(self, stop: Callable[[], bool] = lambda: False) -> Iterator[Report]:
        self.started = time.perf_counter()
        yield self.evaluate(0, None)
        losses: list[float] = []
        for step in range(1, self.config.steps + 1):
            if stop():
                yield CancelledReport(step - 1, time.perf_counter() - self.started)
                return
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(self.config, step)
            loss, _ = self.model.loss(self.task.draw_many(self.config.batch, self.rng))
            self.optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.model.parameters(), CLIP)
            self.optimizer.step()
            losses.append(loss.item())
            if step % self.config.eval_every == 0 or step == self.config.steps:
                yield self.evaluate(step, sum(losses) / len(losses))
                losses = []
        yield DoneReport(self.config.steps, time.perf_counter() - self.started)


@dataclass(frozen=True)
class Prediction:
    """A text's greedy output and its alignment: weights (T, S) of the output characters over the text's."""

    output: str
    alignment: Alignment


def check_text(task: Task, text: str) -> None:
    """Refuses a text the task's model cannot read: characters outside its alphabet, or a length outside its range."""
    if not task.min_source <= len(text) <= task.max_source:
        raise LabInputError("lab_setting", ("text",), f"text has {len(text)} characters; send {task.min_source} "
                            f"to {task.max_source}", min=task.min_source, max=task.max_source)
    foreign = sorted(set(text) - set(task.source_alphabet))
    if foreign:
        raise LabInputError("lab_setting", ("text",), f"text has characters outside the {task.name} task's alphabet "
                            f"({''.join(foreign)!r}); use only {task.source_alphabet!r}",
                            min=task.min_source, max=task.max_source)


@torch.no_grad()
def predict(model: Seq2Seq | Training, text: str) -> Prediction:
    """The model's greedy output for `text` and its alignment (weights None without attention)."""
    net = model.model if isinstance(model, Training) else model
    check_text(net.task, text)
    was_training = net.training
    net.eval()
    outputs, weights = net.greedy([text])
    net.train(was_training)
    target = list(outputs[0])
    return Prediction(outputs[0], Alignment(list(text), target,
                                            None if weights is None else weights[0, : len(target)].clone()))
