"""A lane of the model hub (app/hub.py): one thread that runs model work one job at a time, and its counts."""

from __future__ import annotations

import statistics
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from .jobs.threads import ViewsFirst
from .schemas.service import LaneReport

T = TypeVar("T")


class Lane:
    """One thread that runs model work, one job at a time in the order it came, and counts it: jobs waiting,
    running and done, the slices of long work done (each time a job asked whether to go on), and the recent jobs'
    times (for Retry-After)."""

    def __init__(self, name: str, initializer: Callable[..., object], initargs: tuple[Any, ...] = (),
                 views: ViewsFirst | None = None) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"attnscope-{name}",
                                        initializer=initializer, initargs=initargs)
        self._views = views  # the interactive lane tells it about every job, from queued to done
        self._lock = threading.Lock()
        self.waiting = self.running = self.done = self.slices = 0
        self._times: deque[float] = deque(maxlen=16)

    def submit(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            self.waiting += 1
        if self._views is not None:
            self._views.view_queued()

        def job() -> T:
            with self._lock:
                self.waiting -= 1
                self.running += 1
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                with self._lock:
                    self.running -= 1
                    self.done += 1
                    self._times.append(time.perf_counter() - start)

        future = self._pool.submit(job)
        future.add_done_callback(self._ended)
        return future

    def _ended(self, future: Future[Any]) -> None:
        if future.cancelled():  # cancelled before it started: it never left the queue through job()
            with self._lock:
                self.waiting -= 1
        if self._views is not None:
            self._views.view_done()

    def slice_done(self) -> None:
        with self._lock:
            self.slices += 1

    def expected_wait(self) -> int:
        """Whole seconds until a job queued now starts, from the median of the recent jobs' times."""
        with self._lock:
            typical = statistics.median(self._times) if self._times else 1.0
            ahead = self.waiting + self.running
        return max(1, round(typical * ahead))

    def report(self) -> LaneReport:
        with self._lock:
            return LaneReport(waiting=self.waiting, running=self.running, done=self.done, slices=self.slices)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
