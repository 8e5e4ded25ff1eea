"""A one-line progress bar on stderr, redrawn in place with a carriage return."""

from __future__ import annotations

import os
import time
from typing import TextIO

# ATTNSCOPE_PROGRESS=1 draws the bar even when stderr is not a terminal (a log, a test); 0 never draws it.
ENV = "ATTNSCOPE_PROGRESS"
WIDTH = 30


def wanted(stream: TextIO, forced: bool = False, quiet: bool = False) -> bool:
    """Whether to draw: never with --quiet or ATTNSCOPE_PROGRESS=0; always with --progress or
    ATTNSCOPE_PROGRESS=1; otherwise when `stream` is a terminal."""
    env = os.environ.get(ENV, "").strip()
    if quiet or env == "0":
        return False
    if forced or env == "1":
        return True
    return stream.isatty()


class Progress:
    """`update(done)` redraws "[#####.....]  24/64 sentences  1.3 s"; `close()` ends the line. Does nothing
    when not `enabled`."""

    def __init__(self, total: int, stream: TextIO, enabled: bool, unit: str = "sentences") -> None:
        self.total = total
        self.stream = stream
        self.enabled = enabled
        self.unit = unit
        self.started = time.perf_counter()
        self._drawn = False

    def line(self, done: int) -> str:
        filled = WIDTH if self.total == 0 else WIDTH * done // self.total
        elapsed = time.perf_counter() - self.started
        return f"[{'#' * filled}{'.' * (WIDTH - filled)}] {done:>{len(str(self.total))}}/{self.total} " \
               f"{self.unit}  {elapsed:.1f} s"

    def update(self, done: int) -> None:
        if self.enabled:
            self.stream.write("\r" + self.line(done))
            self.stream.flush()
            self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
