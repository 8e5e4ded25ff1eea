"""Taps: named points of the forward where a value can be read (kept) or replaced (hooked).

A trace (model/trace.py) records the steps of attention to show them; a tap is for experiments on the network
itself: read every layer's residual stream, zero a head's output, add a vector to the stream, patch a value in
from another run. The network calls `value = record.tap(name, value)` at each point below and goes on with what
it gets back; NoRecord and LayerRecorder give the value back unchanged, so a forward without taps computes
exactly the same numbers at the cost of one method call per point.

The points and the batched shapes a hook sees there (B inputs, T queries, S keys, D width, H query heads, G
key-value heads, Dk/Dv per-head widths):

  resid_pre   (B, T, D)      a block's input
  q           (B, H, T, Dk)  after the split (and Qwen3's q norm), before RoPE
  k, v        (B, G, S, Dk|Dv) the key-value heads after the split (and k norm), before RoPE and before sharing
  rot_q       (B, H, T, Dk)  after RoPE (RoPE networks only)
  rot_k       (B, G, S, Dk)  after RoPE (RoPE networks only)
  attn_scores (B, H, T, S)   float32: scaled, soft-capped, edited and masked scores, just before the softmax
  pattern     (B, H, T, S)   float32: the weights after the softmax (and after an edit's ProbSparse)
  z           (B, H, T, Dv)  each head's weighted sum (after an edit's ablation), before the output projection
  attn_out    (B, T, D)      what the attention sublayer adds to the stream (after Gemma 2's post-norm)
  resid_mid   (B, T, D)      the stream after the attention's residual add (post-norm: before the norm)
  mlp_out     (B, T, D)      what the MLP sublayer adds (after Gemma 2's post-norm)
  resid_post  (B, T, D)      the block's output (post-norm: after its second norm) = the next block's resid_pre
  final       (B, T, D)      the final norm's output, the forward's answer (pre-norm networks only)

With a KV cache the k, v and rot_k taps see the new tokens only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, Protocol

import torch

from model.errors import InputError

BLOCK_TAPS: tuple[str, ...] = ("resid_pre", "q", "k", "v", "rot_q", "rot_k", "attn_scores", "pattern", "z",
                               "attn_out", "resid_mid", "mlp_out", "resid_post")
FINAL_TAP = "final"  # the final norm's output (pre-norm networks only); its input is resid_post of the last layer
ROPE_TAPS = frozenset({"rot_q", "rot_k"})

LayerHook = Callable[[torch.Tensor], "torch.Tensor | None"]  # one layer's: batched value -> replacement or None
Hook = Callable[[torch.Tensor, int], "torch.Tensor | None"]  # a network's: (batched value, layer) -> same


class Recorder(Protocol):
    """What a block and its attention call as they compute: a trace's `wants` and `(step, value)`, and `tap`."""

    def wants(self, step: str) -> bool: ...

    def __call__(self, step: str, value: Any) -> None: ...

    def tap(self, name: str, value: torch.Tensor) -> torch.Tensor: ...


def tap_names(n_layers: int, rope: bool, final: bool) -> list[str]:
    """Every tap of a network as "name.layer", in the order the forward reaches them, then "final" when the
    network has a final norm (`final`); rot_q and rot_k only with RoPE (`rope`)."""
    names = [name for name in BLOCK_TAPS if rope or name not in ROPE_TAPS]
    return [f"{name}.{layer}" for layer in range(n_layers) for name in names] + ([FINAL_TAP] if final else [])


def split_name(key: str) -> tuple[str, int | None]:
    """"resid_post.3" -> ("resid_post", 3); "resid_post" -> ("resid_post", None) (every layer); "final" ->
    ("final", None). A suffix that is not a whole number stays part of the name (and is then unknown)."""
    name, dot, layer = key.rpartition(".")
    if dot and layer.isdigit():
        return name, int(layer)
    return key, None


class LayerTaps:
    """One layer's taps, passed to a Block or a MultiHeadAttention as its `record`.

    `hooks[name](value)` is called at tap `name` with the batched value: a tensor it returns (the same shape)
    replaces the value and the network runs on with it; None keeps the value. A tap named in `keep` keeps a
    detached copy of the value the network goes on with (after its hook) in `kept[name]`. `recorder`, when
    given, is a trace's LayerRecorder that sees the steps as it would without taps (`wants` and the calls are
    passed to it), so a trace and taps work together in one forward: a step recorded after a tap shows the
    hooked value."""

    def __init__(self, layer: int, hooks: Mapping[str, LayerHook] | None = None, keep: Collection[str] = (),
                 recorder: Recorder | None = None) -> None:
        self.layer = layer
        self.hooks = dict(hooks or {})
        self.keep = frozenset(keep)
        self.recorder = recorder
        self.kept: dict[str, torch.Tensor] = {}

    def wants(self, step: str) -> bool:
        return self.recorder is not None and self.recorder.wants(step)

    def __call__(self, step: str, value: Any) -> None:
        if self.recorder is not None:
            self.recorder(step, value)

    def tap(self, name: str, value: torch.Tensor) -> torch.Tensor:
        hook = self.hooks.get(name)
        if hook is not None:
            out = hook(value)
            if out is not None:
                value = self._checked(name, value, out)
        if name in self.keep:
            self.kept[name] = value.detach().clone()
        return value

    def _checked(self, name: str, value: torch.Tensor, out: object) -> torch.Tensor:
        where = name if name == FINAL_TAP else f"{name}.{self.layer}"
        if not isinstance(out, torch.Tensor):
            raise InputError(("hooks", where), f"the hook on {where} returned {type(out).__name__}; return a "
                             f"tensor of shape {tuple(value.shape)} to replace the value, or None to keep it")
        if out.shape != value.shape:
            raise InputError(("hooks", where), f"the hook on {where} returned shape {tuple(out.shape)}; return "
                             f"the shape it was given, {tuple(value.shape)}, or None to keep the value")
        return out.to(value.device, value.dtype)


class Taps:
    """Hooks and kept values for a whole forward: `Transformer.forward(ids, taps=Taps(...))`.

    `hooks`: {"name": fn} for every layer or {"name.layer": fn} for one (names: BLOCK_TAPS and FINAL_TAP, the
    latter without a layer), fn(value, layer) -> a replacement of the same shape or None; the batched value as
    the network computes it (its dtype and device). When "name" and "name.layer" both hook a point, "name" runs
    first and "name.layer" gets its result. `final`'s hook gets layer = n_layers. `keep`: the names whose
    values to keep ("name" or "name.layer"), or "all"; `kept` holds them after the forward, by "name.layer"
    and "final", in the order the forward reached them. Taps work with a Trace in the same forward (both
    are given to each block; see LayerTaps). `check` refuses unknown names (Transformer.forward calls it)."""

    def __init__(self, hooks: Mapping[str, Hook] | None = None,
                 keep: Collection[str] | Literal["all"] = ()) -> None:
        self.hooks = dict(hooks or {})
        self.keep: Collection[str] | Literal["all"] = keep if keep == "all" else frozenset(keep)
        self._layers: dict[int, LayerTaps] = {}

    def check(self, n_layers: int, rope: bool, final: bool) -> None:
        """InputError (a ValueError; loc ("hooks" | "keep", the name)) for a name this network has no tap for:
        an unknown name, a layer out of range, rot_q/rot_k without RoPE, final without a final norm."""
        valid = tap_names(n_layers, rope, final)
        names = sorted({split_name(v)[0] for v in valid}, key=[*BLOCK_TAPS, FINAL_TAP].index)
        given = [("hooks", key) for key in self.hooks] + ([] if self.keep == "all" else
                                                          [("keep", key) for key in sorted(self.keep)])
        for field, key in given:
            name, layer = split_name(key)
            if key in valid or (layer is None and name in names):
                continue
            if name in ROPE_TAPS and not rope:
                why = f"{name} is after RoPE, and this network has no RoPE: use {name[4:]} (before the rotation)"
            elif name == FINAL_TAP and not final:
                why = "this network has no final norm (a post-norm encoder): use resid_post of its last layer"
            elif name == FINAL_TAP:
                why = "final takes no layer: name it alone"
            elif name in names and layer is not None:
                why = f"layer {layer} is out of range: this network has layers 0..{n_layers - 1}"
            else:
                why = f"there is no tap named {name!r}"
            raise InputError((field, key), f"{field} names {key!r}, but {why}. The names are {', '.join(names)}, "
                             f"each alone (every layer) or as name.layer (0..{n_layers - 1})"
                             + (f"; {FINAL_TAP} alone" if final else ""))

    def layer(self, layer: int, recorder: Recorder | None = None) -> LayerTaps:
        """Block `layer`'s taps (with a trace's recorder for that layer when one is given)."""
        hooks: dict[str, LayerHook] = {}
        for name in BLOCK_TAPS:
            chain = [fn for key, fn in ((name, self.hooks.get(name)), (f"{name}.{layer}",
                                                                         self.hooks.get(f"{name}.{layer}")))
                     if fn is not None]
            if chain:
                hooks[name] = _bound(chain, layer)
        keep = set(BLOCK_TAPS) if self.keep == "all" else {
            name for name in BLOCK_TAPS if name in self.keep or f"{name}.{layer}" in self.keep}
        taps = LayerTaps(layer, hooks, keep, recorder)
        self._layers[layer] = taps
        return taps

    def final(self, n_layers: int) -> LayerTaps:
        """The taps of the final norm's output (layer index n_layers: after the last block)."""
        fn = self.hooks.get(FINAL_TAP)
        keep = {FINAL_TAP} if self.keep == "all" or FINAL_TAP in self.keep else set()
        taps = LayerTaps(n_layers, {FINAL_TAP: _bound([fn], n_layers)} if fn is not None else None, keep)
        self._layers[n_layers] = taps
        return taps

    @property
    def kept(self) -> dict[str, torch.Tensor]:
        """The kept values by "name.layer" (and "final"), batched, in the order the forward reached them."""
        out: dict[str, torch.Tensor] = {}
        for layer, taps in sorted(self._layers.items()):
            for name in [*BLOCK_TAPS, FINAL_TAP]:
                if name in taps.kept:
                    out[name if name == FINAL_TAP else f"{name}.{layer}"] = taps.kept[name]
        return out


def _bound(chain: list[Hook], layer: int) -> LayerHook:
    """One layer's hook: each network hook of `chain` in turn with `layer`, each seeing the last one's result."""
    def hook(value: torch.Tensor) -> torch.Tensor | None:
        replaced = False
        for fn in chain:
            out = fn(value, layer)
            if out is not None:
                value, replaced = out, True
        return value if replaced else None
    return hook
