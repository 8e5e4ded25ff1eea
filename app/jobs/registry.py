"""The jobs this process trains and the registry that starts, lists, cancels and drops jobs in the store.

A job is one run of a lab (`Lab`: the Iris transformer, the induction-head lab, the encoder-decoder): the
registry knows of a lab only how to start its training, how to write its reports as events and, for the labs
that answer predictions, which parameters to keep."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from ..errors import JobsBusy, UnknownJob
from ..memory import release_free_memory
from ..schemas.iris import ErrorEvent
from .store import FINAL, JOB_ID, Event, JobFiles, Saved, append_event, locked, pack_snapshot, this_process
from .threads import one_intra_op_thread

log = logging.getLogger("attnscope.jobs")
MAX_RUNNING = 2  # jobs training at once per server (every worker process sharing the store)
KEEP_FINISHED = 16  # finished jobs kept for their events and /predict
REMEMBER_DROPPED = 4096  # ids of dropped jobs remembered, to answer "train again" rather than "unknown"


class Training(Protocol):
    """A lab's run: reports after each evaluation, then one that ends it (done or cancelled)."""

    def run(self, stop: Callable[[], bool]) -> Iterator[Any]: ...


@dataclass(frozen=True)
class Lab:
    """One kind of training job."""

    name: str  # recorded in settings.json; the routes look up only their own lab's jobs
    train_path: str  # where a client starts one (named in messages)
    progress: tuple[str, str, str]  # the event after each evaluation, its count field and its total field
    training: Callable[[Any], Training]  # config -> the run
    encode: Callable[[Any], Event]  # a report -> (event name, JSON data)
    events: Callable[[Any], int]  # config -> how many progress events the run publishes
    kept: Callable[[Any], dict[str, torch.Tensor]] | None = None  # the run -> its parameters now (for /predict)


class Job:
    """A job this process trains, on a thread of its own that appends its events to the job's files."""

    def __init__(self, files: JobFiles, lab: Lab, training: Training, on_finish: Callable[[Job], None],
                 give_way: Callable[[], None] = lambda: None) -> None:
        self.files = files
        self._give_way = give_way  # called before each batch: the views' forwards go first (threads.ViewsFirst)
        self.id = files.id
        self.lab = lab
        self.training = training
        self.state = "running"  # then "done", "cancelled" or "error"
        self.published = 0
        self._stop = threading.Event()
        self._on_finish = on_finish
        self.thread = threading.Thread(target=self._run, name=f"attnscope-{lab.name}-{self.id[:8]}", daemon=True)

    @property
    def finished(self) -> bool:
        return self.state != "running"

    def _publish(self, event: Event) -> None:
        append_event(self.files.events_path, self.published, event)
        self.published += 1
        if event[0] in FINAL:
            self.state = event[0]

    def _stopped(self) -> bool:
        self._give_way()
        return self._stop.is_set() or self.files.cancel_path.exists()

    def _run(self) -> None:
        one_intra_op_thread()
        event, count, _ = self.lab.progress
        done = 0
        latest = os.open(self.files.latest_path, os.O_WRONLY)
        try:
            for report in self.training.run(self._stopped):
                name, data = self.lab.encode(report)
                if name == event:
                    done = getattr(report, count)
                    if self.lab.kept is not None:  # written before the event announces it
                        os.pwrite(latest, pack_snapshot(Saved(done, self.lab.kept(self.training))), 0)
                self._publish((name, data))
        except Exception as exc:  # a bug, not a client's mistake: logged with its traceback
            log.exception("%s training job %s failed", self.lab.name, self.id)
            detail = f"Training failed after {count} {done}: {type(exc).__name__}: {exc}"
            self._publish(("error", ErrorEvent(detail=detail).model_dump_json()))
        finally:
            os.close(latest)
            if not self.finished:  # cannot happen: run() always ends with done or cancelled
                self._publish(("error", ErrorEvent(detail="Training ended without a result").model_dump_json()))
            self._on_finish(self)
            # The training's tensors were allocated in this thread's malloc arena, which glibc keeps, free pages
            # and all, for the next thread; give them back (on the job's own thread, once per job).
            release_free_memory()

    def cancel(self) -> None:
        """Stop before the next batch (the loop publishes `cancelled`)."""
        self._stop.set()


class JobRegistry:
    """The server's training jobs, in a store that every worker process of the server shares.

    `directory` None: a private temporary store, removed by close() (one process)."""

    def __init__(self, directory: Path | None = None, max_running: int = MAX_RUNNING,
                 keep: int = KEEP_FINISHED, give_way: Callable[[], None] = lambda: None) -> None:
        self.max_running = max_running
        self.keep = keep
        self.give_way = give_way  # each training calls it before a batch (the hub's ViewsFirst.give_way)
        self._private = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="attnscope-jobs-")) if directory is None else directory
        (self.dir / "dropped").mkdir(parents=True, exist_ok=True)
        self._own: dict[str, Job] = {}  # the jobs this process trains
        self._own_lock = threading.Lock()

    def _stored(self) -> list[JobFiles]:
        """Every job in the store, in the order they started. The caller holds the store's lock."""
        jobs = [JobFiles(path) for path in self.dir.iterdir() if JOB_ID.fullmatch(path.name)]
        return sorted(jobs, key=lambda job: float(job.settings["started"]))

    def start(self, lab: Lab, config: Any) -> Job:
        """Start a job of `lab` in this process; JobsBusy when max_running jobs (of any lab) are training in the
        store."""
        training = lab.training(config)
        with locked(self.dir):
            running = []
            for stored in self._stored():
                stored.end_if_orphaned()
                if not stored.finished():
                    running.append(stored)
            if len(running) >= self.max_running:
                wait = min(stored.seconds_left() for stored in running)
                raise JobsBusy(len(running), max(1, round(wait)))
            job_id = secrets.token_hex(16)
            new = self.dir / f".new-{job_id}"  # complete before it gets its name: a job found is whole
            new.mkdir()
            parameters = lab.kept(training) if lab.kept is not None else {}
            settings = {"kind": lab.name, "train": lab.train_path, "progress": lab.progress,
                        "events": lab.events(config), "config": dataclasses.asdict(config), "started": time.time(),
                        "process": this_process(),
                        "parameters": [(name, list(p.shape)) for name, p in parameters.items()]}
            (new / "settings.json").write_text(json.dumps(settings))
            (new / "events").touch()
            (new / "latest.bin").write_bytes(pack_snapshot(Saved(0, parameters)))
            new.rename(self.dir / job_id)
        job = Job(JobFiles(self.dir / job_id), lab, training, self._finished, self.give_way)
        with self._own_lock:
            self._own[job.id] = job
        job.thread.start()
        return job

    def get(self, lab: Lab, job_id: str, part: str) -> JobFiles:
        """The job of `lab` with this id; UnknownJob (naming where the id was sent) when there is none."""
        directory = self.dir / job_id
        if not JOB_ID.fullmatch(job_id) or not directory.is_dir() or JobFiles(directory).kind != lab.name:
            dropped = self.dir / "dropped" / job_id
            evicted = JOB_ID.fullmatch(job_id) is not None and dropped.exists() and dropped.read_text() == lab.name
            raise UnknownJob(job_id, part, lab.train_path, evicted=evicted, kept=self.keep)
        return JobFiles(directory)

    def _finished(self, job: Job) -> None:
        """Drop the finished jobs beyond the `keep` latest started, remembering their ids."""
        with self._own_lock:
            self._own.pop(job.id, None)
        with locked(self.dir):
            finished = [stored for stored in self._stored() if stored.finished()]
            for old in finished[: max(0, len(finished) - self.keep)]:
                (self.dir / "dropped" / old.id).write_text(old.kind)
                gone = old.dir.rename(self.dir / f".old-{old.id}")  # at once no longer found, then removed
                shutil.rmtree(gone, ignore_errors=True)
            dropped = list((self.dir / "dropped").iterdir())
            if len(dropped) > REMEMBER_DROPPED:
                dropped.sort(key=lambda path: path.stat().st_mtime)
                for path in dropped[: len(dropped) - REMEMBER_DROPPED]:
                    path.unlink(missing_ok=True)

    def close(self, timeout: float = 10.0) -> None:
        """Cancel the jobs this process trains and wait for their threads (each stops before its next batch);
        remove a private store."""
        with self._own_lock:
            jobs = list(self._own.values())
        for job in jobs:
            job.cancel()
        deadline = time.monotonic() + timeout
        for job in jobs:
            job.thread.join(max(0.0, deadline - time.monotonic()))
        if self._private:
            shutil.rmtree(self.dir, ignore_errors=True)
