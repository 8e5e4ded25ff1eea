"""Activation patching: run the model on a corrupted text, copy one activation from the run on a clean text
of the same token count into it, and measure how much of the clean output comes back.

The metric m:
* a model with an LM head (GPT-2): the logit difference logit[good] − logit[bad] at the last position, for
  two answer tokens;
* any other (an encoder such as MiniLM): the cosine similarity of the mean-pooled last hidden state (the mean
  over every token of the input, [CLS] and [SEP] included, as sentence-transformers pools all-MiniLM-L6-v2)
  to the clean text's pooled embedding, so that m(clean) = 1.

What is copied (the `target`; model/analysis/patching_targets.py says where each copy is made):
* "heads": one head's output at every position, its weighted sum softmax(q kᵀ)·v before the output projection
  W_o (the slice of the attention's concat step that belongs to the head), one (layer, head) at a time:
  a grid of layers × heads;
* "head_position": one head's output at one position only: layers × heads × positions;
* "pattern": one head's attention weights, every query's row, copied from the clean run; the weighted sum takes
  them with the corrupted run's values, and everything after is recomputed: layers × heads;
* "mlp": one layer's MLP output (what the MLP adds to the residual stream) at one position: layers × positions;
* "residual": the residual stream entering block l (the block's input x) at one position p: a grid of
  layers × positions. Row 0 is what the embeddings hand the first block. In a post-norm network (BERT,
  MiniLM: x = norm(x + sublayer(x))) the stream entering a block is the previous block's output after its
  last LayerNorm (row 0: after the embeddings' LayerNorm); in a pre-norm network (GPT-2: x = x +
  sublayer(norm(x))) it is the raw sum of the embeddings and every earlier sublayer's output, before the
  block's own norm.

A `metric` of one's own (Python only): a callable given the final logits (T, V) float32 of a model with an LM
head, or the last hidden state (T, D) of any other, for one run, returning a float; it replaces the metric above
(then `answer` is not taken).

Each cell is normalised as (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)): 1 when the patch restores
the clean metric, 0 when it changes nothing (it can leave 0..1 either way). The ratio divides by the gap, so it
is only read when the gap is large beside the metric's own scale: `normalised` is False, and the normalised grid
None (the raw `patched` metrics are always there), when |m(clean) − m(corrupted)| < GAP_SHARE · scale, where
scale = max(|m(clean)|, |m(corrupted)|, and for the logit difference the larger standard deviation of the two
runs' logits at the last position: the spread of logit differences between tokens of the vocabulary). Why 5 %:
the ratio magnifies every change of m by scale / gap; at a gap of 5 % of the scale, a patch that moves the
metric by 1 % of its scale — too little to tell from the metric's own wobble between near-identical inputs —
already reads as 0.2 of the gap, so below it a grid's colours would show that wobble as structure. (The
cosine similarity's scale is 1: a gap under 0.05.) Texts whose metrics are equal (gap exactly 0: identical texts)
are refused (PatchError `metric_unchanged`): there is nothing to restore, not even a raw change.

How it runs: the network's own modules, as Transformer.forward composes them (the embeddings, each Block with
its layer's mask, the final norm). The clean and the corrupted runs record each block's input and what the target
copies. A patched run starts from the corrupted stream entering the patched layer (the layers before it are the
corrupted run's), so layer l costs L − l blocks; the copies of one layer run as one batch (every head of the
layer, every position, or every (head, position)), cut into chunks of at most CHUNK_VALUES attention scores.
A grid is L·H (heads, pattern), L·T (residual, mlp) or L·H·T (head_position) patched runs: measured for MiniLM on
one thread of this 2-core machine (CPU seconds, the machine shared): 13 tokens 0.17 s (heads) and 0.18 s
(residual); 128 tokens 1.5 s (heads) and 16 s (residual, 768 runs). Later, on the same machine: 13 tokens
0.13 s for each of heads, residual, pattern and mlp, 1.3 s for head_position (936 runs); head_position at 37
tokens, the most the default budget lets it take, 10.6 s (2664 runs).

A grid holds the model worker while it runs (it stops between patched batches once `stop()` says the client has
left), so its size is bounded too:
`work` estimates a grid's multiply-adds, and a grid above `max_work` (MAX_WORK by default: MiniLM's residual grid
at 128 tokens, the 16 s above; the server passes half its ATTNSCOPE_WORK_BUDGET, whose default of 1300 GFLOP is
this same 6.5e11 multiply-adds) is refused (PatchError `patch_too_large`, with the most tokens that fit this model
and target).
MiniLM's heads grid fits at its whole limit of 512 tokens; a 12-layer, 768-wide GPT-2's heads grid up to about
90 tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model.analysis.patching_targets import GRID_SHAPES, Metric, finish, on_this_thread, record
from model.analysis.patching_targets import grid as grid_of
from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import RuleError
from model.nets.transformer import Transformer
from model.trace import widen

__all__ = ["GAP_SHARE", "TARGETS", "PatchError", "Patching", "check_work", "finish", "on_this_thread", "patch", "work"]

TARGETS = ("heads", "residual", "head_position", "pattern", "mlp")
LOGIT_DIFFERENCE = "logit_difference"
COSINE_SIMILARITY = "cosine_similarity"
CUSTOM = "custom"  # a metric callable of one's own
GAP_SHARE = 0.05  # |m(clean) − m(corrupted)| below this share of the metric's scale: not normalised (module doc)
CHUNK_VALUES = 1 << 24  # attention scores (rows x H x T x T) per patched batch: 64 MB of float32
MAX_WORK = 6.5e11  # multiply-adds of one grid (`work`): MiniLM's residual grid at 128 tokens, 16 CPU s here

# error type -> (the ctx keys its error carries, what breaks it); the route documents this table
PATCH_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "token_counts_differ": (("clean", "corrupted"), "the clean and the corrupted text tokenize to different counts"),
    "answer_missing": ((), "no answer tokens for a model with an LM head"),
    "answer_not_allowed": ((), "answer tokens for a model without an LM head (its metric is the cosine similarity)"),
    "answer_out_of_range": (("id", "vocab_size"), "an answer token id at or beyond the vocabulary's size"),
    "answer_not_single_token": (("tokens",), "an answer text that is not exactly one token"),
    "answer_same": ((), "the same token as the good and the bad answer (the logit difference is 0)"),
    "metric_unchanged": (("clean", "corrupted"), "the clean and the corrupted metric are exactly equal (identical "
                         "texts): nothing to restore"),
    "patch_too_large": (("tokens", "max_tokens"), "a grid over MAX_WORK multiply-adds: too many tokens for the target"),
}


class PatchError(RuleError):
    """A patching request the model cannot answer; `type` is one of PATCH_RULES."""

    rules = PATCH_RULES


@dataclass(frozen=True)
class Patching:
    """A patching grid. `patched` holds m after each patch: (L, H) for "heads" and "pattern", (L, T) for
    "residual" and "mlp", (L, H, T) for "head_position" (`axes` names them); `grid` the same cells normalised,
    (patched − corrupted) / (clean − corrupted), or None when `normalised` is False: the gap is below
    `min_gap` = GAP_SHARE · scale (module docstring). `answer`: the (good, bad) token ids of the logit difference,
    None for the cosine similarity or a metric of one's own."""

    target: str
    metric_name: str
    clean: float
    corrupted: float
    patched: torch.Tensor  # (L, H), (L, T) or (L, H, T) float32
    grid: torch.Tensor | None  # as patched, or None when not normalised
    answer: tuple[int, int] | None
    normalised: bool = True
    min_gap: float = 0.0  # GAP_SHARE · scale: the smallest |clean − corrupted| that is normalised
    scale: float = 1.0

    @property
    def gap(self) -> float:
        return self.clean - self.corrupted

    @property
    def axes(self) -> tuple[str, ...]:
        return GRID_SHAPES[self.target]


def answer_id(model: LoadedModel, value: int | str, which: int) -> int:
    """A token id as given (below the vocabulary's size), or the one token a text is (the tokenizer's special
    tokens left out: GPT-2's " Paris" with its space is one token, "Paris" another)."""
    vocab = model.cfg.vocab_size
    if isinstance(value, int):
        if not 0 <= value < vocab:
            raise PatchError("answer_out_of_range", ("answer", which), f"answer token id {value} is not in the "
                             f"vocabulary; ids run 0..{vocab - 1}", id=value, vocab_size=vocab)
        return value
    encoded = model.tokenizer.encode(value)
    ids = [i for i, token in zip(encoded.ids, encoded.tokens, strict=True) if not token.special]
    if len(ids) != 1:
        pieces = ", ".join(repr(t.text) for t in encoded.tokens if not t.special)
        raise PatchError("answer_not_single_token", ("answer", which), f"answer {value!r} is {len(ids)} tokens "
                         f"({pieces}), not one; an answer must be a single token of the vocabulary: try a shorter "
                         "word, or send its token id (GPT-2 spells a word after a space with the space: ' Paris')",
                         tokens=len(ids))
    return ids[0]


def checked_answer(model: LoadedModel, answer: Sequence[int | str] | None) -> tuple[int, int] | None:
    """The (good, bad) ids for a model with an LM head; None for one without. PatchError otherwise."""
    if not model.lm_head:
        if answer is not None:
            raise PatchError("answer_not_allowed", "answer", f"model {model.spec.id!r} has no LM head: its metric is "
                             "the cosine similarity of the pooled embedding to the clean text's; remove answer")
        return None
    if answer is None:
        raise PatchError("answer_missing", "answer", f"model {model.spec.id!r} has an LM head: its metric is the "
                         "logit difference of two answer tokens at the last position; send answer [good, bad]")
    good, bad = (answer_id(model, value, i) for i, value in enumerate(answer))
    if good == bad:
        raise PatchError("answer_same", "answer", f"the good and the bad answer are the same token ({good}); "
                         "send two different tokens")
    return good, bad


def work(net: Transformer, target: str, t: int) -> float:
    """About how many multiply-adds a grid of `target` takes on t tokens: its patched runs (per layer l: H for
    heads and pattern, t for residual and mlp, H·t for head_position),
    each through the L − l blocks from l on, each block per token its projections (q, k, v, o: 4·D², fewer with
    shared key-value heads ignored), its MLP (2 or 3 · D·d_ff) and its scores and weighted sums (2·t·D)."""
    cfg = net.cfg
    per_token = 4 * cfg.d_model ** 2 + (3 if cfg.mlp == "gated" else 2) * cfg.d_model * cfg.d_ff + 2 * t * cfg.d_model
    runs = {"heads": cfg.n_heads, "pattern": cfg.n_heads, "head_position": cfg.n_heads * t}.get(target, t)
    blocks = cfg.n_layers * (cfg.n_layers + 1) // 2  # Σ over l of L − l
    return float(runs * blocks * t * per_token)


def check_work(net: Transformer, target: str, t: int, max_work: float = MAX_WORK) -> None:
    """PatchError `patch_too_large` when the grid of `target` on t tokens would take over `max_work` multiply-adds."""
    if work(net, target, t) <= max_work:
        return
    fits = next((n for n in range(t - 1, 0, -1) if work(net, target, n) <= max_work), 1)
    other = " or target heads" if target not in ("heads", "pattern") and work(net, "heads", t) <= max_work else ""
    raise PatchError("patch_too_large", "clean", f"a {target} grid on {t} tokens would take about "
                     f"{work(net, target, t):.2g} multiply-adds, more than the {max_work:.2g} one request may use "
                     f"here; shorten both texts to at most {fits} tokens{other}", tokens=t, max_tokens=fits)


def _default_metric(model: LoadedModel, ids: tuple[int, int] | None, clean_hidden: torch.Tensor,
                    ) -> tuple[str, Metric]:
    net = model.net
    if ids is not None:
        good, bad = ids

        def logit_difference(hidden: torch.Tensor) -> torch.Tensor:
            logits = widen(net.logits(hidden[:, -1]))  # (B, V)
            return (logits[:, good] - logits[:, bad]).cpu()  # (B,)
        return LOGIT_DIFFERENCE, logit_difference
    pooled_clean = widen(clean_hidden).mean(dim=1)  # (1, D)

    def cosine(hidden: torch.Tensor) -> torch.Tensor:
        return F.cosine_similarity(widen(hidden).mean(dim=1), pooled_clean, dim=-1).cpu()  # (B,)
    return COSINE_SIMILARITY, cosine


def _own_metric(model: LoadedModel, metric: Callable[[torch.Tensor], float]) -> Metric:
    """A metric of one run, given the logits (T, V) or the last hidden state (T, D), as a metric of a batch."""
    net = model.net

    def batched(hidden: torch.Tensor) -> torch.Tensor:
        seen = widen(net.logits(hidden)) if model.lm_head else widen(hidden)  # (B, T, V) or (B, T, D)
        return torch.tensor([float(metric(row)) for row in seen], dtype=torch.float32)  # (B,)
    return batched


def _scale(model: LoadedModel, name: str, high: float, low: float, hiddens: Sequence[torch.Tensor]) -> float:
    """The metric's scale that the gap is measured against (module docstring)."""
    scale = max(abs(high), abs(low))
    if name == LOGIT_DIFFERENCE:
        for hidden in hiddens:
            scale = max(scale, float(widen(model.net.logits(hidden[0, -1])).std()))
    return scale


@torch.inference_mode()
def patch(model: LoadedModel, clean: Encoded, corrupted: Encoded, target: str,
          answer: Sequence[int | str] | None = None, stop: Callable[[], bool] | None = None,
          max_work: float = MAX_WORK, metric: Callable[[torch.Tensor], float] | None = None) -> Patching:
    """The patching grid of `target` (one of TARGETS) from `clean` into `corrupted` (module docstring).
    `metric`: a callable of one's own, given one run's final logits (T, V) float32 (a model with an LM head) or
    last hidden state (T, D) (any other) and returning a float; None: the logit difference of `answer` or the
    cosine similarity. PatchError for different token counts, answer tokens that do not fit the model, metrics
    that are exactly equal, or a grid over `max_work` multiply-adds (check_work); ValueError for an unknown
    target or both a metric and an answer. Stopped between patched batches once `stop()` is True."""
    if target not in TARGETS:
        raise ValueError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    if metric is not None and answer is not None:
        raise ValueError("a metric of one's own takes no answer tokens: leave answer out, or metric")
    n, m = len(clean), len(corrupted)
    if n != m:
        raise PatchError("token_counts_differ", "corrupted", f"the clean text has {n} tokens and the corrupted text "
                         f"{m}; patching copies activations position by position, so both need the same count: "
                         f"change the corrupted text to {n} tokens", clean=n, corrupted=m)
    ids = None if metric is not None else checked_answer(model, answer)
    net = model.net
    check_work(net, target, n, max_work)
    masks = net.layer_masks(n, model.device)
    clean_run, corrupted_run = record(model, clean, masks, target), record(model, corrupted, masks, target)
    if metric is None:
        name, batched = _default_metric(model, ids, clean_run.hidden)
    else:
        name, batched = CUSTOM, _own_metric(model, metric)
    high, low = float(batched(clean_run.hidden)[0]), float(batched(corrupted_run.hidden)[0])
    if high == low:
        raise PatchError("metric_unchanged", "corrupted", f"the clean and the corrupted text give the same {name} "
                         f"({high:.6g}): there is nothing for a patch to restore; change the corrupted text"
                         + (" or the answer tokens" if ids else ""), clean=high, corrupted=low)
    scale = _scale(model, name, high, low, (clean_run.hidden, corrupted_run.hidden))
    rows = max(1, CHUNK_VALUES // (net.cfg.n_heads * n * n))
    patched = grid_of(target, net, clean_run, corrupted_run, masks, rows, batched, stop)
    normalised = abs(high - low) >= GAP_SHARE * scale
    return Patching(target, name, high, low, patched, (patched - low) / (high - low) if normalised else None, ids,
                    normalised, GAP_SHARE * scale, scale)
