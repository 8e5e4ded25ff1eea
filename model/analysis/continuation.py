"""Attribution of a generated continuation, token by token: how much each earlier token (the prompt's and the
continuation's before it) adds to the log-probability a decoder gave each token of a continuation.

A decoder reads a text of p tokens x_0 .. x_{p−1} and continues it with n tokens c_0 .. c_{n−1}: given as ids,
or generated first, greedily (the most probable token each time, model/analysis/generate.py). Row j explains

    f_j(x) = log softmax(logits at position p + j − 1)[c_j]

the log-probability of c_j given everything before it, by integrated gradients (model/analysis/attribution.py:
the same Gauss–Legendre quadrature on [0, 1], the same baselines b, model/analysis/baselines.py) over the word
embeddings of the p + j tokens before c_j: a matrix of n rows, row j with p + j numbers, each row with its own
completeness check (Σ row = f_j(x) − f_j(b) within COMPLETENESS_TOLERANCE, else `ok` false and a warning; the
ranking is then not claimed). Each token's own embedding is interpolated wherever it is read, prompt and
continuation alike: the path for row j moves every one of the p + j tokens before c_j at once.

Why the log-probability and not the logit (POST /api/v1/attribution explains one logit): the logits at one
position share an additive offset that the softmax discards, and that offset moves from position to position, so
logits of different rows are not on one scale; the log-probability is what the model scored the token with (what
greedy decoding maximised), comparable from row to row, and an input that raises every logit alike adds nothing
to it.

The network is causal, so f_j reads positions 0 .. p + j − 1 only: one forward of the p + n − 1 tokens
(c_{n−1} is never read) gives every f_j at a point of the path, and one backward per row gives its gradient
(positions from p + j on get none, and the row stops there). The n backwards reuse the forward's graph; each
row's weighted gradient is summed as the passes go, so the memory kept is (n, p + n − 1, E) beside one pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis import baselines, work
from model.analysis.attribution import (
    DEFAULT_STEPS,
    MIN_STEPS,
    ROWS_PER_PASS,
    Completeness,
    checked_steps,
    gauss_legendre,
    last_hidden,
    unreliable,
)
from model.analysis.generate import Generation, Sampling
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import RuleError, Stopped
from model.nets.config import NetConfig
from model.trace import widen

MAX_CONTINUATION = 64  # tokens of a continuation, given or generated
HEAD_ROWS = 256  # interpolated inputs x continuation tokens per pass: bounds the (S, n, V) logits kept for backward
KINDS = ("mean", "zeros", "pad", "mask")  # the baselines that repeat one row (a baseline text has no continuation)

# error type -> (the ctx keys its error carries, what breaks it); the route documents this table
CONTINUATION_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "continuation_too_long": (("tokens", "continuation", "limit"),
                              "the input's tokens plus the continuation's over the model's limit"),
    "continuation_out_of_range": (("id", "vocab_size"), "a continuation token id at or beyond the vocabulary's size"),
}


class ContinuationError(RuleError):
    """A continuation the model cannot score; `type` is one of CONTINUATION_RULES."""

    rules = CONTINUATION_RULES


@dataclass(frozen=True)
class ContinuationRow:
    """Row j: the continuation's token c_j at position `index` (p + j), f_j = its log-probability at x and at the
    baseline, one attribution per earlier token (`scores`, p + j of them) and their completeness check."""

    index: int
    id: int
    token: str  # the tokenizer's own string (Ġworld)
    display: str  # its decoding (" world")
    output: float  # f_j(x)
    baseline_output: float  # f_j(b)
    scores: tuple[float, ...]  # (p + j,): one per token before c_j
    completeness: Completeness
    warning: str | None  # when completeness is not ok: why the row's ranking is unreliable, what to change


@dataclass(frozen=True)
class ContinuationAttribution:
    """Every row of a continuation's attribution (the module's docstring)."""

    prompt: int  # p, the text's tokens
    ids: tuple[int, ...]  # (p + n,): the text's and the continuation's ids
    generated: bool  # the continuation was generated greedily here (else given)
    steps: int
    baseline: str  # "mean", "zeros", "pad" or "mask"
    baseline_token: int | None  # the padding or mask token's id for "pad" or "mask"
    rows: tuple[ContinuationRow, ...]

    def matrix(self) -> np.ndarray:
        """(n, p + n − 1) float64: row j's scores, NaN from column p + j on (tokens after c_j's position)."""
        width = len(self.ids) - 1
        out = np.full((len(self.rows), width), np.nan)
        for j, row in enumerate(self.rows):
            out[j, :len(row.scores)] = row.scores
        return out

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"scores": self.matrix(), "ids": np.asarray(self.ids, dtype=np.int64),
                "output": np.asarray([r.output for r in self.rows]),
                "baseline_output": np.asarray([r.baseline_output for r in self.rows]),
                "relative_gap": np.asarray([r.completeness.relative_gap for r in self.rows]),
                "ok": np.asarray([r.completeness.ok for r in self.rows])}

    def _meta(self) -> dict[str, object]:
        return {"kind": "continuation_attribution", "prompt": self.prompt, "generated": self.generated,
                "steps": self.steps, "baseline": self.baseline, "output_name": "log_probability",
                "continuation": [r.display for r in self.rows]}


def checked_continuation(model: LoadedModel, prompt: int, ids: Sequence[int] | None, new_tokens: int | None,
                         ) -> None:
    """ContinuationError for ids outside the vocabulary, or a prompt and continuation over the model's limit."""
    cfg = model.cfg
    count = len(ids) if ids is not None else int(new_tokens or 0)
    field = ("continuation", "ids") if ids is not None else ("continuation", "new_tokens")
    for i, token_id in enumerate(ids or ()):
        if not 0 <= token_id < cfg.vocab_size:
            raise ContinuationError("continuation_out_of_range", (*field, i), f"continuation token id {token_id} is "
                                    f"not in the vocabulary; ids run 0..{cfg.vocab_size - 1}", id=token_id,
                                    vocab_size=cfg.vocab_size)
    if prompt + count > cfg.max_positions:
        raise ContinuationError("continuation_too_long", field, f"{prompt} input tokens + {count} continuation tokens "
                                f"exceed the model's limit of {cfg.max_positions}; send at most "
                                f"{max(cfg.max_positions - prompt, 0)} continuation tokens or a shorter text",
                                tokens=prompt, continuation=count, limit=cfg.max_positions)


def cost(cfg: NetConfig, prompt: int, n: int, steps: int, generating: bool) -> float:
    """(steps + 2)·(forward(t) + head(n) + n·(linear(t) + 2·attend(t, t) + head(n))), t = p + n − 1: each pass's
    forward and its n backwards to the inputs (each through the LM head at every row of the pass), the quadrature's
    nodes, x and the baseline; plus work.generate(p, n) when the continuation is generated first."""
    t = prompt + n - 1
    per_pass = (work.forward(cfg, t) + work.head(cfg, n)
                + n * (work.linear(cfg, t) + 2 * work.attend(cfg, t, t) + work.head(cfg, n)))
    return (steps + 2) * per_pass + (work.generate(cfg, prompt, n) if generating else 0.0)


def check_work(cfg: NetConfig, prompt: int, n: int, steps: int, generating: bool, budget_gflop: float) -> float:
    """cost(...) in FLOP; WorkTooLarge over the budget: field "steps" with the most steps when at least MIN_STEPS
    fit, else the continuation's field with the most continuation tokens, else "text"."""
    budget = budget_gflop * work.GIGA
    flops = cost(cfg, prompt, n, steps, generating)
    if flops <= budget:
        return flops
    what = f"attributing {n} continuation tokens after {prompt} with {steps} steps"
    field: tuple[str, ...] = ("text",)
    fits, advice = 0, "shorten the text"
    most = work.largest(lambda s: cost(cfg, prompt, n, s, generating), budget, MIN_STEPS, steps)
    tokens = work.largest(lambda k: cost(cfg, prompt, k, steps, generating), budget, 1, n)
    if most >= MIN_STEPS:
        field, fits, advice = ("steps",), most, f"lower steps to at most {most}"
    elif tokens >= 1:
        field = ("continuation", "new_tokens" if generating else "ids")
        fits, advice = tokens, f"attribute at most {tokens} continuation tokens"
    raise work.WorkTooLarge("work_too_large", field, f"{what} would take about {flops / work.GIGA:.4g} GFLOP, more "
                            f"than the {budget_gflop:g} GFLOP one request may use on this server "
                            f"(ATTNSCOPE_WORK_BUDGET); {advice}", gflop=float(f"{flops / work.GIGA:.6g}"),
                            budget_gflop=budget_gflop, largest=fits)


def greedy(model: LoadedModel, ids: Sequence[int], new_tokens: int) -> list[int]:
    """The next `new_tokens` tokens after `ids`, each the most probable (fewer after a token that ends text)."""
    generation = Generation(model, ids, new_tokens, Sampling(), attention=False)
    while not generation.finished:
        generation.step()
    return [token.id for token in generation.tokens]


def baseline_words(model: LoadedModel, encoded: Encoded, ids: torch.Tensor, kind: str,
                   ) -> tuple[torch.Tensor, int | None]:
    """b (1, T, E) for one of KINDS at every position of `ids` (1, T), and the repeated token's id (pad, mask)."""
    if kind not in KINDS:
        raise ValueError(f"baseline {kind!r} is not one of {', '.join(KINDS)}")
    token_id = baselines.check(model, encoded, kind)  # BaselineError without a pad or mask token
    word = model.net.embeddings.word
    if isinstance(token_id, int):
        return word(torch.full_like(ids, token_id)).detach(), token_id
    inputs = word(ids).detach()  # (1, T, E)
    if kind == "zeros":
        return torch.zeros_like(inputs), None
    return baselines.mean_embedding(model).expand_as(inputs).clone(), None


def log_probabilities(model: LoadedModel, ids: torch.Tensor, prompt: int, continuation: torch.Tensor,
                      ) -> Callable[[torch.Tensor], torch.Tensor]:
    """f from word embeddings (S, T, E) of `ids` (1, T), T = p + n − 1, to (S, n): each continuation token's
    log-probability at the position before it."""
    net = model.decoder
    segments = torch.zeros_like(ids)

    def f(words: torch.Tensor) -> torch.Tensor:
        hidden = last_hidden(net, words, ids, segments)[:, prompt - 1:]  # (S, n, D)
        logits = net.logits(hidden).float()  # (S, n, V)
        scores = torch.log_softmax(logits, dim=-1)  # (S, n, V)
        index = continuation[None, :, None].expand(words.shape[0], -1, 1)  # (S, n, 1)
        return scores.gather(-1, index)[..., 0]  # (S, n)
    return f


def attribute_continuation(model: LoadedModel, encoded: Encoded, ids: Sequence[int] | None = None,
                           new_tokens: int | None = None, steps: int = DEFAULT_STEPS, baseline: str = "mean",
                           stop: Callable[[], bool] | None = None) -> ContinuationAttribution:
    """Integrated gradients of each continuation token's log-probability over every earlier token (the module's
    docstring). `encoded`: the text; `ids` the continuation's token ids, or `new_tokens` to generate greedily
    first (exactly one of them; generation may end early at a token that ends text); `steps` the quadrature's
    nodes (MIN_STEPS..MAX_STEPS); `baseline` one of KINDS. TypeError for a model without an LM head;
    ContinuationError, StepsError and BaselineError for what does not fit; Stopped when `stop()` turns True
    between two passes."""
    if (ids is None) == (new_tokens is None):
        raise ValueError("give the continuation's ids or a number of new tokens, not both nor neither")
    _ = model.decoder  # TypeError for a model without an LM head, before any work
    checked_steps(steps)
    checked_continuation(model, len(encoded), ids, new_tokens)
    generated = ids is None
    continuation = greedy(model, encoded.ids, int(new_tokens or 0)) if generated else [int(i) for i in ids or ()]
    p, n = len(encoded), len(continuation)
    device = model.device
    every = [*encoded.ids, *continuation]
    read = torch.tensor([every[:-1]], device=device) if n else torch.zeros((1, 0), dtype=torch.long)  # (1, T)
    rows: list[ContinuationRow] = []
    kind_token = None
    if n:
        inputs = model.net.embeddings.word(read).detach()  # (1, T, E)
        start, kind_token = baseline_words(model, encoded, read, baseline)  # (1, T, E)
        f = log_probabilities(model, read, p, torch.tensor(continuation, device=device))
        nodes, weights = gauss_legendre(steps)
        alphas = np.concatenate([nodes, [1.0, 0.0]])  # f(x) and f(b) ride in the same passes, weight 0
        weights = np.concatenate([weights, [0.0, 0.0]])
        values, mean_gradient = _integrate(f, inputs, start, alphas, weights, n, stop)  # (S, n), (n, T, E)
        x, b = widen(inputs[0]).double().cpu(), widen(start[0]).double().cpu()  # (T, E)
        scores = ((x - b)[None] * mean_gradient).sum(dim=-1)  # (n, T)
        for j, token_id in enumerate(continuation):
            row = scores[j, :p + j]  # (p + j,): the tokens before c_j
            output, base = float(values[-2, j]), float(values[-1, j])
            check = Completeness(float(row.sum()), output - base, max(1.0, abs(output), abs(base)))
            token, display = model.tokenizer.token_text(token_id)
            rows.append(ContinuationRow(p + j, token_id, token, display, output, base,
                                        tuple(float(v) for v in row.tolist()), check,
                                        None if check.ok else unreliable(check, steps, baseline)))
    return ContinuationAttribution(p, tuple(every), generated, steps, baseline, kind_token, tuple(rows))


def _integrate(f: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor, baseline: torch.Tensor,
               alphas: np.ndarray, weights: np.ndarray, n: int, stop: Callable[[], bool] | None,
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """f (S, n) at baseline + α (inputs − baseline) for every α, and each row's Σ_s w_s ∂f_j/∂words at α_s
    (n, T, E), float64; passes of at most ROWS_PER_PASS interpolated tokens and HEAD_ROWS (α, row) pairs, each a
    forward and n backwards on its graph. Stopped before a pass when `stop()` is True."""
    t = inputs.shape[1]
    per_pass = max(1, min(ROWS_PER_PASS // t, HEAD_ROWS // n))
    values = []
    total = torch.zeros((n, t, inputs.shape[2]), dtype=torch.float64)  # (n, T, E)
    with torch.inference_mode(False), torch.enable_grad():
        for first in range(0, len(alphas), per_pass):
            if stop is not None and stop():
                raise Stopped()
            a = torch.tensor(alphas[first:first + per_pass], dtype=inputs.dtype, device=inputs.device)  # (S,)
            w = torch.from_numpy(weights[first:first + per_pass])  # (S,)
            words = (baseline + a[:, None, None] * (inputs - baseline)).requires_grad_(True)  # (S, T, E)
            out = f(words)  # (S, n)
            for j in range(n):  # the inputs are independent rows: Σ_s f_sj's gradient is each row's own
                (grad,) = torch.autograd.grad(out[:, j].sum(), words, retain_graph=j < n - 1)  # (S, T, E)
                total[j] += torch.einsum("s,ste->te", w, widen(grad).double().cpu())
            values.append(widen(out.detach()).double().cpu())
    return torch.cat(values), total
