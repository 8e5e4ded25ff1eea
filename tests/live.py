"""A real attnscope server in a subprocess, on a free port of 127.0.0.1, for tests that need one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
STARTUP_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """`python -m app.cli serve` with extra environment; `start()` waits for /healthz."""

    def __init__(self, log: Path, **env: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.env = {**os.environ, "HF_HUB_OFFLINE": "1", **env}
        self.proc: subprocess.Popen | None = None

    def spawn(self) -> subprocess.Popen:
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            )
        return self.proc

    def start(self) -> "LiveServer":
        self.spawn()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        with httpx.Client(trust_env=False, timeout=2) as client:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()}")
                try:
                    if client.get(f"{self.base}/healthz").status_code == 200:
                        return self
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"server not ready after {STARTUP_TIMEOUT_S} s:\n{self.output()}")
                time.sleep(0.05)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> "LiveServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
