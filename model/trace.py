"""Trace: the named tensors of attention's steps, recorded only when asked."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial

import torch

from model.steps import BLOCK_STEPS, STEPS

# What one step records: a tensor, or for `project`/`split` a dict q/k/v -> tensor.
StepValue = torch.Tensor | dict[str, torch.Tensor]
# Called with (layer, step, value) as a value is recorded; returns what the trace keeps instead.
OnRecord = Callable[[int, str, StepValue], StepValue]


def widen(t: torch.Tensor) -> torch.Tensor:
    """A bfloat16 or float16 tensor as float32, any other as it is (float32, the lab's float64, integers):
    what a network in bfloat16 computes is recorded and answered in float32."""
    return t.float() if t.dtype in (torch.bfloat16, torch.float16) else t


class Trace:
    """Collects step values for chosen layers and steps during one forward.

    `layers=None` records every layer; `steps=None` records every step of the attention (STEPS); the steps of
    the rest of the block (BLOCK_STEPS) only when named.
    Values are detached; nothing is recorded for layers or steps not asked for,
    so a forward with a narrow trace costs little more than one without.
    `on_record(layer, step, value)`, when given, sees each value during the forward and returns what
    is kept (e.g. a compact copy, so the full value is freed with its layer).
    """

    def __init__(self, layers: Iterable[int] | None = None, steps: Iterable[str] | None = None,
                 on_record: OnRecord | None = None) -> None:
        self.layers = None if layers is None else frozenset(layers)
        chosen = STEPS if steps is None else tuple(steps)
        unknown = [s for s in chosen if s not in STEPS and s not in BLOCK_STEPS]
        if unknown:
            raise ValueError(f"unknown steps {unknown}; the steps are {list(STEPS + BLOCK_STEPS)}")
        self.steps = frozenset(chosen)
        self.on_record = on_record
        self.records: dict[int, dict[str, StepValue]] = {}

    def recorder(self, layer: int) -> LayerRecorder | None:
        """The recorder for one layer, or None when that layer is not traced."""
        if self.layers is not None and layer not in self.layers:
            return None
        keep = None if self.on_record is None else partial(self.on_record, layer)
        return LayerRecorder(self.records.setdefault(layer, {}), self.steps, keep)

    def __getitem__(self, layer: int) -> dict[str, StepValue]:
        return self.records[layer]

    def tensor(self, layer: int, step: str) -> torch.Tensor:
        """A step recorded as one tensor (every step except project and split, which hold q, k and v)."""
        value = self.records[layer][step]
        if isinstance(value, dict):
            raise TypeError(f"step {step!r} holds {sorted(value)}; read it with trace[layer][step]")
        return value


class LayerRecorder:
    """Called by attention with (step, value); keeps only the wanted steps."""

    def __init__(self, store: dict[str, StepValue], steps: frozenset[str],
                 keep: Callable[[str, StepValue], StepValue] | None = None) -> None:
        self._store = store
        self.steps = steps
        self._keep = keep

    def wants(self, step: str) -> bool:
        return step in self.steps

    def __call__(self, step: str, value: StepValue) -> None:
        if step in self.steps:
            # On the CPU and in float32 whatever device and dtype the model runs with: the answers are built from
            # these (no copy for float32 on the CPU).
            if isinstance(value, dict):
                value = {name: widen(t.detach()).cpu() for name, t in value.items()}
            else:
                value = widen(value.detach()).cpu()
            self._store[step] = value if self._keep is None else self._keep(step, value)

    def tap(self, name: str, value: torch.Tensor) -> torch.Tensor:
        """A tap point of the network (model/nets/taps.py): a trace reads steps only, so the value as it is."""
        return value


# Steps whose tensors have a head axis (after the batch axis).
PER_HEAD_STEPS = frozenset({"split", "scores", "scale", "mask", "softmax", "weighted_sum"})


def select(record: dict[str, StepValue], heads: list[int] | None = None) -> dict[str, StepValue]:
    """One batch item of a layer's record, keeping only `heads` (in that order) on per-head steps."""
    index = None if heads is None else torch.tensor(heads)

    def pick(step: str, t: torch.Tensor) -> torch.Tensor:
        t = t[0]  # drop the batch axis
        return t[index] if index is not None and step in PER_HEAD_STEPS else t

    return {
        step: {k: pick(step, v) for k, v in value.items()} if isinstance(value, dict) else pick(step, value)
        for step, value in record.items()
    }


UNROTATED = ("q_unrotated", "k_unrotated")  # what a rotation (RoPE) turned, recorded beside `split`


def arrange_rotation(record: dict[str, StepValue]) -> dict[str, StepValue]:
    """A layer's record as a trace answer shows it: with a rotation (RoPE), `split` holds q and k before it
    and `rotated` (right after `split`) holds them after it, what the scores are made of; without one, the
    record as it is. The steps keep their order."""
    split = record.get("split")
    if not isinstance(split, dict) or not all(name in split for name in UNROTATED):
        return record
    arranged: dict[str, StepValue] = {}
    for step, value in record.items():
        if step == "split":
            arranged["split"] = {"q": split["q_unrotated"], "k": split["k_unrotated"], "v": split["v"]}
            arranged["rotated"] = {"q": split["q"], "k": split["k"]}
        else:
            arranged[step] = value
    return arranged
