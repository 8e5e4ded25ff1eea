"""A small GPT grown from the learner's own text: a character-level decoder trained on the CPU, saved as a
GPT-2-shaped checkpoint that attnscope and transformers both load.

Character-level, not byte-level: every Unicode character (code point) of the text is one token, shown as
itself. A Chinese character is 3 bytes of UTF-8, so byte-level tokens would make a Chinese text 3 times longer
(a context of 128 tokens would hold ~43 characters) and split each character into pieces a learner cannot read
(the attention maps' rows would be byte fragments); a 100 KB Chinese text has only a few thousand distinct
characters (929 in 100 KB of the project's own Chinese UI text), which the embedding table holds easily. Text data
(model/lab/lm_data.py): the vocabulary is [UNK] then the text's characters by falling frequency, at most 6,000
(rarer ones read as [UNK]); the held-out tail is the last 10 % of the text, the model trained on the rest.

The network is the one network (model/nets/transformer.py) as a GPT-2 NetConfig: learned positions, pre-
LayerNorm blocks, causal attention, a GELU (tanh) MLP of 4·d_model and the LM head tied to the word embeddings;
initialised as GPT-2 is (normal weights of std 0.02, the residual projections' 0.02/√(2·layers), zero biases).
Training draws `batch` random windows of context + 1 characters of the training text per step (from a generator
seeded with `seed`, as is the initialisation) and minimises the next-character cross-entropy with AdamW (betas
0.9, 0.99; weight decay 0.1 on the matrices only), the learning rate warmed up linearly over the first 5 % of
the steps, then cosine down to a tenth, gradients clipped to norm 1, with GPT-2's dropout of 0.2 (embeddings,
attention weights, each sublayer's output) through the network's taps. Without dropout these settings overfit
a 100 KB Chinese text (~46,000 characters): held-out loss 3.62 at step 250, 4.41 at step 1000 while the training
loss fell to 0.80; with it, 3.59 at step 1000 (measured, docs/performance.md). The same text, seed and settings
give the same weights on the same machine and thread count (torch's CPU kernels are deterministic for a fixed
number of threads; the run does not change it: torch.set_num_threads is the caller's, the CLI's --threads).

Every `eval_every` steps (and at step 0 and the last) an LmEval: the mean loss on fixed windows of the training
text and of the held-out tail (EVAL_WINDOWS each, spread evenly), and a sample: `sample_chars` characters
generated after the tail's first PROMPT_CHARS characters, at temperature SAMPLE_TEMPERATURE from a generator
seeded with seed + step (so a sample is reproducible too). Losses are in nats per character, beside the text's
unigram and bigram entropies: a model that knows no more than the characters' frequencies scores the unigram
entropy on the tail (or more); the target the bench holds it to (bench/lm.py, TARGET) is a val loss at most
0.75 × the unigram entropy within 3 minutes at the defaults.

Defaults, sized for ~2.5 minutes of one core of this project's 2-core CPU on a 100 KB text (docs/performance.md):
4 layers x 4 heads, d_model 128 (~0.8 M weights besides the embeddings), a context of 64 characters (the trained
model's max_tokens), batches of 16 windows, 1,200 steps at lr 3e-3 (~0.1 s a step), an evaluation every 100
steps with 120 sampled characters. A step costs about 6 x weights x batch x context floating-point operations
plus the attention's, which grow as context²: a context of 128 at the same batch took 0.20 s a step against 0.085.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from model.lab.lm_data import (
    MAX_BYTES,
    MIN_CHARS,
    UNKNOWN,
    check_text,
    encode,
    entropies,
    split,
    vocabulary,
    windows,
)
from model.lab.lm_save import write_checkpoint
from model.nets.config import NetConfig
from model.nets.transformer import Transformer

__all__ = ["MAX_BYTES", "MAX_LR", "MIN_CHARS", "RANGES", "LmEval", "LmSettings", "LmTraining", "check_text"]

MAX_STEPS, MAX_SEED, MAX_CONTEXT, MAX_LAYERS, MAX_HEADS, MAX_D_MODEL = 100_000, 2**31 - 1, 256, 8, 16, 512
MAX_BATCH, MAX_LR, MAX_SAMPLE = 256, 0.1, 1_000
EVAL_WINDOWS = 64  # windows of context + 1 characters per evaluation, of the training text and of the tail
PROMPT_CHARS = 16  # a sample continues the held-out tail's first characters
SAMPLE_TEMPERATURE = 0.8
WARMUP, FLOOR, WEIGHT_DECAY, CLIP = 0.05, 0.1, 0.1, 1.0
DROPOUT = 0.2  # GPT-2's three dropouts in training (the Dropout recorder); 0 in evaluation and in the checkpoint
# Each whole-number setting's range (lr: above 0, at most MAX_LR).
RANGES = {"steps": (1, MAX_STEPS), "seed": (0, MAX_SEED), "context": (8, MAX_CONTEXT), "layers": (1, MAX_LAYERS),
          "heads": (1, MAX_HEADS), "d_model": (8, MAX_D_MODEL), "batch": (1, MAX_BATCH), "eval_every": (1, MAX_STEPS),
          "sample_chars": (0, MAX_SAMPLE)}


@dataclass(frozen=True)
class LmSettings:
    """One run's settings (the module docstring says why these defaults); every field validated."""

    steps: int = 1200
    seed: int = 0
    context: int = 64
    layers: int = 4
    heads: int = 4
    d_model: int = 128
    batch: int = 16
    lr: float = 3e-3
    eval_every: int = 100
    sample_chars: int = 120

    def __post_init__(self) -> None:
        for name, (low, high) in RANGES.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} is {value!r}; give a whole number from {low:,} to {high:,}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by heads {self.heads}; give a d_model that "
                             f"is a multiple of {self.heads}")
        lr = self.lr
        if isinstance(lr, bool) or not isinstance(lr, int | float) or not (math.isfinite(lr) and 0 < lr <= MAX_LR):
            raise ValueError(f"lr is {lr!r}; give a number above 0 and at most {MAX_LR}")


@dataclass(frozen=True)
class LmEval:
    """One evaluation after `step` steps (0: the untrained network), `seconds` into the run. Losses and
    entropies in nats per character; `sample`: generated text (the module docstring says how)."""

    step: int
    seconds: float
    train_loss: float
    val_loss: float
    unigram_entropy: float
    bigram_entropy: float
    sample: str


def net_config(settings: LmSettings, vocab_size: int) -> NetConfig:
    """The GPT-2 configuration of the one network at these settings (model/checkpoints/gpt2.py reads the same)."""
    return NetConfig(vocab_size=vocab_size, d_model=settings.d_model, n_layers=settings.layers, n_heads=settings.heads,
                     d_ff=4 * settings.d_model, max_positions=settings.context, type_vocab_size=0,
                     layer_norm_eps=1e-5, norm_place="pre", causal=True, activation="gelu_new", tied_head=True)


def gpt2_init(net: Transformer, generator: torch.Generator) -> None:
    """GPT-2's initialisation: every weight matrix and embedding N(0, 0.02), the projections that write into the
    residual stream (attention output, MLP out) N(0, 0.02/√(2·layers)), biases 0, LayerNorms 1 and 0 (as built).
    Drawn from `generator`, not torch's global one, which every thread of a server shares."""
    residual = 0.02 / math.sqrt(2 * net.cfg.n_layers)
    for name, module in net.named_modules():
        if isinstance(module, nn.Linear):
            std = residual if name.endswith(("attention.output", "ff_out")) else 0.02
            nn.init.normal_(module.weight, std=std, generator=generator)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=0.02, generator=generator)


def dropout(x: torch.Tensor, p: float, generator: torch.Generator) -> torch.Tensor:
    """Each entry zeroed with probability p, the others divided by 1 − p, drawn from `generator` (not torch's
    global one, which every thread of a server shares)."""
    if p == 0:
        return x
    keep = torch.empty_like(x).bernoulli_(1 - p, generator=generator)  # same shape as x
    return x * keep / (1 - p)


class Dropout:
    """GPT-2's dropout in training, at the taps (model/nets/taps.py) where GPT-2 applies it: the attention
    weights (`pattern`, its attn_pdrop) and what each sublayer adds to the residual stream (`attn_out`,
    `mlp_out`: resid_pdrop). A Recorder that records nothing."""

    def __init__(self, p: float, generator: torch.Generator) -> None:
        self.p = p
        self.generator = generator

    def wants(self, step: str) -> bool:
        return False

    def __call__(self, step: str, value: object) -> None:
        pass

    def tap(self, name: str, value: torch.Tensor) -> torch.Tensor:
        return dropout(value, self.p, self.generator) if name in ("pattern", "attn_out", "mlp_out") else value


def training_logits(net: Transformer, ids: torch.Tensor, drop: Dropout | None = None) -> torch.Tensor:
    """ids (B, T) -> next-character logits (B, T, V), with gradients: Transformer.forward's own composition
    (embeddings, each block under the causal mask, the final LayerNorm, the tied head), which runs in inference
    mode and so cannot be trained through; with `drop`, GPT-2's dropout on the embeddings and in every block."""
    x = net.embeddings(ids, torch.zeros_like(ids))  # (B, T, D)
    if drop is not None:
        x = dropout(x, drop.p, drop.generator)  # GPT-2's embd_pdrop
    masks = net.layer_masks(ids.shape[1], ids.device)
    for i in range(net.cfg.n_layers):
        x = net.block(i)(x, mask=masks[i], record=drop, mask_keeps_a_key=True)  # (B, T, D)
    return net.unembed(x)  # (B, T, V): the final LayerNorm, then the tied head


def next_char_loss(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """The mean cross-entropy of logits (B, T, V) at predicting ids (B, T) (the window's next characters)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids.reshape(-1))


def learning_rate(settings: LmSettings, step: int) -> float:
    """Step `step`'s (1…steps) learning rate: linear warm-up over WARMUP of the steps, then cosine down to FLOOR."""
    warm = max(1, round(WARMUP * settings.steps))
    if step <= warm:
        return settings.lr * step / warm
    progress = (step - warm) / max(1, settings.steps - warm)
    return settings.lr * (FLOOR + (1 - FLOOR) * 0.5 * (1 + math.cos(math.pi * progress)))


class LmTraining:
    """One run on one text: the vocabulary, the training text and its held-out tail, the network and optimiser.

    `check_text` refuses a text it cannot train on (InputError, loc ("text",)), before anything is built."""

    def __init__(self, text: str, settings: LmSettings) -> None:
        check_text(text)
        self.settings = settings
        self.text_sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
        self.characters = len(text)
        self.vocabulary: list[str] = vocabulary(text)
        self.unigram_entropy, self.bigram_entropy = entropies(text)
        ids = encode(text, self.vocabulary)  # (N,)
        self.train_ids, self.val_ids = split(ids)
        span = settings.context + 1
        self.train_windows = windows(self.train_ids, span, EVAL_WINDOWS)  # (E, span)
        self.val_windows = windows(self.val_ids, span, EVAL_WINDOWS)  # (E', ≤ span)
        self.prompt = self.val_ids[:PROMPT_CHARS]
        self.net = Transformer(net_config(settings, len(self.vocabulary)))
        gpt2_init(self.net, torch.Generator().manual_seed(settings.seed + 2))
        decayed = [p for p in self.net.parameters() if p.dim() >= 2]
        kept = [p for p in self.net.parameters() if p.dim() < 2]
        self.optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": WEIGHT_DECAY},
                                            {"params": kept, "weight_decay": 0.0}], lr=settings.lr, betas=(0.9, 0.99))
        self.generator = torch.Generator().manual_seed(settings.seed)
        self.dropout = Dropout(DROPOUT, torch.Generator().manual_seed(settings.seed + 1))
        self.step = 0
        self.last: LmEval | None = None

    def batch(self) -> torch.Tensor:
        """(batch, context + 1) random windows of the training text."""
        span = min(self.settings.context + 1, len(self.train_ids))
        starts = torch.randint(len(self.train_ids) - span + 1, (self.settings.batch,), generator=self.generator)
        return self.train_ids[starts[:, None] + torch.arange(span)]  # (B, span)

    @torch.no_grad()
    def mean_loss(self, rows: torch.Tensor) -> float:
        """The mean next-character loss of fixed windows (n, span), through the network's own forward."""
        logits = self.net.logits(self.net(rows[:, :-1]))  # (n, span − 1, V)
        return float(next_char_loss(logits, rows[:, 1:]))

    @torch.no_grad()
    def sample(self, count: int, seed: int) -> str:
        """`count` characters generated after the prompt at SAMPLE_TEMPERATURE ([UNK] never drawn)."""
        generator = torch.Generator().manual_seed(seed)
        ids = self.prompt.tolist()
        made: list[str] = []
        for _ in range(count):
            window = torch.tensor([ids[-self.settings.context:]])  # (1, ≤ context)
            logits = self.net.logits(self.net(window))[0, -1].double()  # (V,)
            logits[0] = -math.inf
            probs = torch.softmax(logits / SAMPLE_TEMPERATURE, dim=-1)  # (V,)
            chosen = int(torch.multinomial(probs, 1, generator=generator))
            ids.append(chosen)
            made.append(self.vocabulary[chosen])
        return "".join(made)

    def evaluate(self, seconds: float) -> LmEval:
        self.net.eval()
        try:
            return LmEval(self.step, seconds, self.mean_loss(self.train_windows), self.mean_loss(self.val_windows),
                          self.unigram_entropy, self.bigram_entropy,
                          self.sample(self.settings.sample_chars, self.settings.seed + self.step))
        finally:
            self.net.train()

    def run(self, on_eval: Callable[[LmEval], None], stop: Callable[[], bool] = lambda: False) -> LmEval:
        """Trains to `steps`, handing every evaluation to `on_eval`; `stop()` is asked before each step and ends
        the run early (the last evaluation then is of the steps done). Returns the last evaluation."""
        started = time.perf_counter()
        self.last = self.evaluate(0.0)
        on_eval(self.last)
        self.net.train()
        settings = self.settings
        while self.step < settings.steps and not stop():
            self.step += 1
            for group in self.optimizer.param_groups:
                group["lr"] = learning_rate(settings, self.step)
            rows = self.batch()  # (B, span)
            loss = next_char_loss(training_logits(self.net, rows[:, :-1], self.dropout), rows[:, 1:])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(self.net.parameters(), CLIP)
            self.optimizer.step()
            if self.step % settings.eval_every == 0 or self.step == settings.steps:
                self.last = self.evaluate(time.perf_counter() - started)
                on_eval(self.last)
        if self.last.step != self.step:  # stopped between evaluations
            self.last = self.evaluate(time.perf_counter() - started)
            on_eval(self.last)
        self.net.eval()
        return self.last

    def save(self, directory: Path, name: str) -> Path:
        """The checkpoint directory (model/lab/lm_save.py) of the network as it is now; `name` is recorded in
        config.json's "attnscope" part. Returns the directory."""
        extra = {"trained": True, "name": name, "text_sha256": self.text_sha256, "settings": asdict(self.settings),
                 "unigram_entropy": self.unigram_entropy, "bigram_entropy": self.bigram_entropy,
                 "final_val_loss": None if self.last is None else self.last.val_loss,
                 "steps_done": self.step, "characters": self.characters}
        return write_checkpoint(directory, self.net, self.vocabulary, UNKNOWN, extra, DROPOUT)
