"""Background training jobs of the Iris transformer: bounded, cancellable, their events kept for late clients.

Each job trains on its own thread, never on the hub's model worker, so attention requests keep being
answered while a job trains. At most `max_running` jobs train at once (more: JobsBusy, answered 429
with an estimate of when one ends); the `keep` most recent finished jobs stay, so a client can still
read their events and predict with their parameters; older ones are dropped and their ids remembered
(UnknownJob with evicted=True: "train again"). Every event a job publishes is kept in order, so a
client that connects late, or reconnects, gets every event from the start (or from an event id on).

Threads: a job's thread runs torch with one OpenMP and MKL thread of its own. The training's
tensors are tiny (16 x 4 x 8), and with two intra-op threads every matrix product and softmax
paid a fork and join: measured on this 2-core machine while other processes kept it busy, 60
epochs took 20-73 s with two threads and 1.2-2.1 s with one. torch.set_num_threads would also
change the default of every thread started later, so the job thread sets only its own count,
through the OpenMP and MKL libraries torch is linked with (`_one_intra_op_thread`).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import torch

from model.iris import TrainConfig, Training

from . import serialize
from .errors import JobsBusy, UnknownJob
from .schemas.iris import ErrorEvent

log = logging.getLogger("attnscope.jobs")

MAX_RUNNING = 2  # jobs training at once per server
KEEP_FINISHED = 16  # finished jobs kept for their events and /predict
REMEMBER_DROPPED = 4096  # ids of dropped jobs remembered, to answer "train again" rather than "unknown"

Event = tuple[str, str]  # (event name, JSON data)


def _one_intra_op_thread() -> bool:
    """Make torch on the calling thread use one OpenMP and one MKL thread; True when it worked.

    torch's OpenMP thread count is the calling thread's own setting (omp_set_num_threads), once torch
    has set it up for the thread (the torch.get_num_threads() call); MKL's is
    MKL_Set_Num_Threads_Local. Without the libraries (another torch build) nothing changes: training
    is then only slower when the machine is busy.
    """
    torch.get_num_threads()  # torch initialises this thread's count first, else it would overwrite ours
    lib = Path(torch.__file__).resolve().parent / "lib"
    try:
        ctypes.CDLL(str(lib / "libgomp.so.1")).omp_set_num_threads(1)
        ctypes.CDLL(str(lib / "libtorch_cpu.so")).MKL_Set_Num_Threads_Local(1)
    except (OSError, AttributeError):
        return False
    return torch.get_num_threads() == 1


class Job:
    """One training run on its own thread and the events it has published."""

    def __init__(self, job_id: str, config: TrainConfig, on_finish: Callable[[Job], None]) -> None:
        self.id = job_id
        self.config = config
        self.training = Training(config)
        self.events: list[Event] = []
        self.state = "running"  # then "done", "cancelled" or "error"
        self.epochs_done = 0
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._on_finish = on_finish
        self.thread = threading.Thread(target=self._run, name=f"attnscope-iris-{job_id[:8]}", daemon=True)

    @property
    def finished(self) -> bool:
        return self.state != "running"

    def _publish(self, event: Event, state: str | None = None) -> None:
        with self._lock:
            self.events.append(event)
            if state is not None:
                self.state = state
            waiters, self._waiters = self._waiters, []
        for loop, wake in waiters:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # that client's event loop has closed
                pass

    def _run(self) -> None:
        _one_intra_op_thread()
        try:
            for report in self.training.run(self._stop.is_set):
                name, data = serialize.iris_event(report)
                if name == "epoch":
                    self.epochs_done = report.epoch  # type: ignore[union-attr]
                self._publish((name, data), None if name == "epoch" else name)
        except Exception as exc:  # a bug, not a client's mistake: logged with its traceback
            log.exception("Iris training job %s failed", self.id)
            detail = f"Training failed after epoch {self.epochs_done}: {type(exc).__name__}: {exc}"
            self._publish(("error", ErrorEvent(detail=detail).model_dump_json()), "error")
        finally:
            if not self.finished:  # cannot happen: run() always ends with done or cancelled
                self._publish(("error", ErrorEvent(detail="Training ended without a result").model_dump_json()),
                              "error")
            self._on_finish(self)

    def cancel(self) -> None:
        """Ask the loop to stop before its next batch (it publishes `cancelled`)."""
        self._stop.set()

    def seconds_left(self) -> float:
        """An estimate from the pace so far (at least 1 s)."""
        elapsed = time.monotonic() - self.started
        done = self.epochs_done
        if done == 0:
            return max(1.0, elapsed * (self.config.epochs + 1))
        return max(1.0, elapsed / done * (self.config.epochs - done))

    async def follow(self, start: int = 0) -> AsyncIterator[tuple[int, Event]]:
        """(index, event) for every event from `start` on, waiting for new ones until the job has finished."""
        loop = asyncio.get_running_loop()
        index = start
        while True:
            wake = asyncio.Event()
            with self._lock:
                new = self.events[index:]
                finished = self.finished
                if not new and not finished:
                    self._waiters.append((loop, wake))
            for event in new:
                yield index, event
                index += 1
            if finished and not new:
                return
            if not new:
                await wake.wait()


class JobRegistry:
    """The server's training jobs: at most `max_running` at once, the `keep` latest finished ones kept."""

    def __init__(self, max_running: int = MAX_RUNNING, keep: int = KEEP_FINISHED) -> None:
        self.max_running = max_running
        self.keep = keep
        self._jobs: OrderedDict[str, Job] = OrderedDict()  # in the order they started
        self._dropped: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def start(self, config: TrainConfig) -> Job:
        """Start a job; JobsBusy when max_running jobs are training."""
        with self._lock:
            running = [job for job in self._jobs.values() if not job.finished]
            if len(running) >= self.max_running:
                wait = min((job.seconds_left() for job in running), default=1.0)
                raise JobsBusy(len(running), max(1, round(wait)))
            job = Job(secrets.token_hex(16), config, self._finished)
            self._jobs[job.id] = job
        job.thread.start()
        return job

    def get(self, job_id: str, part: str) -> Job:
        """The job with this id; UnknownJob (naming where the id was sent) when there is none."""
        with self._lock:
            job = self._jobs.get(job_id)
            if job is None:
                raise UnknownJob(job_id, part, evicted=job_id in self._dropped, kept=self.keep)
            return job

    def _finished(self, job: Job) -> None:
        with self._lock:
            finished = [j for j in self._jobs.values() if j.finished]
            for old in finished[: max(0, len(finished) - self.keep)]:
                del self._jobs[old.id]
                self._dropped[old.id] = None
            while len(self._dropped) > REMEMBER_DROPPED:
                self._dropped.popitem(last=False)

    def running(self) -> int:
        with self._lock:
            return sum(not job.finished for job in self._jobs.values())

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every running job and wait for their threads (each stops before its next batch)."""
        with self._lock:
            jobs = list(self._jobs.values())
        for job in jobs:
            job.cancel()
        deadline = time.monotonic() + timeout
        for job in jobs:
            job.thread.join(max(0.0, deadline - time.monotonic()))
