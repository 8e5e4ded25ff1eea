"""The JSON answer of all 72 maps as a user's client sees it, against HF's eager forward on the same text.

The client is this process (httpx, one keep-alive connection); the server is `attnscope serve` in its own
process. Every timed request sends a text built from random words that was never sent before (asserted),
so no cache answers it. HF transformers' BertModel (packaged weights, eager attention, output_attentions,
the same torch thread count) runs in this process on the same texts, in blocks that alternate with the
server's blocks; before each block the other side has been idle for PAUSE_S, so that no OpenMP thread
still spins. A request's time runs from sending it to its last body byte; parsing the body on the client
is printed apart (json.loads and orjson.loads of the same body), not part of the answer's time.

Beside the wall times, CPU times: the server process's (all its threads, from /proc/<pid>/task/*/schedstat,
read before and after each request) and HF's (this process's, time.process_time, around each forward).
On a busy machine wall times swing with other processes; CPU times much less.

    .venv/bin/python -m bench.json_answer [--root DIR] [--port PORT]

`--root` serves another checkout of attnscope (e.g. an older commit, for a before/after comparison).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson

from bench.common import ROOT, Server, TextMaker, hf_forward, load_hf, median, print_table, timed

LENGTHS = {32: 10, 128: 6, 512: 2}  # tokens: timed texts per block
BLOCKS = 3
PAUSE_S = 0.5
GOAL = 3.0  # the JSON answer at 128 tokens, as a multiple of HF's forward


class CheckoutServer(Server):
    """bench.common.Server, serving the checkout at `root` on `port`."""

    def __init__(self, root: Path, port: int) -> None:
        super().__init__()
        self.root, self.port, self.base = root, port, f"http://127.0.0.1:{port}"

    def spawn(self) -> subprocess.Popen:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(self.port)],
            cwd=self.root, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        return self.proc


def cpu_ms(pid: int) -> float:
    """CPU time (ms) all threads of process `pid` have run so far."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended meanwhile
            pass
    return total / 1e6


def spent(fn) -> tuple[float, float]:
    """fn() in wall ms and this process's CPU ms."""
    c0, t0 = time.process_time(), time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000


class FreshTexts:
    """TextMaker's random-word texts, refusing to hand out a text twice."""

    def __init__(self, seed: int) -> None:
        self.maker, self.seen = TextMaker(seed=seed), set[str]()

    def text(self, n: int) -> str:
        text = self.maker.text(n)
        assert text not in self.seen, "a timed text repeats: a cache could answer it"
        self.seen.add(text)
        return text


def run(root: Path = ROOT, port: int = 8121) -> str:
    hf = load_hf()
    texts = FreshTexts(seed=11)
    rows, parse_rows, out = [], [], ""
    with CheckoutServer(root, port) as server, httpx.Client(base_url=server.base, timeout=300) as client:
        def answer(text: str) -> httpx.Response:
            return client.post("/api/v1/attention", json={"text": text})

        for n, repeats in LENGTHS.items():
            first = answer(texts.text(n))
            if first.status_code != 200:
                rows.append([n, f"{first.status_code}: {first.json()['detail']}", "", "", "", "", "", "", ""])
                continue
            for _ in range(2):  # warm-up, both sides
                hf_forward(hf, texts.text(n))
                answer(texts.text(n))
            hf_ms: list[float] = []
            hf_cpu: list[float] = []
            ours_ms: list[float] = []
            ours_cpu: list[float] = []
            body = b""
            for _ in range(BLOCKS):
                block = [texts.text(n) for _ in range(repeats)]
                time.sleep(PAUSE_S)  # the server idle
                for text in block:
                    wall, cpu = spent(lambda text=text: hf_forward(hf, text))
                    hf_ms.append(wall)
                    hf_cpu.append(cpu)
                time.sleep(PAUSE_S)  # HF idle
                for text in block:
                    c0, t0 = cpu_ms(server.proc.pid), time.perf_counter()
                    r = answer(text)
                    body = r.content
                    ours_ms.append((time.perf_counter() - t0) * 1000)
                    ours_cpu.append(cpu_ms(server.proc.pid) - c0)
                    assert r.status_code == 200, r.text[:300]
            shape = [len(x) for x in (json.loads(body)["attention"], json.loads(body)["attention"][0])]
            assert shape == [6, 12], shape
            rows.append([n, f"{min(ours_ms):.1f} ({median(ours_ms):.1f})", f"{min(hf_ms):.1f} ({median(hf_ms):.1f})",
                         f"{min(ours_ms) / min(hf_ms):.2f} ({median(ours_ms) / median(hf_ms):.2f})",
                         f"{min(ours_cpu):.1f} ({median(ours_cpu):.1f})", f"{min(hf_cpu):.1f} ({median(hf_cpu):.1f})",
                         f"{len(body):,}", f"<= {GOAL}" if n == 128 else "",
                         ("met" if max(min(ours_ms) / min(hf_ms), median(ours_ms) / median(hf_ms)) <= GOAL
                          else "MISSED") if n == 128 else ""])
            parse_rows.append([n, f"{min(timed(lambda body=body: json.loads(body)) for _ in range(3)):.1f}",
                               f"{min(timed(lambda body=body: orjson.loads(body)) for _ in range(3)):.1f}"])
    out += print_table(
        "JSON answer: POST /api/v1/attention (all 6 x 12 maps) over HTTP from an httpx client vs HF eager forward "
        "with output_attentions, ms, min (median)",
        ["tokens", "attnscope JSON answer", "HF forward", "ratio", "server CPU", "HF CPU", "bytes",
         "goal (both ratios)", ""], rows,
    )
    out += print_table("Client-side parse of that body (not part of the answer's time), min ms",
                       ["tokens", "json.loads", "orjson.loads"], parse_rows)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the attnscope checkout to serve")
    parser.add_argument("--port", type=int, default=8121)
    args = parser.parse_args()
    run(args.root, args.port)
