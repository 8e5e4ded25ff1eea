"""Memory per worker process: `attnscope serve --workers N` for N = 1 and 2.

Each worker process loads its own models and keeps its own attention cache, so memory grows with N. For
each N the table gives every worker's RSS (VmRSS of /proc/<pid>/status) once it has started and is idle,
and again after twenty fresh 512-token compact answers of its own (`/api/v1/attention?encoding=u16`),
right after them and once its threads are idle; and the RSS of the supervising process that uvicorn
runs besides the workers when N > 1. A request reaches a chosen worker over a connection that worker
accepted: new connections are opened until /healthz's Attnscope-Worker header names it, and the
request goes over the same connection (checked by its local port). Each worker gets BENCH_THREADS // N
torch threads, as docs/deploy.md advises; docs/deploy.md quotes the table.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.common import ROOT, THREADS, Server, TextMaker, print_table, settle_s

ANSWERS = 20  # fresh 512-token answers per worker
PATH = "/api/v1/attention?encoding=u16"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def parent(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("PPid:"):
            return int(line.split()[1])
    raise RuntimeError(f"no PPid for {pid}")


def local_port(response: httpx.Response) -> int:
    """The client side's port of the TCP connection that carried `response`."""
    return int(response.extensions["network_stream"].get_extra_info("client_addr")[1])


class Pinned:
    """HTTP requests to one worker process, all over the one TCP connection it accepted.

    A request that went over another connection (the server closed an idle one, and httpx opened a new
    one that another worker may have accepted) fails the check rather than passing unnoticed."""

    def __init__(self, client: httpx.Client, pid: int, port: int) -> None:
        self.client = client
        self.pid = pid
        self.port = port

    def check(self, response: httpx.Response) -> httpx.Response:
        assert local_port(response) == self.port, f"the request left worker {self.pid}'s connection"
        return response

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return self.check(self.client.request(method, path, **kwargs))  # type: ignore[arg-type]

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Pinned:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def worker_of(client: httpx.Client) -> tuple[int, int]:
    """(pid of the worker that answers `client`'s connection, the connection's local port)."""
    r = client.get("/healthz")
    r.raise_for_status()
    return int(r.headers["Attnscope-Worker"]), local_port(r)


def connect(base: str, pid: int | None = None, avoid: int | None = None, tries: int = 500,
            timeout: float = 120) -> Pinned:
    """A connection that worker `pid` accepted (or any worker but `avoid`): new connections until one is,
    at most `tries` of them (the kernel hands each new connection to one of the workers waiting)."""
    answered: dict[int, int] = {}
    for _ in range(tries):
        client = httpx.Client(base_url=base, trust_env=False, timeout=timeout,
                              limits=httpx.Limits(max_connections=1, max_keepalive_connections=1))
        got, port = worker_of(client)
        answered[got] = answered.get(got, 0) + 1
        if (pid is None or got == pid) and got != avoid:
            return Pinned(client, got, port)
        client.close()
    raise AssertionError(f"no connection to worker {pid} (not {avoid}) in {tries} tries; answered: {answered}")


class WorkersServer(Server):
    """`attnscope serve --workers N` on a free loopback port; `pids`: its worker processes, once each has
    answered /healthz (with N = 1 the server's own process)."""

    def __init__(self, workers: int, **env: str) -> None:
        super().__init__(**env)
        self.env.pop("ATTNSCOPE_JOBS_DIR", None)  # the server makes its own for its workers
        self.workers = workers
        self.pids: list[int] = []

    def spawn(self) -> subprocess.Popen:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnscope.cli", "serve", "--port", str(self.port), "--workers", str(self.workers)],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        return self.proc

    def start(self) -> float:
        """Starts the server; returns the seconds until every worker has answered /healthz."""
        t0 = time.perf_counter()
        super().start()  # one worker answers
        seen: set[int] = set()
        while len(seen) < self.workers:  # the others may still be loading their models
            if self.proc.poll() is not None or time.perf_counter() - t0 > self.STARTUP_TIMEOUT_S:
                self.stop()
                raise RuntimeError(f"{len(seen)} of {self.workers} workers answered:\n{self.output()[-3000:]}")
            with httpx.Client(base_url=self.base, trust_env=False, timeout=30) as client:
                seen.add(worker_of(client)[0])
        self.pids = sorted(seen)
        return time.perf_counter() - t0


def threads(workers: int) -> int:
    """Torch threads per worker: the bench's cores shared out (docs/deploy.md: C cores, N workers, C/N each)."""
    return max(1, THREADS // workers)


def measure(workers: int, texts: TextMaker) -> list[list[object]]:
    rows: list[list[object]] = []
    with WorkersServer(workers, ATTNSCOPE_TORCH_THREADS=str(threads(workers))) as server:
        for pid in server.pids:
            settle_s(pid, quiet_s=1.0)
        started = {pid: rss_mb(pid) for pid in server.pids}
        right_after: dict[int, float] = {}
        for pid in server.pids:
            with connect(server.base, pid) as worker:
                for _ in range(ANSWERS):
                    r = worker.request("POST", PATH, json={"text": texts.text(512)})
                    assert r.status_code == 200, r.text
            right_after[pid] = rss_mb(pid)
        for pid in server.pids:
            settle_s(pid, quiet_s=1.0)
        for n, pid in enumerate(server.pids, 1):
            rows.append([workers, f"worker {n}", f"{started[pid]:.0f}", f"{right_after[pid]:.0f}",
                         f"{rss_mb(pid):.0f}"])
        if workers > 1:
            assert all(parent(pid) == server.proc.pid for pid in server.pids)
            rows.append([workers, "supervisor", f"{rss_mb(server.proc.pid):.0f}", "", ""])
        total = sum(rss_mb(pid) for pid in {*server.pids, server.proc.pid})
        rows.append([workers, "all processes", "", "", f"{total:.0f}"])
    return rows


def run() -> str:
    texts = TextMaker(seed=13, vocabulary=True)
    rows = [row for workers in (1, 2) for row in measure(workers, texts)]
    return print_table(
        f"Memory per worker process (RSS MB): started and idle, then after {ANSWERS} fresh 512-token compact answers "
        f"each (right after / once idle); {THREADS} // N torch threads per worker",
        ["--workers", "process", "started", f"after {ANSWERS} answers", "once idle"],
        rows,
    )


if __name__ == "__main__":
    run()
