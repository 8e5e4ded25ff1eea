"""Mixed load on loopback: /attention, /trace, /toy and pages from many concurrent clients.

Checks zero errors, identical answers to identical requests, and flat memory after warm-up.
`make bench` runs the long form (32 clients, 30 s); tests/service/test_load.py a short one in CI.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from bench.common import Server, print_table, verdict

SENTENCES = [
    "The cat sat on the mat.", "Attention is all you need.", "注意力机制很重要。",
    "A long sentence about rivers, cities and the history of music in the north.",
    "Where did the dog go? It went home.", "<img src=x onerror=alert(1)>", "Ünïcödé 🧠 text",
]
TOY = [{}, {"causal": True}, {"queries": [[1, 2], [3, 4], [5, 6]], "n_heads": 1},
       {"queries": [[1, 0, 2, 1]], "keys": [[0, 1, 1, 2], [1, 1, 0, 1]],
        "weights": {"o": [[0, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 1], [0, 0, 1, 0]]}}]


def request_mix() -> list[tuple[str, str, dict | None]]:
    """A fixed pool of requests (method, path, json); each recurs many times during a run."""
    mix: list[tuple[str, str, dict | None]] = []
    for i, s in enumerate(SENTENCES):
        mix.append(("POST", "/api/v1/attention", {"text": s, "layers": [i % 6], "heads": [i % 12, (i + 5) % 12]}))
        mix.append(("POST", "/api/v1/attention?encoding=u16", {"text": s}))
        mix.append(("POST", "/api/v1/attention/summary?encoding=u16", {"text": s, "size": 16}))
        mix.append(("POST", "/api/v1/trace", {"text": s, "layer": i % 6, "head": i % 12}))
    mix += [("POST", "/api/v1/toy", t) for t in TOY]
    mix += [("GET", p, None) for p in ("/", "/steps?text=hi", "/toy", "/api/v1/models", "/healthz",
                                        "/static/js/api.js", "/static/css/app.css")]
    return mix


@dataclass
class LoadResult:
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    answers: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    rss_warm: float = 0.0
    rss_end: float = 0.0

    @property
    def mismatches(self) -> list[str]:
        """Requests that got different answers at different times (healthz reports live counters: excluded)."""
        return [k for k, v in self.answers.items() if len(v) > 1 and "/healthz" not in k]


async def _client(base: str, mix, until: dict[str, float], result: LoadResult, seed: int, at_least: int,
                  warm: asyncio.Event) -> None:
    rng = random.Random(seed)
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        while time.monotonic() < until["deadline"] or result.requests < at_least:
            method, path, body = rng.choice(mix)
            t0 = time.perf_counter()
            try:
                r = await client.request(method, path, json=body)
            except httpx.HTTPError as exc:
                result.errors.append(f"{method} {path}: {exc!r}")
                continue
            result.latencies_ms.append((time.perf_counter() - t0) * 1000)
            result.requests += 1
            if r.status_code != 200:
                result.errors.append(f"{method} {path}: {r.status_code} {r.text[:200]}")
            result.answers[f"{method} {path} {body}"].add(hashlib.sha256(r.content).hexdigest())
            if len(result.answers) == len(mix):
                warm.set()


WARM_AT_MOST_S = 300.0  # a server that never answers every request of the mix is measured anyway (and fails)


async def _run(server: Server, clients: int, seconds: float, warmup: float, at_least: int) -> LoadResult:
    """Warm-up lasts `warmup` seconds and until every request of the mix was answered once (every cache
    entry and code path has allocated what it keeps, however slow the machine); the measured part lasts
    the rest of `seconds` from then on."""
    result = LoadResult()
    mix = request_mix()
    warm = asyncio.Event()
    until = {"deadline": float("inf")}
    tasks = [asyncio.create_task(_client(server.base, mix, until, result, seed, at_least, warm))
             for seed in range(clients)]
    await asyncio.sleep(warmup)
    try:
        await asyncio.wait_for(warm.wait(), WARM_AT_MOST_S)
    except TimeoutError:
        pass
    result.rss_warm = server.rss_mb()
    until["deadline"] = time.monotonic() + max(0.0, seconds - warmup)
    await asyncio.gather(*tasks)
    result.rss_end = server.rss_mb()
    return result


def run_load(server: Server, clients: int = 32, seconds: float = 30, warmup: float | None = None,
             at_least: int = 0) -> LoadResult:
    """`clients` concurrent clients for `seconds` (warm-up included, and longer while some request of the
    mix is still unanswered), and on until `at_least` requests were answered in all: a short run on a
    busy machine still sends enough requests for its checks to mean something."""
    coro = _run(server, clients, seconds, seconds * 0.25 if warmup is None else warmup, at_least)
    with ThreadPoolExecutor(1) as own_loop:  # a thread of its own: the caller may be inside an event loop
        return own_loop.submit(asyncio.run, coro).result()


def run() -> str:
    with Server() as server:
        r = run_load(server, clients=32, seconds=30)
    lat = sorted(r.latencies_ms)
    ok = not r.errors and not r.mismatches and r.rss_end <= r.rss_warm * 1.1
    return print_table(
        "Mixed load: 32 clients x 30 s (/attention json+u16, summaries, /trace, /toy, pages)",
        ["requests", "req/s", "p50 ms", "p99 ms", "errors", "differing answers", "RSS warm / end MB", "goal", ""],
        [[r.requests, f"{r.requests / 30:.1f}", f"{lat[len(lat) // 2]:.1f}", f"{lat[int(len(lat) * 0.99)]:.1f}",
          len(r.errors), len(r.mismatches), f"{r.rss_warm:.0f} / {r.rss_end:.0f}",
          "0 errors, same answers, RSS <= +10%", verdict(ok)]],
    )


if __name__ == "__main__":
    run()
