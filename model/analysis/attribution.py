"""Attribution beside attention: how much one output depends on each input token, by gradients, next to what
attention, rollout and norm-based contributions say about the same tokens.

The output f:
* a model with an LM head (GPT-2): the next-token logit of a chosen token id at the last position;
* any other (an encoder such as MiniLM): the cosine similarity of the mean-pooled last hidden state (the mean
  over every token of the input, [CLS] and [SEP] included, as sentence-transformers pools all-MiniLM-L6-v2
  without padding) to a second text's pooled embedding, which is held fixed.

Per input token i, with e_i its word embedding (the word table's row, before any embedding scale, with the
position and token-type embeddings added as the network adds them):
* gradient × input: (∂f/∂e_i) · e_i, summed over the embedding dimension;
* integrated gradients (Sundararajan, Taly and Yan 2017): (e_i − b_i) · ∫₀¹ ∂f/∂e_i(b + α(e − b)) dα, the
  baseline b chosen among model/analysis/baselines.py's (by default the mean of the word embedding table at
  every position: non-zero and uninformative, where RMSNorm is not singular; that module says why). The
  integral is an n-point Gauss–Legendre quadrature on [0, 1]: the integrand is smooth in α (GELU, softmax and
  LayerNorm are analytic), where Gauss–Legendre's error falls far faster than a Riemann sum's O(1/n²); Captum's
  default is the same rule. Completeness: the attributions sum to f(x) − f(b). Measured relative errors from
  the pad or zero baseline: MiniLM at 13 tokens 4e-4 (32 nodes), 5e-7 (64), at 128 tokens 1.4e-3 (32), 5e-7
  (64); the test GPT-2 (tests/checkpoints.py, sharp random weights) up to 1.4e-2 at 32 nodes and 5e-4 at 64.
  From the default baseline (the mean embedding) on the Llama-family test checkpoints (tests/checkpoints.py
  LLAMA_KINDS, sharp random weights, 27 tokens): 64 nodes left 8.0 %, 6.9 % and 6.7 % (llama, smollm, gemma2),
  128 at most 0.11 %, 256 at most 2e-6; MiniLM and the test GPT-2 stay under 6e-6 from 64 on. DEFAULT_STEPS is
  therefore 128; up to MAX_STEPS = 512 may be asked for.

Completeness is checked on every integrated-gradients answer: `ok` when |Σ attributions − (f(x) − f(b))| ≤
COMPLETENESS_TOLERANCE (5 %) of |f(x) − f(b)|. A difference under TINY_DIFFERENCE × max(1, |f(x)|, |f(b)|) is
too small for that test to mean anything (float32's rounding of f is of that order): not ok, reason
"difference_too_small". When not ok, the ranking is not claimed: every Spearman ρ is None and `warning` says what
to change (more steps, up to MAX_STEPS; another baseline).

The network's forward (Transformer.forward) runs under torch.inference_mode, so the differentiable forward
here is composed of its own parts (the embedding tables and norm, Transformer.layer_masks, the blocks, the
final norm and the LM head): the same modules, the same numbers.

Beside the gradients, one score per token from the last layer, for the row(s) the output reads: the last
query's row for an LM-head model (the position whose logit f is), the mean over every query's row for a
pooled encoder (f reads the mean of every position):
* attention: the mean over heads of the attention weights;
* rollout: attention rollout (model/analysis/aggregate.py, residual 0.5) up to the last layer;
* contributions: the layer's ||Σ_h a_hij f_h(x_j)|| (model/analysis/contributions.py; the layer_sum of the
  /contributions route).
Each is compared with the chosen method's scores by absolute value (|IG| or |grad × input|: how much a token
matters, whatever its sign, as the three others are sizes) with Spearman's rank correlation ρ; ρ is None
when it is undefined (fewer than two tokens, or scores that are all equal).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from model.analysis import aggregate as aggregates
from model.analysis import baselines, study
from model.checkpoints.bert import CheckpointEmbeddings
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import InputError, Stopped
from model.nets.transformer import Embeddings, Transformer
from model.trace import widen

METHODS = ("gradient_x_input", "integrated_gradients")
MIN_STEPS, MAX_STEPS = 32, 512
DEFAULT_STEPS = 128  # Gauss-Legendre nodes: from the mean baseline 64 left up to 8 % on Llama-family test models
ROWS_PER_PASS = 4096  # interpolated inputs x tokens per forward and backward: bounds the activations kept
COMPLETENESS_TOLERANCE = 0.05  # |Σ − difference| over |difference| beyond which the ranking is not claimed
TINY_DIFFERENCE = 1e-5  # |difference| under this × max(1, |f(x)|, |f(b)|): too small to check against
COMPARED = ("attention", "rollout", "contributions")


class TargetError(InputError):
    """A target that does not fit the model: the wrong kind (an id for an encoder, a text for an LM-head model),
    or a token id outside the vocabulary."""

    def __init__(self, type_: str, message: str, **ctx: int | str) -> None:
        super().__init__(("target",), message)
        self.type = type_
        self.ctx = dict(ctx) if ctx else None


class StepsError(InputError):
    type = "steps_out_of_range"

    def __init__(self, steps: int) -> None:
        super().__init__(("steps",), f"steps {steps} is outside {MIN_STEPS}..{MAX_STEPS}")
        self.ctx = {"steps": steps, "min": MIN_STEPS, "max": MAX_STEPS}


@dataclass(frozen=True)
class Completeness:
    """Integrated gradients' check: `sum` of the attributions against `difference` = f(x) − f(baseline); `scale`
    is max(1, |f(x)|, |f(baseline)|), what a difference is tiny against."""

    sum: float
    difference: float
    scale: float = 1.0

    @property
    def relative_gap(self) -> float:
        """|sum − difference| / |difference| (infinite when the difference is 0 and the sum is not)."""
        gap = abs(self.sum - self.difference)
        if self.difference == 0.0:
            return 0.0 if gap == 0.0 else math.inf
        return gap / abs(self.difference)

    @property
    def reason(self) -> str | None:
        """None when ok; "difference_too_small" when |difference| is under TINY_DIFFERENCE × scale; "gap" when the
        relative gap is over COMPLETENESS_TOLERANCE (or not a number)."""
        if abs(self.difference) < TINY_DIFFERENCE * self.scale:
            return "difference_too_small"
        gap = self.relative_gap
        return None if math.isfinite(gap) and gap <= COMPLETENESS_TOLERANCE else "gap"

    @property
    def ok(self) -> bool:
        return self.reason is None


def unreliable(completeness: Completeness, steps: int, baseline: str) -> str:
    """The warning of an answer whose completeness fails: what failed and what to change."""
    other = "another baseline (\"mean\", \"zeros\", \"pad\", \"mask\" or a baseline text)"
    if completeness.reason == "difference_too_small":
        return (f"completeness cannot be checked: f(x) − f(baseline) is {completeness.difference:.3g}, too small "
                f"beside f's size; the ranking is unreliable: choose {other} whose output differs from f(x)")
    more = f"raise steps (now {steps}, up to {MAX_STEPS}) or choose " if steps < MAX_STEPS else "choose "
    return (f"completeness failed: the attributions sum to {completeness.sum:.4g} but f(x) − f(baseline) is "
            f"{completeness.difference:.4g}, {completeness.relative_gap:.1%} apart (over "
            f"{COMPLETENESS_TOLERANCE:.0%}) with baseline {baseline!r}; the ranking is unreliable: {more}{other}")


@dataclass(frozen=True)
class Attribution:
    """One input's attributions and the scores compared with them, one number per token each."""

    method: str  # "gradient_x_input" or "integrated_gradients"
    steps: int | None  # the quadrature's nodes (integrated gradients), else None
    output_name: str  # "logit" (LM head) or "cosine" (pooled embedding)
    output: float  # f(x)
    baseline: str  # "mean", "pad", "mask", "zeros" or "text" (model/analysis/baselines.py)
    baseline_token: int | None  # the padding or mask token's id for "pad" or "mask"
    baseline_text: str | None  # its token string ("[PAD]")
    baseline_output: float  # f(baseline)
    rows: str  # "last": the last query's row; "mean": the mean over every query's row
    scores: tuple[float, ...]  # the method's attributions, signed
    compared: dict[str, tuple[float, ...]]  # attention, rollout, contributions
    agreement: dict[str, float | None]  # Spearman ρ of each with |scores|; None where undefined or not ok
    completeness: Completeness | None  # integrated gradients only
    baseline_source: str | None = None  # the baseline text for "text"
    warning: str | None = None  # when completeness is not ok: why the ranking is unreliable, what to change


def checked_target(model: LoadedModel, target: int | str) -> int | Encoded:
    """A token id in the vocabulary (an LM-head model), or a second text's tokens (any other model); raises
    TargetError for the other kind or an id outside the vocabulary, TooManyTokens for a text over the limit."""
    if model.lm_head:
        if isinstance(target, str):
            raise TargetError("target_kind", f"a text is the wrong kind of target for model {model.spec.id!r}, "
                              f"which has an LM head: send a token id (an integer 0..{model.cfg.vocab_size - 1}) "
                              "whose next-token logit to explain", expected="token id")
        if not 0 <= target < model.cfg.vocab_size:
            raise TargetError("target_out_of_range", f"token id {target} is outside this model's vocabulary "
                              f"0..{model.cfg.vocab_size - 1}", id=target, vocab_size=model.cfg.vocab_size)
        return target
    if not isinstance(target, str):
        raise TargetError("target_kind", f"a token id is the wrong kind of target for model {model.spec.id!r}, "
                          "which has no LM head: send a second text (the cosine similarity of the two texts' pooled "
                          "embeddings is explained)", expected="text")
    return model.tokenizer.encode(target)


class NotOneToken(InputError):
    """A text meant as one token (a next token to explain) that the tokenizer makes into another count."""

    type = "not_single_token"

    def __init__(self, text_tokens: list[str]) -> None:
        count = len(text_tokens)
        made = ", ".join(repr(token) for token in text_tokens[:8]) + (" …" if count > 8 else "")
        super().__init__(("text",), f"the text makes {count} tokens ({made}), not one; send a text that is a single "
                         "token of this model (a leading space is part of a GPT-2 token: \" Paris\")")
        self.ctx = {"count": count}


def single_token(model: LoadedModel, text: str) -> tuple[int, str, str]:
    """The one vocabulary id a text makes (the tokenizer's template tokens aside), with its token string and
    decoding; NotOneToken when it makes none or several."""
    encoded = model.tokenizer.encode(text)
    own = [(token_id, token) for token_id, token in zip(encoded.ids, encoded.tokens, strict=True) if not token.special]
    if len(own) != 1:
        raise NotOneToken([token.text for _, token in own])
    token_id = own[0][0]
    token, display = model.tokenizer.token_text(token_id)
    return token_id, token, display


def checked_steps(steps: int) -> int:
    if not MIN_STEPS <= steps <= MAX_STEPS:
        raise StepsError(steps)
    return steps


def pad_token(model: LoadedModel) -> int | None:
    """The id of the tokenizer's padding token ([PAD], <pad>) among its added tokens; None when it has none."""
    return baselines.pad_token(model)


def embed_words(embeddings: Embeddings, words: torch.Tensor, ids: torch.Tensor, segments: torch.Tensor,
                ) -> torch.Tensor:
    """The embeddings' output with `words` (B, T, E) in place of the word table's rows for `ids` (1, T): what
    Embeddings.forward (or CheckpointEmbeddings.forward) computes, the other tables and the norm as they are."""
    if isinstance(embeddings, CheckpointEmbeddings):
        assert embeddings.position is not None and embeddings.token_type is not None and embeddings.norm is not None
        x = words + embeddings.position(embeddings.positions(ids)) + embeddings.token_type(segments)  # (B, T, E)
        out: torch.Tensor = embeddings.norm(x)
        if embeddings.project is not None:
            out = embeddings.project(out)  # (B, T, D)
        return out
    if type(embeddings) is not Embeddings:
        raise TypeError(f"no differentiable embedding for {type(embeddings).__name__}")
    x = words
    if embeddings.scale is not None:
        x = x * torch.tensor(embeddings.scale, dtype=x.dtype)  # (B, T, D)
    if embeddings.position is not None:
        x = x + embeddings.position(torch.arange(ids.shape[1], device=ids.device))  # (B, T, D)
    if embeddings.token_type is not None:
        x = x + embeddings.token_type(segments)  # (B, T, D)
    normed: torch.Tensor = x if embeddings.norm is None else embeddings.norm(x)  # (B, T, D)
    return normed


def last_hidden(net: Transformer, words: torch.Tensor, ids: torch.Tensor, segments: torch.Tensor) -> torch.Tensor:
    """Transformer.forward from the word embeddings (B, T, E) of one input's ids (1, T), differentiable: (B, T, D)."""
    masks = net.layer_masks(ids.shape[1], ids.device)
    x = embed_words(net.embeddings, words, ids, segments)  # (B, T, D)
    for block, mask in zip(net.blocks, masks, strict=True):
        x = block(x, mask=mask, mask_keeps_a_key=True)  # (B, T, D): no padding
    if net.final_norm is not None:
        x = net.final_norm(x)
    return x


def output_function(model: LoadedModel, target: int | Encoded, ids: torch.Tensor, segments: torch.Tensor,
                    ) -> tuple[str, Callable[[torch.Tensor], torch.Tensor]]:
    """f from word embeddings (B, T, E) to (B,): the target's logit at the last position, or the pooled
    embedding's cosine similarity to the target text's."""
    net = model.net
    if isinstance(target, int):
        def logit(words: torch.Tensor) -> torch.Tensor:
            hidden = last_hidden(net, words, ids, segments)  # (B, T, D)
            return net.logits(hidden[:, -1])[:, target]  # (B,)
        return "logit", logit
    reference = model.run(target)[0].mean(dim=0).to(model.device, model.dtype)  # (D,): the target's mean pooling

    def cosine(words: torch.Tensor) -> torch.Tensor:
        pooled = last_hidden(net, words, ids, segments).mean(dim=1)  # (B, D): mean over every token
        return torch.nn.functional.cosine_similarity(pooled, reference[None], dim=-1)  # (B,)
    return "cosine", cosine


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The n nodes α_k in (0, 1) and weights w_k (summing to 1) of Gauss–Legendre quadrature on [0, 1]."""
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return (nodes + 1.0) / 2.0, weights / 2.0


def along_path(f: Callable[[torch.Tensor], torch.Tensor], inputs: torch.Tensor, baseline: torch.Tensor,
               alphas: np.ndarray, stop: Callable[[], bool] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """f and its gradient at baseline + α (inputs − baseline) for every α: (S,) and (S, T, E), float64, in
    passes of at most ROWS_PER_PASS interpolated tokens. Stopped before a pass when `stop()` is True."""
    t = inputs.shape[1]
    per_pass = max(1, ROWS_PER_PASS // t)
    values, gradients = [], []
    with torch.inference_mode(False), torch.enable_grad():
        for start in range(0, len(alphas), per_pass):
            if stop is not None and stop():
                raise Stopped()
            a = torch.tensor(alphas[start:start + per_pass], dtype=inputs.dtype, device=inputs.device)  # (S,)
            words = (baseline + a[:, None, None] * (inputs - baseline)).requires_grad_(True)  # (S, T, E)
            out = f(words)  # (S,)
            (grad,) = torch.autograd.grad(out.sum(), words)  # (S, T, E): the inputs are independent rows
            values.append(widen(out.detach()).double().cpu())
            gradients.append(widen(grad).double().cpu())
    return torch.cat(values), torch.cat(gradients)


def row_scores(matrix: torch.Tensor, rows: str) -> tuple[float, ...]:
    """One score per key of an (N, N) matrix: the last query's row, or the mean over every query's row."""
    chosen = matrix[-1] if rows == "last" else matrix.double().mean(dim=0)  # (N,)
    return tuple(float(v) for v in chosen.tolist())


def mean_ranks(values: tuple[float, ...]) -> np.ndarray:
    """Each value's rank from 1, tied values given the mean of the ranks they share."""
    x = np.asarray(values, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])  # first index of each run of equal values
    ends = np.r_[starts[1:], len(x)]
    ranks = np.empty(len(x))
    ranks[order] = np.repeat((starts + ends + 1) / 2, ends - starts)  # mean of ranks starts+1 .. ends
    return ranks


def spearman(a: tuple[float, ...], b: tuple[float, ...]) -> float | None:
    """Spearman's ρ: Pearson's correlation of the mean ranks; None where it is undefined."""
    if len(a) < 2 or len(set(a)) < 2 or len(set(b)) < 2:
        return None
    ra, rb = mean_ranks(a), mean_ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    rho = float(ra @ rb / math.sqrt(float(ra @ ra) * float(rb @ rb)))
    return rho if math.isfinite(rho) else None


def compared_scores(model: LoadedModel, encoded: Encoded, rows: str) -> dict[str, tuple[float, ...]]:
    """The last layer's attention (mean over heads), rollout and contributions, for the chosen rows."""
    maps = model.attention_maps(encoded).per_layer
    last = model.cfg.n_layers - 1
    attention = aggregates.mean_over_heads(maps[-1:])[0]  # (N, N)
    rollout = aggregates.rollout(maps)[-1]  # (N, N)
    contributions = study.contributions(model, encoded, [last], list(range(model.cfg.n_heads))).layer_sum[0]
    return {"attention": row_scores(attention, rows), "rollout": row_scores(rollout, rows),
            "contributions": row_scores(contributions, rows)}


def attribute(model: LoadedModel, encoded: Encoded, target: int | str, method: str = "integrated_gradients",
              steps: int = DEFAULT_STEPS, baseline: baselines.BaselineRequest = baselines.DEFAULT,
              stop: Callable[[], bool] | None = None) -> Attribution:
    """Attributions of one input's tokens to f (the module's docstring), beside attention, rollout and
    contributions, with each one's Spearman ρ against the method's absolute scores.

    `target`: a token id for an LM-head model, a second text for any other (TargetError otherwise);
    `steps`: integrated gradients' quadrature nodes, MIN_STEPS..MAX_STEPS (ignored by gradient × input);
    `baseline`: "mean", "pad", "mask", "zeros" or {"text": ...} (model/analysis/baselines.py; BaselineError when
    the model or input cannot have it). When completeness fails, no ρ is given and `warning` says why."""
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not one of {', '.join(METHODS)}")
    if method == "integrated_gradients":
        checked_steps(steps)
    goal = checked_target(model, target)
    start = baselines.resolve(model, encoded, baseline)
    ids = torch.tensor([encoded.ids], device=model.device)  # (1, T)
    segments = torch.tensor([encoded.segments], device=model.device) if model.uses_segments else torch.zeros_like(ids)
    name, f = output_function(model, goal, ids, segments)
    inputs = model.net.embeddings.word(ids).detach()  # (1, T, E)
    if method == "integrated_gradients":
        nodes, weights = gauss_legendre(steps)
        alphas = np.concatenate([nodes, [1.0, 0.0]])  # f(x) and f(baseline) ride in the same passes
    else:
        alphas, weights = np.array([1.0, 0.0]), np.zeros(0)
    values, gradients = along_path(f, inputs, start.words, alphas, stop)  # (S,), (S, T, E)
    x, b = widen(inputs[0]).double().cpu(), widen(start.words[0]).double().cpu()  # (T, E)
    output, baseline_output = float(values[-2]), float(values[-1])
    completeness, warning = None, None
    if method == "integrated_gradients":
        mean_gradient = torch.einsum("s,ste->te", torch.from_numpy(weights), gradients[:-2])  # (T, E)
        attributions = ((x - b) * mean_gradient).sum(dim=-1)  # (T,)
        completeness = Completeness(float(attributions.sum()), output - baseline_output,
                                    max(1.0, abs(output), abs(baseline_output)))
        if not completeness.ok:
            warning = unreliable(completeness, steps, start.kind)
    else:
        attributions = (gradients[-2] * x).sum(dim=-1)  # (T,)
    rows = "last" if isinstance(goal, int) else "mean"
    scores = tuple(float(v) for v in attributions.tolist())
    compared = compared_scores(model, encoded, rows)
    magnitude = tuple(abs(v) for v in scores)
    agreement = {key: None if warning else spearman(magnitude, compared[key]) for key in COMPARED}
    return Attribution(method, steps if method == "integrated_gradients" else None, name, output, start.kind,
                       start.token_id, start.token, baseline_output, rows, scores, compared, agreement, completeness,
                       start.text, warning)
