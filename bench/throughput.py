"""Target 5: 16 concurrent clients for 20 s (wrk, loopback), then a series of 512-token compact answers.

Reports req/s, p50/p99 latency and errors from wrk, and the server's RSS sampled during the run.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench.common import Server, TextMaker, print_table, settle_s, verdict

HERE = Path(__file__).resolve().parent
CLIENTS, SECONDS, RSS_LIMIT_MB = 16, 20, 600
PARALLEL = 12  # clients asking for 512-token answers at once


def sample_rss(server: Server, out: list[float], stop: threading.Event, every_s: float = 0.5) -> None:
    while not stop.is_set():
        out.append(server.rss_mb())
        stop.wait(every_s)


def wrk_numbers(text: str) -> dict:
    def ms(label: str) -> float:
        value, unit = re.search(rf"{label}\s+([\d.]+)(us|ms|s)\b", text).groups()
        return float(value) * {"us": 1e-3, "ms": 1, "s": 1000}[unit]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    return {
        "requests": int(re.search(r"(\d+) requests in", text).group(1)),
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1)),
        "p50": ms("50%"),
        "p99": ms("99%"),
        "errors": (int(non2xx.group(1)) if non2xx else 0)
        + (sum(map(int, socket_errors.groups())) if socket_errors else 0),
    }


def run() -> str:
    if not shutil.which("wrk"):
        raise SystemExit("wrk is missing: apt-get install wrk")
    with Server() as server:
        texts = TextMaker(seed=7)
        for _ in range(20):  # warm-up
            server.request("POST", "/api/v1/attention?encoding=u16", {"text": texts.text(32)})
        rss_start = server.rss_mb()
        samples: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(server, samples, stop))
        sampler.start()
        out = subprocess.run(
            ["wrk", "-t2", f"-c{CLIENTS}", f"-d{SECONDS}s", "--latency", "--timeout", "10s",
             "-s", str(HERE / "wrk_attention.lua"), f"{server.base}/api/v1/attention?encoding=u16"],
            capture_output=True, text=True, check=True,
        ).stdout
        stop.set()
        sampler.join()
        w = wrk_numbers(out)
        rss_after_load = server.rss_mb()

        t0 = time.perf_counter()
        statuses = [server.request("POST", "/api/v1/attention?encoding=u16", {"text": texts.text(512)})[0]
                    for _ in range(20)]
        long_s = time.perf_counter() - t0
        rss_after_512 = server.rss_mb()
        settle_s(server.proc.pid, quiet_s=1.0)
        rss_settled = server.rss_mb()

        # 12 clients at once, 3 fresh 512-token answers each; RSS sampled every 20 ms
        batches = [[texts.text(512) for _ in range(3)] for _ in range(PARALLEL)]
        peak: list[float] = []
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rss, args=(server, peak, stop, 0.02))
        sampler.start()
        with ThreadPoolExecutor(PARALLEL) as pool:
            parallel = [s for batch in pool.map(lambda batch: [
                server.request("POST", "/api/v1/attention?encoding=u16", {"text": text})[0] for text in batch],
                batches) for s in batch]
        stop.set()
        sampler.join()

    table = print_table(
        f"Throughput: {CLIENTS} clients x {SECONDS} s, fresh 32-token texts, /attention?encoding=u16 (wrk)",
        ["requests", "req/s", "p50 ms", "p99 ms", "errors", "RSS start / peak / end MB", "goal", ""],
        [[w["requests"], f"{w['rps']:.1f}", f"{w['p50']:.1f}", f"{w['p99']:.1f}", w["errors"],
          f"{rss_start:.0f} / {max(samples):.0f} / {rss_after_load:.0f}", f"0 errors, RSS <= {RSS_LIMIT_MB}",
          verdict(w["errors"] == 0 and max(samples) <= RSS_LIMIT_MB)]],
    )
    table += print_table(
        "Memory with 512-token compact answers: 20 one after another, then 12 clients at once (3 each)",
        ["answers", "errors", "seconds", "RSS right after / once idle MB", "12 clients: peak MB", "goal", ""],
        [[len(statuses) + len(parallel), sum(s != 200 for s in statuses + parallel), f"{long_s:.1f}",
          f"{rss_after_512:.0f} / {rss_settled:.0f}", f"{max(peak):.0f}", f"<= {RSS_LIMIT_MB}",
          verdict(max(rss_after_512, max(peak)) <= RSS_LIMIT_MB and all(s == 200 for s in statuses + parallel))]],
    )
    return table


if __name__ == "__main__":
    run()
