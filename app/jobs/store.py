"""The job store: one directory per job, shared by every process of a server (app/jobs/__init__.py
describes its files); locking, the liveness of the process that trains a job, events and snapshots."""

from __future__ import annotations

import asyncio
import fcntl
import functools
import json
import math
import os
import re
import socket
import struct
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import torch

from ..schemas.iris import ErrorEvent

FINAL = ("done", "cancelled", "error")  # a job's last event is one of these
POLL_S = 0.1  # how often a stream looks for new events
ORPHAN_CHECK_S = 2.0  # how often a waiting stream checks that the training process is still there
TAIL_BYTES = 64 * 1024  # read from the end of an events file for its last event (an event line is ~1 KB)
JOB_ID = re.compile(r"[0-9a-f]{32}")

Event = tuple[str, str]  # (event name, JSON data)
DTYPE = torch.float64  # latest.bin's numbers: every lab's parameters (float32 or float64) kept exactly


@dataclass(frozen=True)
class Saved:
    """A job's parameters as latest.bin keeps them, after `count` epochs or steps (0: untrained)."""

    count: int
    parameters: dict[str, torch.Tensor]


def this_process() -> dict[str, Any]:
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
def locked(store: Path) -> Iterator[None]:
    """Hold the store's exclusive lock (every process and thread that opens the lock file waits for it)."""
    with (store / "lock").open("a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def _parse(line: bytes) -> tuple[int, Event]:
    index, name, data = line.decode().split(" ", 2)
    return int(index), (name, data)


def append_event(path: Path, index: int, event: Event) -> None:
    """Append one event line with a single write (readers only take lines that end in a newline)."""
    with path.open("ab") as file:
        file.write(f"{index} {event[0]} {event[1]}\n".encode())


def pack_snapshot(saved: Saved) -> bytes:
    """latest.bin's record: crc32 of the rest (uint32), the epoch or step (int64), then every parameter's values as
    float64 in the order settings.json's `parameters` lists them, all little-endian.

    The record is rewritten in place after each evaluation, one pwrite at offset 0, rather than written to a new
    file renamed over the old one: on ext4 that rename waits for the data to reach the disk, 2.5 ms here, as
    long as a whole epoch of a batch-120 Iris job. A reader that catches a write half done sees a wrong crc and
    reads again."""
    values = b"".join(p.detach().reshape(-1).to(DTYPE).numpy().tobytes() for p in saved.parameters.values())
    body = struct.pack("<q", saved.count) + values
    return struct.pack("<I", zlib.crc32(body)) + body


def unpack_snapshot(record: bytes, shapes: list[tuple[str, list[int]]]) -> Saved | None:
    """The parameters in a latest.bin record; None when its crc is wrong (a write under way)."""
    if len(record) < 12 or struct.unpack_from("<I", record)[0] != zlib.crc32(record[4:]):
        return None
    values = torch.frombuffer(bytearray(record[12:]), dtype=DTYPE)
    parameters, at = {}, 0
    for name, shape in shapes:
        size = math.prod(shape)
        parameters[name] = values[at : at + size].reshape(shape)
        at += size
    return Saved(struct.unpack_from("<q", record, 4)[0], parameters)


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

    @property
    def kind(self) -> str:
        """The lab that trains it: "iris", "induction" or "seq2seq"."""
        return str(self.settings.get("kind", "iris"))

    def end_if_orphaned(self) -> None:
        """Publish `error` for a job whose training process is gone. The caller holds the store's lock."""
        if self.orphaned():
            detail = (f"The worker process that trained this job (pid {self.settings['process']['pid']}) stopped "
                      f"before it finished; train again with POST {self.settings['train']}")
            append_event(self.events_path, self.count(), ("error", ErrorEvent(detail=detail).model_dump_json()))

    def cancel(self) -> None:
        """Ask the training loop, in whichever process runs it, to stop before its next batch."""
        self.cancel_path.touch()

    def snapshot(self) -> Saved:
        """The parameters after the latest evaluation (0: untrained)."""
        shapes = [(name, list(shape)) for name, shape in self.settings["parameters"]]
        for _ in range(1000):  # a write takes microseconds: the next read finds the record whole
            snapshot = unpack_snapshot(self.latest_path.read_bytes(), shapes)
            if snapshot is not None:
                return snapshot
            time.sleep(0.001)
        raise RuntimeError(f"{self.latest_path} stays unreadable (its crc does not match)")

    def seconds_left(self) -> float:
        """An estimate from the pace so far (at least 1 s): from the last progress event's count, total and seconds,
        or before the first one, as long again as the job has taken so far for each event still to come."""
        event, count, total = self.settings["progress"]
        last = self.last_event()
        if last is not None and last[0] == event:
            data = json.loads(last[1])
            done, seconds = int(data[count]), float(data["seconds"])
            if done > 0:
                return max(1.0, seconds / done * (int(data[total]) - done))
        elapsed = time.time() - float(self.settings["started"])
        return max(1.0, elapsed * int(self.settings["events"]))

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
                            with locked(self.dir.parent):
                                self.end_if_orphaned()
                    continue
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    index, event = _parse(line)
                    if index >= start:
                        yield index, event
                    if event[0] in FINAL:
                        return
