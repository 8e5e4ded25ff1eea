"""The reports that end a lab's run, the same for every lab trained by steps (the induction-head lab, the
encoder-decoder): `done` after the last step, `cancelled` when asked to stop before a step."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DoneReport:
    steps: int
    seconds: float


@dataclass(frozen=True)
class CancelledReport:
    step: int  # the last finished step
    seconds: float
