"""Shared pieces of the benchmarks: a real server, fresh texts, timing and the results table."""

from __future__ import annotations

import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
THREADS = int(os.environ.get("BENCH_THREADS", "2"))  # torch threads, equal on both sides
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# Common English words; the ones that are a single token of the model are used to build texts.
WORDS = """the of and to in is was for on that with as by at from it his an were are which this be
has had not have or one their first its after new who they two her she been other when there all
during into school time may years more most only over city some world would where later up such
used many can state about national out known university united then made team people american
under film also life well him her war area between part around both series game best second same
album three state year since work called family group each season house music number public place
small old early great until high long like world court days name party water history north south
east west light river power city land body story black white red green blue open last make good
home field point long word line still large through know around form head night market because
show side must three few live love book mean next look child find hand play game music money""".split()


# Debian's chromium-headless-shell, as the e2e tests and the page benchmark launch it (see DESIGN.md): Chromium's
# own engine without the browser's user interface ("old headless"), what Playwright runs for headless tests. The
# full browser's headless mode spent 2.6 times its browser-process CPU on the same 18 page loads (measured here).
CHROMIUM = "/usr/bin/chromium-headless-shell"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    # Without this Chromium sends DNS queries off the machine; with it only 127.0.0.1 resolves.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TextMaker:
    """Fresh texts of an exact token count, so that no cache can stand in for the work.

    Each text is words drawn at random (seeded) from WORDS, or with `vocabulary=True` from the ~21,700
    whole lowercase words of the model's vocabulary; every text a TextMaker returns differs from all the
    ones it returned before (checked)."""

    def __init__(self, seed: int = 0, vocabulary: bool = False) -> None:
        from model.checkpoints.registry import minilm_dir
        from model.checkpoints.tokenizer import Tokenizer

        self.tokenizer = Tokenizer(minilm_dir() / "tokenizer.json", max_tokens=10_000)
        if vocabulary:  # a whole word of the vocabulary is one WordPiece token; text() checks the count
            pool = {w for w in self.tokenizer._raw.get_vocab() if w.isascii() and w.isalpha() and w.islower()
                    and len(w) >= 2}
        else:
            pool = {w for w in WORDS if len(self.tokenizer.encode(w)) == 3}  # [CLS] w [SEP]
        self.words = sorted(pool)
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def text(self, n_tokens: int) -> str:
        text = " ".join(self.rng.choice(self.words) for _ in range(n_tokens - 2))
        assert len(self.tokenizer.encode(text)) == n_tokens
        assert text not in self.seen, "a text repeated: the cache would answer it"
        self.seen.add(text)
        return text


class Server:
    """`attnscope serve` in a subprocess on a free loopback port (used by benchmarks and tests)."""

    STARTUP_TIMEOUT_S = 60

    def __init__(self, port: int | None = None, **env: str) -> None:
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "ATTNSCOPE_TORCH_THREADS": str(THREADS), **env}
        self.proc: subprocess.Popen | None = None

    def spawn(self) -> subprocess.Popen:
        self.log = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would stall the server
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnscope.cli", "serve", "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        return self.proc

    def start(self) -> float:
        """Starts the server; returns seconds from spawn to the first 200 from /healthz."""
        t0 = time.perf_counter()
        self.spawn()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.output()[-3000:]}")
            if time.perf_counter() - t0 > self.STARTUP_TIMEOUT_S:
                self.stop()
                raise RuntimeError(f"server not ready after {self.STARTUP_TIMEOUT_S} s:\n{self.output()[-3000:]}")
            try:
                status, _ = self.request("GET", "/healthz")
                if status == 200:
                    return time.perf_counter() - t0
            except OSError:
                time.sleep(0.01)

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> Server:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            payload = None if body is None else json.dumps(body)
            conn.request(method, path, payload, {"content-type": "application/json"} if body else {})
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")


def cpu_ns(pid: int | str = "self", skip: set[int] | None = None) -> int:
    """CPU time (ns) all threads of process `pid` have run so far, except the thread ids in `skip`."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        if skip and int(task.name) in skip:
            continue
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            pass
    return total


def settle_s(pid: int | str = "self", skip: set[int] | None = None, quiet_s: float = 1.0,
             window_s: float = 0.005, busy: float = 0.2, limit_s: float = 10.0) -> float:
    """Waits until process `pid`'s threads (but those in `skip`) have been idle for `quiet_s`, and returns
    the seconds from the call to the end of the last `window_s` window in which they used more than
    `busy` of one core (0.0: idle from the start). Gives up after `limit_s`."""
    t0 = time.perf_counter()
    last_busy, prev, t_prev = 0.0, cpu_ns(pid, skip), 0.0
    while t_prev < limit_s and t_prev - last_busy < quiet_s:
        time.sleep(window_s)
        cur, t = cpu_ns(pid, skip), time.perf_counter() - t0
        if cur - prev > busy * (t - t_prev) * 1e9:
            last_busy = t
        prev, t_prev = cur, t
    return last_busy


def load_hf():
    """HF transformers' BertModel on the packaged weights, eager attention (the reference)."""
    import torch
    import transformers

    from model.checkpoints.registry import minilm_dir

    torch.set_num_threads(THREADS)
    transformers.logging.set_verbosity_error()
    d = str(minilm_dir())
    tok = transformers.AutoTokenizer.from_pretrained(d)
    model = transformers.BertModel.from_pretrained(d, attn_implementation="eager").eval()
    return tok, model


def hf_forward(hf, text: str) -> None:
    import torch

    tok, model = hf
    with torch.no_grad():
        model(**tok(text, return_tensors="pt"), output_attentions=True)


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def percentile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def print_table(title: str, headers: list[str], rows: list[list[object]]) -> str:
    lines = [f"### {title}", "", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    out = "\n".join(lines) + "\n"
    print(out, flush=True)
    return out


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"
