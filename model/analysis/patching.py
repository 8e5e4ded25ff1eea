"""Activation patching: run the model on a corrupted text, copy one activation from the run on a clean text
of the same token count into it, and measure how much of the clean output comes back.

The metric m:
* a model with an LM head (GPT-2): the logit difference logit[good] − logit[bad] at the last position, for
  two answer tokens;
* any other (an encoder such as MiniLM): the cosine similarity of the mean-pooled last hidden state (the mean
  over every token of the input, [CLS] and [SEP] included, as sentence-transformers pools all-MiniLM-L6-v2)
  to the clean text's pooled embedding, so that m(clean) = 1.

What is copied (the `target`):
* "heads": one head's output at every position, its weighted sum softmax(q kᵀ)·v before the output projection
  W_o (the slice of the attention's concat step that belongs to the head), one (layer, head) at a time:
  a grid of layers × heads;
* "residual": the residual stream entering block l (the block's input x) at one position p: a grid of
  layers × positions. Row 0 is what the embeddings hand the first block. In a post-norm network (BERT,
  MiniLM: x = norm(x + sublayer(x))) the stream entering a block is the previous block's output after its
  last LayerNorm (row 0: after the embeddings' LayerNorm); in a pre-norm network (GPT-2: x = x +
  sublayer(norm(x))) it is the raw sum of the embeddings and every earlier sublayer's output, before the
  block's own norm.

Each cell is normalised as (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)): 1 when the patch restores
the clean metric, 0 when it changes nothing (it can leave 0..1 either way). When the two runs' metrics differ by
less than MIN_GAP the ratio means nothing, and the request is refused (PatchError `metric_unchanged`) rather
than answered with a grid of noise; identical texts are refused this way.

How it runs: the network's own modules, as Transformer.forward composes them (the embeddings, each Block with
its layer's mask, the final norm). The clean and the corrupted runs record each block's input and each head's
weighted sums (a forward pre-hook on the attention's output projection). A patched run starts from the
corrupted stream entering the patched layer (the layers before it are the corrupted run's), so layer l costs
L − l blocks; the copies of one layer run as one batch (every head of the layer, or every position), cut into
chunks of at most CHUNK_VALUES attention scores. The head's copy is made by a forward pre-hook on
MultiHeadAttention.output, so the network's forward is unchanged. A grid is L·H (heads) or L·T (residual) patched
runs: measured for MiniLM on one thread of this 2-core machine (CPU seconds, the machine shared): 13 tokens 0.17 s
(heads) and 0.18 s (residual); 128 tokens 1.5 s (heads) and 16 s (residual, 768 runs).

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

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import RuleError, Stopped
from model.nets.transformer import Transformer
from model.trace import widen

TARGETS = ("heads", "residual")
LOGIT_DIFFERENCE = "logit_difference"
COSINE_SIMILARITY = "cosine_similarity"
MIN_GAP = 1e-4  # |m(clean) − m(corrupted)| below this: nothing to restore (metric_unchanged)
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
    "metric_unchanged": (("clean", "corrupted"), "the clean and the corrupted metric differ by less than MIN_GAP"),
    "patch_too_large": (("tokens", "max_tokens"), "a grid over MAX_WORK multiply-adds: too many tokens for the target"),
}


class PatchError(RuleError):
    """A patching request the model cannot answer; `type` is one of PATCH_RULES."""

    rules = PATCH_RULES


@dataclass(frozen=True)
class Patching:
    """A patching grid. `patched` holds m after each patch, (L, H) for "heads" or (L, T) for "residual";
    `grid` the same cells normalised, (patched − corrupted) / (clean − corrupted). `answer`: the (good, bad)
    token ids of the logit difference, None for the cosine similarity."""

    target: str
    metric_name: str
    clean: float
    corrupted: float
    patched: torch.Tensor  # (L, H) or (L, T) float32
    grid: torch.Tensor  # (L, H) or (L, T) float32
    answer: tuple[int, int] | None


@dataclass(frozen=True)
class _Run:
    """One recorded run: each block's input (1, T, D) and each attention's concat of weighted sums (1, T, H·Dv),
    per layer, and the last hidden state (1, T, D)."""

    inputs: list[torch.Tensor]
    mixed: list[torch.Tensor]
    hidden: torch.Tensor


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


def _finish(net: Transformer, x: torch.Tensor, start: int, masks: list[torch.Tensor | None]) -> torch.Tensor:
    """Blocks start…L−1 on the stream x entering block `start`, then the final norm: the last hidden state."""
    for layer in range(start, net.cfg.n_layers):
        x = net.block(layer)(x, mask=masks[layer], mask_keeps_a_key=True)  # (B, T, D): no padding
    return x if net.final_norm is None else net.final_norm(x)  # (B, T, D)


def on_this_thread(hook: Callable[[object, tuple[torch.Tensor, ...]], object]) -> Callable[..., object]:
    """`hook` as a forward pre-hook that acts only in forwards on the thread that registers it: a model's modules
    are shared by the threads that run model work at the same time (a server's interactive and background lanes),
    and another thread's forward must neither be patched nor recorded by this run."""
    owner = threading.get_ident()

    def scoped(module: object, args: tuple[torch.Tensor, ...]) -> object:
        return hook(module, args) if threading.get_ident() == owner else None
    return scoped


def _record(model: LoadedModel, encoded: Encoded, masks: list[torch.Tensor | None]) -> _Run:
    net, device = model.net, model.device
    ids = torch.tensor([encoded.ids], device=device)  # (1, T)
    segments = torch.tensor([encoded.segments], device=device) if model.uses_segments else torch.zeros_like(ids)
    inputs: list[torch.Tensor] = []
    mixed: list[torch.Tensor] = []
    handles = []
    for layer in range(net.cfg.n_layers):
        block = net.block(layer)
        handles.append(block.register_forward_pre_hook(on_this_thread(lambda _m, args: inputs.append(args[0]))))
        handles.append(block.attention.output.register_forward_pre_hook(
            on_this_thread(lambda _m, args: mixed.append(args[0]))))
    try:
        hidden = _finish(net, net.embeddings(ids, segments), 0, masks)  # (1, T, D)
    finally:
        for handle in handles:
            handle.remove()
    return _Run(inputs, mixed, hidden)


def work(net: Transformer, target: str, t: int) -> float:
    """About how many multiply-adds a grid of `target` takes on t tokens: its patched runs (H or t per layer l),
    each through the L − l blocks from l on, each block per token its projections (q, k, v, o: 4·D², fewer with
    shared key-value heads ignored), its MLP (2 or 3 · D·d_ff) and its scores and weighted sums (2·t·D)."""
    cfg = net.cfg
    per_token = 4 * cfg.d_model ** 2 + (3 if cfg.mlp == "gated" else 2) * cfg.d_model * cfg.d_ff + 2 * t * cfg.d_model
    runs = cfg.n_heads if target == "heads" else t
    blocks = cfg.n_layers * (cfg.n_layers + 1) // 2  # Σ over l of L − l
    return float(runs * blocks * t * per_token)


def check_work(net: Transformer, target: str, t: int, max_work: float = MAX_WORK) -> None:
    """PatchError `patch_too_large` when the grid of `target` on t tokens would take over `max_work` multiply-adds."""
    if work(net, target, t) <= max_work:
        return
    fits = next((n for n in range(t - 1, 0, -1) if work(net, target, n) <= max_work), 1)
    other = " or target heads" if target == "residual" and work(net, "heads", t) <= max_work else ""
    raise PatchError("patch_too_large", "clean", f"a {target} grid on {t} tokens would take about "
                     f"{work(net, target, t):.2g} multiply-adds, more than the {max_work:.2g} one request may use "
                     f"here; shorten both texts to at most {fits} tokens{other}", tokens=t, max_tokens=fits)


def _chunks(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def _go_on(stop: Callable[[], bool] | None) -> None:
    if stop is not None and stop():
        raise Stopped()


def _heads_grid(net: Transformer, clean: _Run, corrupted: _Run, masks: list[torch.Tensor | None], rows: int,
                metric: Callable[[torch.Tensor], torch.Tensor], stop: Callable[[], bool] | None) -> torch.Tensor:
    n_layers, n_heads = net.cfg.n_layers, net.cfg.n_heads
    out = torch.empty(n_layers, n_heads)
    for layer in range(n_layers):
        output = net.block(layer).attention.output
        width = output.in_features // n_heads  # Dv
        for heads in _chunks(n_heads, rows):
            _go_on(stop)
            chosen = torch.zeros(len(heads), 1, output.in_features, dtype=torch.bool, device=clean.hidden.device)
            for row, head in enumerate(heads):
                chosen[row, 0, head * width:(head + 1) * width] = True  # (B, 1, H·Dv): this row's head

            def copy(_m: object, args: tuple[torch.Tensor, ...], chosen: torch.Tensor = chosen,
                     source: torch.Tensor = clean.mixed[layer]) -> tuple[torch.Tensor]:
                return (torch.where(chosen, source, args[0]),)  # (B, T, H·Dv)

            handle = output.register_forward_pre_hook(on_this_thread(copy))
            try:
                x = corrupted.inputs[layer].expand(len(heads), -1, -1)  # (B, T, D)
                out[layer, heads.start:heads.stop] = metric(_finish(net, x, layer, masks))
            finally:
                handle.remove()
    return out


def _residual_grid(net: Transformer, clean: _Run, corrupted: _Run, masks: list[torch.Tensor | None], rows: int,
                   metric: Callable[[torch.Tensor], torch.Tensor], stop: Callable[[], bool] | None) -> torch.Tensor:
    n_layers, t = net.cfg.n_layers, clean.hidden.shape[1]
    out = torch.empty(n_layers, t)
    for layer in range(n_layers):
        for positions in _chunks(t, rows):
            _go_on(stop)
            x = corrupted.inputs[layer].repeat(len(positions), 1, 1)  # (B, T, D)
            for row, p in enumerate(positions):
                x[row, p] = clean.inputs[layer][0, p]
            out[layer, positions.start:positions.stop] = metric(_finish(net, x, layer, masks))
    return out


@torch.inference_mode()
def patch(model: LoadedModel, clean: Encoded, corrupted: Encoded, target: str,
          answer: Sequence[int | str] | None = None, stop: Callable[[], bool] | None = None,
          max_work: float = MAX_WORK) -> Patching:
    """The patching grid of `target` ("heads" or "residual") from `clean` into `corrupted` (module docstring).
    PatchError for different token counts, answer tokens that do not fit the model, or metrics that do not
    differ, or a grid over `max_work` multiply-adds (check_work); ValueError for an unknown target. Stopped between
    patched batches once `stop()` is True."""
    if target not in TARGETS:
        raise ValueError(f"target {target!r} is not one of {', '.join(TARGETS)}")
    n, m = len(clean), len(corrupted)
    if n != m:
        raise PatchError("token_counts_differ", "corrupted", f"the clean text has {n} tokens and the corrupted text "
                         f"{m}; patching copies activations position by position, so both need the same count: "
                         f"change the corrupted text to {n} tokens", clean=n, corrupted=m)
    ids = checked_answer(model, answer)
    net = model.net
    check_work(net, target, n, max_work)
    masks = net.layer_masks(n, model.device)
    clean_run, corrupted_run = _record(model, clean, masks), _record(model, corrupted, masks)
    if ids is not None:
        good, bad = ids

        def metric(hidden: torch.Tensor) -> torch.Tensor:
            logits = widen(net.logits(hidden[:, -1]))  # (B, V)
            return (logits[:, good] - logits[:, bad]).cpu()  # (B,)
        name = LOGIT_DIFFERENCE
    else:
        pooled_clean = widen(clean_run.hidden).mean(dim=1)  # (1, D)

        def metric(hidden: torch.Tensor) -> torch.Tensor:
            return F.cosine_similarity(widen(hidden).mean(dim=1), pooled_clean, dim=-1).cpu()  # (B,)
        name = COSINE_SIMILARITY
    high, low = float(metric(clean_run.hidden)[0]), float(metric(corrupted_run.hidden)[0])
    if abs(high - low) < MIN_GAP:
        raise PatchError("metric_unchanged", "corrupted", f"the clean and the corrupted text give the same {name} "
                         f"({high:.6g} and {low:.6g}, closer than {MIN_GAP:g}): there is nothing for a patch to "
                         "restore; change the corrupted text" + (" or the answer tokens" if ids else ""),
                         clean=high, corrupted=low)
    rows = max(1, CHUNK_VALUES // (net.cfg.n_heads * n * n))
    grid_of = _heads_grid if target == "heads" else _residual_grid
    patched = grid_of(net, clean_run, corrupted_run, masks, rows, metric, stop)
    return Patching(target, name, high, low, patched, (patched - low) / (high - low), ids)
