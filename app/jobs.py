"""Background training jobs of the Iris transformer: bounded, cancellable, their events kept for late clients,
and the same for every worker process of a server.

The jobs live in a directory, the store: Settings.jobs_dir, which `attnscope serve --workers N` creates
for its worker processes, or a private temporary one when none is set (one process). Each job is a
subdirectory named by its id:

    settings.json  the TrainConfig, when it started, and the process that trains it (host, pid)
    events         one line per event, "<id> <name> <JSON data>", appended by that process only
    latest.bin     the parameters after the latest finished epoch, rewritten after each epoch (/predict)
    cancel         created when a client asks to cancel

The process that accepts POST /train trains the job on a thread of its own, never on the hub's model
worker, so attention requests keep being answered while a job trains. Any process streams a job's events
by following its file (a client that connects late, or reconnects with Last-Event-ID, gets them from the
start, or from that id on), cancels it by creating `cancel` (the training loop looks for it before each
batch) and predicts from latest.bin. At most `max_running` jobs train at once across the processes
sharing the store (more: JobsBusy, answered 429 with an estimate of when one ends); the `keep` most
recently started finished jobs stay, older ones are removed and their ids remembered in `dropped/`
(UnknownJob with evicted=True: "train again"). Starting a job and removing old ones hold an exclusive
flock on `lock`, so two workers never both take the last free place. A job whose training process has
died (a worker killed, say by the OOM killer) gets an `error` event from the next process that looks
at it: its clients are not left waiting and it no longer counts as running.

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
import dataclasses
import fcntl
import functools
import json
import logging
import math
import os
import re
import secrets
import shutil
import socket
import struct
import tempfile
import threading
import time
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import torch

from model.iris import DTYPE, Snapshot, TrainConfig, Training

from . import serialize
from .errors import JobsBusy, UnknownJob
from .schemas.iris import EpochEvent, ErrorEvent

log = logging.getLogger("attnscope.jobs")

MAX_RUNNING = 2  # jobs training at once per server (every worker process sharing the store)
KEEP_FINISHED = 16  # finished jobs kept for their events and /predict
REMEMBER_DROPPED = 4096  # ids of dropped jobs remembered, to answer "train again" rather than "unknown"
FINAL = ("done", "cancelled", "error")  # a job's last event is one of these
POLL_S = 0.1  # how often a stream looks for new events
ORPHAN_CHECK_S = 2.0  # how often a waiting stream checks that the training process is still there
TAIL_BYTES = 64 * 1024  # read from the end of an events file for its last event (an event line is ~1 KB)
JOB_ID = re.compile(r"[0-9a-f]{32}")

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


def _process() -> dict[str, Any]:
    """This process as settings.json records it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "since": _started(os.getpid())}


def _started(pid: int) -> str | None:
    """When process `pid` started (clock ticks since boot, /proc/<pid>/stat field 22), None when there is no
    such process or no /proc: with it a pid the system gave to a new process is not taken for the old one."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(process: dict[str, Any]) -> bool:
    """Whether the process recorded in a settings.json still runs (True when it is another machine's)."""
    if process["host"] != socket.gethostname():
        return True  # a store shared across machines: this process cannot tell (docs/deploy.md)
    if process["since"] is not None:
        return bool(_started(process["pid"]) == process["since"])
    try:
        os.kill(process["pid"], 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


@contextmanager
def _locked(store: Path) -> Iterator[None]:
    """Hold the store's exclusive lock (every process and thread that opens the lock file waits for it)."""
    with (store / "lock").open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def _parse(line: bytes) -> tuple[int, Event]:
    index, name, data = line.decode().split(" ", 2)
    return int(index), (name, data)


def _append(path: Path, index: int, event: Event) -> None:
    """Append one event line with a single write (readers only take lines that end in a newline)."""
    with path.open("ab") as file:
        file.write(f"{index} {event[0]} {event[1]}\n".encode())


def _pack(snapshot: Snapshot) -> bytes:
    """latest.bin's record: crc32 of the rest (uint32), the epoch (int64), then every parameter's float64 values in
    the order settings.json's `parameters` lists them, all little-endian.

    The record is rewritten in place after each epoch, one pwrite at offset 0, rather than written to a new
    file renamed over the old one: on ext4 that rename waits for the data to reach the disk, 2.5 ms here, as
    long as a whole epoch of a batch-120 job. A reader that catches a write half done sees a wrong crc and
    reads again."""
    values = torch.cat([p.reshape(-1) for p in snapshot.parameters.values()]).to(DTYPE).numpy().tobytes()
    body = struct.pack("<q", snapshot.epoch) + values
    return struct.pack("<I", zlib.crc32(body)) + body


def _unpack(record: bytes, shapes: list[tuple[str, list[int]]]) -> Snapshot | None:
    """The snapshot in a latest.bin record; None when its crc is wrong (a write under way)."""
    if len(record) < 12 or struct.unpack_from("<I", record)[0] != zlib.crc32(record[4:]):
        return None
    values = torch.frombuffer(bytearray(record[12:]), dtype=DTYPE)
    parameters, at = {}, 0
    for name, shape in shapes:
        size = math.prod(shape)
        parameters[name] = values[at : at + size].reshape(shape)
        at += size
    return Snapshot(struct.unpack_from("<q", record, 4)[0], parameters)


class JobFiles:
    """One job in the store, as any process sees it: its settings, its events, cancelling, its parameters."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.id = directory.name
        self.events_path = directory / "events"
        self.cancel_path = directory / "cancel"
        self.latest_path = directory / "latest.bin"

    @functools.cached_property
    def settings(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / "settings.json").read_text()))

    def events(self) -> list[Event]:
        return [_parse(line)[1] for line in self.events_path.read_bytes().splitlines()]

    def count(self) -> int:
        """How many events the job has published."""
        return self.events_path.read_bytes().count(b"\n")

    def last_event(self) -> Event | None:
        with self.events_path.open("rb") as file:
            size = file.seek(0, os.SEEK_END)
            file.seek(max(0, size - TAIL_BYTES))
            lines = file.read().split(b"\n")[:-1]  # whole lines: the file ends with a newline
        if size > TAIL_BYTES and len(lines) < 2:  # the last line might begin before the tail
            lines = self.events_path.read_bytes().splitlines()
        return _parse(lines[-1])[1] if lines else None

    def state(self) -> str:
        """"running", or the name of the job's last event: "done", "cancelled" or "error"."""
        last = self.last_event()
        return last[0] if last is not None and last[0] in FINAL else "running"

    def finished(self) -> bool:
        return self.state() != "running"

    def orphaned(self) -> bool:
        """Still running by its events, but the process that trained it is gone."""
        return not _alive(self.settings["process"]) and not self.finished()

    def end_if_orphaned(self) -> None:
        """Publish `error` for a job whose training process is gone. The caller holds the store's lock."""
        if self.orphaned():
            detail = (f"The worker process that trained this job (pid {self.settings['process']['pid']}) stopped "
                      "before it finished; train again with POST /api/v1/iris/train")
            _append(self.events_path, self.count(), ("error", ErrorEvent(detail=detail).model_dump_json()))

    def cancel(self) -> None:
        """Ask the training loop, in whichever process runs it, to stop before its next batch."""
        self.cancel_path.touch()

    def snapshot(self) -> Snapshot:
        """The parameters after the latest finished epoch (epoch 0: untrained)."""
        shapes = [(name, list(shape)) for name, shape in self.settings["parameters"]]
        for _ in range(1000):  # a write takes microseconds: the next read finds the record whole
            snapshot = _unpack(self.latest_path.read_bytes(), shapes)
            if snapshot is not None:
                return snapshot
            time.sleep(0.001)
        raise RuntimeError(f"{self.latest_path} stays unreadable (its crc does not match)")

    def seconds_left(self) -> float:
        """An estimate from the pace so far (at least 1 s)."""
        last = self.last_event()
        if last is not None and last[0] == "epoch":
            epoch = EpochEvent.model_validate_json(last[1])
            if epoch.epoch > 0:
                return max(1.0, epoch.seconds / epoch.epoch * (epoch.epochs - epoch.epoch))
        elapsed = time.time() - float(self.settings["started"])
        return max(1.0, elapsed * (int(self.settings["config"]["epochs"]) + 1))

    def follow(self, start: int = 0) -> AsyncIterator[tuple[int, Event]]:
        """(id, event) for every event from id `start` on, waiting for new ones until the job's last event.

        The file is opened now: once open it stays readable even if the job is dropped meanwhile."""
        return self._follow(self.events_path.open("rb"), start)

    async def _follow(self, file: IO[bytes], start: int) -> AsyncIterator[tuple[int, Event]]:
        with file:
            pending = b""
            waited = 0.0
            while True:
                chunk = file.read()
                if not chunk:
                    await asyncio.sleep(POLL_S)
                    waited += POLL_S
                    if waited >= ORPHAN_CHECK_S:
                        waited = 0.0
                        if self.orphaned():
                            with _locked(self.dir.parent):
                                self.end_if_orphaned()
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    index, event = _parse(line)
                    if index >= start:
                        yield index, event
                    if event[0] in FINAL:
                        return


class Job:
    """A job this process trains, on a thread of its own that appends its events to the job's files."""

    def __init__(self, files: JobFiles, training: Training, on_finish: Callable[[Job], None]) -> None:
        self.files = files
        self.id = files.id
        self.training = training
        self.state = "running"  # then "done", "cancelled" or "error"
        self.published = 0
        self._stop = threading.Event()
        self._on_finish = on_finish
        self.thread = threading.Thread(target=self._run, name=f"attnscope-iris-{self.id[:8]}", daemon=True)

    @property
    def finished(self) -> bool:
        return self.state != "running"

    def _publish(self, event: Event) -> None:
        _append(self.files.events_path, self.published, event)
        self.published += 1
        if event[0] in FINAL:
            self.state = event[0]

    def _stopped(self) -> bool:
        return self._stop.is_set() or self.files.cancel_path.exists()

    def _run(self) -> None:
        _one_intra_op_thread()
        epochs_done = 0
        latest = os.open(self.files.latest_path, os.O_WRONLY)
        try:
            for report in self.training.run(self._stopped):
                name, data = serialize.iris_event(report)
                if name == "epoch":
                    epochs_done = report.epoch  # type: ignore[union-attr]
                    os.pwrite(latest, _pack(self.training.latest), 0)  # before the event announces the epoch
                self._publish((name, data))
        except Exception as exc:  # a bug, not a client's mistake: logged with its traceback
            log.exception("Iris training job %s failed", self.id)
            detail = f"Training failed after epoch {epochs_done}: {type(exc).__name__}: {exc}"
            self._publish(("error", ErrorEvent(detail=detail).model_dump_json()))
        finally:
            os.close(latest)
            if not self.finished:  # cannot happen: run() always ends with done or cancelled
                self._publish(("error", ErrorEvent(detail="Training ended without a result").model_dump_json()))
            self._on_finish(self)

    def cancel(self) -> None:
        """Stop before the next batch (the loop publishes `cancelled`)."""
        self._stop.set()


class JobRegistry:
    """The server's training jobs, in a store that every worker process of the server shares.

    `directory` None: a private temporary store, removed by close() (one process)."""

    def __init__(self, directory: Path | None = None, max_running: int = MAX_RUNNING,
                 keep: int = KEEP_FINISHED) -> None:
        self.max_running = max_running
        self.keep = keep
        self._private = directory is None
        self.dir = Path(tempfile.mkdtemp(prefix="attnscope-jobs-")) if directory is None else directory
        (self.dir / "dropped").mkdir(parents=True, exist_ok=True)
        self._own: dict[str, Job] = {}  # the jobs this process trains
        self._own_lock = threading.Lock()

    def _stored(self) -> list[JobFiles]:
        """Every job in the store, in the order they started. The caller holds the store's lock."""
        jobs = [JobFiles(path) for path in self.dir.iterdir() if JOB_ID.fullmatch(path.name)]
        return sorted(jobs, key=lambda job: float(job.settings["started"]))

    def start(self, config: TrainConfig) -> Job:
        """Start a job in this process; JobsBusy when max_running jobs are training in the store."""
        training = Training(config)
        with _locked(self.dir):
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
            settings = {"config": dataclasses.asdict(config), "started": time.time(), "process": _process(),
                        "parameters": [(name, list(p.shape)) for name, p in training.latest.parameters.items()]}
            (new / "settings.json").write_text(json.dumps(settings))
            (new / "events").touch()
            (new / "latest.bin").write_bytes(_pack(training.latest))
            new.rename(self.dir / job_id)
        job = Job(JobFiles(self.dir / job_id), training, self._finished)
        with self._own_lock:
            self._own[job.id] = job
        job.thread.start()
        return job

    def get(self, job_id: str, part: str) -> JobFiles:
        """The job with this id; UnknownJob (naming where the id was sent) when there is none."""
        directory = self.dir / job_id
        if not JOB_ID.fullmatch(job_id) or not directory.is_dir():
            evicted = JOB_ID.fullmatch(job_id) is not None and (self.dir / "dropped" / job_id).exists()
            raise UnknownJob(job_id, part, evicted=evicted, kept=self.keep)
        return JobFiles(directory)

    def _finished(self, job: Job) -> None:
        """Drop the finished jobs beyond the `keep` latest started, remembering their ids."""
        with self._own_lock:
            self._own.pop(job.id, None)
        with _locked(self.dir):
            finished = [stored for stored in self._stored() if stored.finished()]
            for old in finished[: max(0, len(finished) - self.keep)]:
                (self.dir / "dropped" / old.id).touch()
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
