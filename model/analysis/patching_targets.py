"""The patched runs of activation patching, one function per target (model/analysis/patching.py composes them).

A recorded run (`record`) keeps what the targets copy from it: each block's input x (1, T, D), each attention's
concat of weighted sums (1, T, H·Dv), and when asked each attention's weights (1, H, T, S) and each MLP's output
(1, T, D). A grid (`grid`) patches one cell per row of a batch: every patched run starts from the corrupted stream
entering the patched layer (the layers before it are the corrupted run's) and runs the blocks from there on.

Where the copy is made, with the network's forward unchanged and every change undone in a finally:
* a head's output (targets "heads", "head_position"): a forward pre-hook on the attention's output projection
  W_o replaces the head's slice of its input (the concat), at every position or at one;
* a head's attention weights ("pattern"): MultiHeadAttention's swappable `weigh` (the softmax of the masked
  scores) is wrapped so that the chosen head's weights, every query's row, are the clean run's; the weighted sum
  takes them with the corrupted run's values, and everything after is recomputed;
* an MLP's output at one position ("mlp"): a forward hook on the MLP's last projection (ff_out) replaces that
  position's row. Gemma 2's norm after the MLP works on each token alone, so the copy is that of the sublayer's
  output (what it adds to the residual stream) too.

Every hook and the wrapped `weigh` act only in forwards on the thread that set them (on_this_thread): a model's
modules are shared by the threads that run model work at the same time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import torch

from model.checkpoints.loaded import LoadedModel
from model.checkpoints.tokenizer import Encoded
from model.errors import Stopped
from model.nets.attention import MultiHeadAttention
from model.nets.transformer import Transformer

Metric = Callable[[torch.Tensor], torch.Tensor]  # the last hidden state (B, T, D) -> m of each row (B,)
Stop = Callable[[], bool] | None
GRID_SHAPES = {"heads": ("layer", "head"), "residual": ("layer", "position"),
               "head_position": ("layer", "head", "position"), "pattern": ("layer", "head"),
               "mlp": ("layer", "position")}


@dataclass(frozen=True)
class Run:
    """One recorded run, per layer: each block's input (1, T, D), each attention's concat of weighted sums
    (1, T, H·Dv), each attention's weights (1, H, T, T) float32 (only when recorded for "pattern") and each MLP's
    output (1, T, D) (only for "mlp"); and the last hidden state (1, T, D)."""

    inputs: list[torch.Tensor]
    mixed: list[torch.Tensor]
    weights: list[torch.Tensor]
    mlp: list[torch.Tensor]
    hidden: torch.Tensor


def on_this_thread(hook: Callable[..., object]) -> Callable[..., object]:
    """`hook` as a forward (pre-)hook that acts only in forwards on the thread that registers it: a model's modules
    are shared by the threads that run model work at the same time (a server's interactive and background lanes),
    and another thread's forward must neither be patched nor recorded by this run."""
    owner = threading.get_ident()

    def scoped(module: object, *args: object) -> object:
        return hook(module, *args) if threading.get_ident() == owner else None
    return scoped


@contextmanager
def weighing(attention: MultiHeadAttention, change: Callable[[torch.Tensor], torch.Tensor | None]) -> Iterator[None]:
    """While inside: the attention's weights (B, H, T, S) pass through change() after its own `weigh` (a returned
    tensor replaces them), in forwards on this thread only; its `weigh` is restored on the way out."""
    own, owner = attention.weigh, threading.get_ident()

    def weigh(masked: torch.Tensor, any_hidden: bool) -> torch.Tensor:
        weights = own(masked, any_hidden)  # (B, H, T, S)
        if threading.get_ident() != owner:
            return weights
        changed = change(weights)
        return weights if changed is None else changed

    attention.weigh = weigh
    try:
        yield
    finally:
        attention.weigh = own


def finish(net: Transformer, x: torch.Tensor, start: int, masks: list[torch.Tensor | None]) -> torch.Tensor:
    """Blocks start…L−1 on the stream x entering block `start`, then the final norm: the last hidden state."""
    for layer in range(start, net.cfg.n_layers):
        x = net.block(layer)(x, mask=masks[layer], mask_keeps_a_key=True)  # (B, T, D): no padding
    return x if net.final_norm is None else net.final_norm(x)  # (B, T, D)


def record(model: LoadedModel, encoded: Encoded, masks: list[torch.Tensor | None], target: str) -> Run:
    """The run of `encoded`, keeping what `target` copies (Run)."""
    net, device = model.net, model.device
    ids = torch.tensor([encoded.ids], device=device)  # (1, T)
    segments = torch.tensor([encoded.segments], device=device) if model.uses_segments else torch.zeros_like(ids)
    run = Run([], [], [], [], ids)
    handles = []
    for layer in range(net.cfg.n_layers):
        block = net.block(layer)
        handles.append(block.register_forward_pre_hook(on_this_thread(lambda _m, args: run.inputs.append(args[0]))))
        handles.append(block.attention.output.register_forward_pre_hook(
            on_this_thread(lambda _m, args: run.mixed.append(args[0]))))
        if target == "mlp":
            handles.append(block.ff_out.register_forward_hook(
                on_this_thread(lambda _m, _args, out: run.mlp.append(out))))
    try:
        with _kept_weights(net, run.weights, target == "pattern"):
            hidden = finish(net, net.embeddings(ids, segments), 0, masks)  # (1, T, D)
    finally:
        for handle in handles:
            handle.remove()
    return Run(run.inputs, run.mixed, run.weights, run.mlp, hidden)


@contextmanager
def _kept_weights(net: Transformer, kept: list[torch.Tensor], wanted: bool) -> Iterator[None]:
    """While inside (when wanted): each layer's attention weights (1, H, T, T) appended to `kept`, layer by layer."""
    def keep(weights: torch.Tensor) -> None:
        kept.append(weights.clone())

    with ExitStack() as stack:
        for layer in range(net.cfg.n_layers if wanted else 0):
            stack.enter_context(weighing(net.block(layer).attention, keep))
        yield


def _chunks(n: int, size: int) -> list[range]:
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def _go_on(stop: Stop) -> None:
    if stop is not None and stop():
        raise Stopped()


def grid(target: str, net: Transformer, clean: Run, corrupted: Run, masks: list[torch.Tensor | None], rows: int,
         metric: Metric, stop: Stop) -> torch.Tensor:
    """m after each patch of `target`, float32 in the shape GRID_SHAPES names: (L, H), (L, T) or (L, H, T).
    `rows`: the most patched runs in one batch. Stopped between batches once stop() is True."""
    n_layers, n_heads, t = net.cfg.n_layers, net.cfg.n_heads, clean.hidden.shape[1]
    per_layer = {"heads": n_heads, "pattern": n_heads, "head_position": n_heads * t}.get(target, t)
    out = torch.empty(n_layers, per_layer)
    for layer in range(n_layers):
        for cells in _chunks(per_layer, rows):
            _go_on(stop)
            out[layer, cells.start:cells.stop] = _patched(target, net, clean, corrupted, masks, layer, cells, metric)
    return out.view(n_layers, n_heads, t) if target == "head_position" else out


def _patched(target: str, net: Transformer, clean: Run, corrupted: Run, masks: list[torch.Tensor | None],
             layer: int, cells: range, metric: Metric) -> torch.Tensor:
    """m of one batch of patched runs of one layer, one cell per row (B,): a cell is a head (heads, pattern), a
    position (residual, mlp) or head · T + position (head_position)."""
    block, b, t = net.block(layer), len(cells), clean.hidden.shape[1]
    device = clean.hidden.device
    x = corrupted.inputs[layer].expand(b, -1, -1)  # (B, T, D)
    if target == "residual":
        x = x.clone()
        for row, p in enumerate(cells):
            x[row, p] = clean.inputs[layer][0, p]
        return metric(finish(net, x, layer, masks))
    if target == "pattern":
        chosen = torch.zeros(b, net.cfg.n_heads, 1, 1, dtype=torch.bool, device=device)
        for row, head in enumerate(cells):
            chosen[row, head] = True  # (B, H, 1, 1): this row's head
        source = clean.weights[layer]  # (1, H, T, T)
        with weighing(block.attention, lambda w: torch.where(chosen, source, w)):
            return metric(finish(net, x, layer, masks))
    if target == "mlp":
        rows = torch.zeros(b, t, 1, dtype=torch.bool, device=device)
        for row, p in enumerate(cells):
            rows[row, p] = True  # (B, T, 1): this row's position
        mlp_source = clean.mlp[layer]  # (1, T, D)
        handle = block.ff_out.register_forward_hook(
            on_this_thread(lambda _m, _args, out: torch.where(rows, mlp_source, out)))  # (B, T, D)
        try:
            return metric(finish(net, x, layer, masks))
        finally:
            handle.remove()
    output = block.attention.output
    width = output.in_features // net.cfg.n_heads  # Dv
    picked = torch.zeros(b, t, output.in_features, dtype=torch.bool, device=device)
    for row, cell in enumerate(cells):
        head, position = (cell, None) if target == "heads" else divmod(cell, t)
        picked[row, slice(None) if position is None else position, head * width:(head + 1) * width] = True
    head_source = clean.mixed[layer]  # (1, T, H·Dv)
    handle = output.register_forward_pre_hook(
        on_this_thread(lambda _m, args: (torch.where(picked, head_source, args[0]),)))  # (B, T, H·Dv)
    try:
        return metric(finish(net, x, layer, masks))
    finally:
        handle.remove()
