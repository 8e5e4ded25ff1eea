"""Fair sharing of the model: a view's forward while the longest analyses run.

The long work, each sent by a client process of its own: the largest attribution the server accepts (integrated
gradients, 64 steps, as many tokens as its work budget allows: the size is read from the server's own refusal of
512 tokens), the largest residual patching grid it accepts (the same way, from `patch_too_large`), and the
induction lab's training. Meanwhile a separate client process (bench.client) times fresh 8- to 32-token
/api/v1/attention requests, each text never sent before. The reference: the same client against the same
server while it is idle, measured first in the same run (the better of two rounds). Target: p95 ≤ 0.5 s with
the long work running. The long requests' own times, alone (each on the idle server) and together, give their
slowdown.
"""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
import time

import httpx

from bench.common import ROOT, Server, TextMaker, percentile, print_table, verdict

TARGET_P95_MS = 500.0
LENGTHS = (8, 16, 24, 32)
ROUNDS = 10  # of the four lengths: 40 timed requests per phase
ATTRIBUTION_STEPS = 64


def timed_views(base: str, texts: list[str]) -> list[float]:
    """bench.client in its own process: each text POSTed to /api/v1/attention, the total times in ms."""
    job = {"base": base, "path": "/api/v1/attention?encoding=u16", "texts": texts}
    out = subprocess.run([sys.executable, "-m", "bench.client"], input=json.dumps(job), capture_output=True,
                         text=True, cwd=ROOT, check=True)
    return [r["total_ms"] for r in json.loads(out.stdout)["results"]]


def fresh_views(maker: TextMaker) -> list[str]:
    return [maker.text(n) for _ in range(ROUNDS) for n in LENGTHS]


def _post(base: str, path: str, body: dict, out) -> None:  # in a process of its own: a user's client
    t0 = time.perf_counter()
    with httpx.Client(base_url=base, timeout=900) as client:
        r = client.post(path, json=body)
    out.put((r.status_code, time.perf_counter() - t0, r.json() if r.status_code != 200 else None))


class LongRequest:
    """A long request in its own client process; `wait()` gives (status, seconds, refusal or None)."""

    def __init__(self, base: str, path: str, body: dict) -> None:
        context = multiprocessing.get_context("spawn")
        self.out = context.Queue()
        self.proc = context.Process(target=_post, args=(base, path, body, self.out))
        self.proc.start()

    def wait(self) -> tuple[int, float, dict | None]:
        found = self.out.get()
        self.proc.join()
        return found


def largest_body(server: Server, maker: TextMaker, kind: str) -> dict:
    """The biggest request of `kind` the server accepts at 512 tokens, or the most tokens it accepts: read from its
    refusal of 512 tokens (and 64 steps), which names the field to shrink and the most of it that fits."""
    def body(n: int, steps: int = ATTRIBUTION_STEPS) -> dict:
        if kind == "attribution":
            return {"text": maker.text(n), "target": "A second text to compare with.", "steps": steps}
        text = maker.text(n).split()
        return {"clean": " ".join(text), "corrupted": " ".join([*text[:-1], "dog"]), "target": "residual"}

    path = "/api/v1/attribution" if kind == "attribution" else "/api/v1/patch"
    status, raw = server.request("POST", path, body(512))  # a refusal costs no model work
    if status == 200:
        return body(512)
    error = json.loads(raw)["errors"][0]
    ctx = error.get("ctx", {})
    fits = ctx.get("largest", ctx.get("max_tokens"))
    assert fits, f"{kind} at 512 tokens refused without a size that fits: {error}"
    return body(512, int(fits)) if error["loc"][-1] == "steps" else body(int(fits))


def tokens_of(body: dict) -> int:
    return len((body.get("text") or body["clean"]).split()) + 2


def run() -> str:
    maker = TextMaker(seed=11, vocabulary=True)
    with Server() as server:
        base = server.base
        timed_views(base, [maker.text(8)])  # warm-up: the first forward, the client's imports
        idle = min((timed_views(base, fresh_views(maker)) for _ in range(2)), key=lambda ms: percentile(ms, 0.95))

        bodies = {kind: largest_body(server, maker, kind) for kind in ("attribution", "patching")}
        paths = {"attribution": "/api/v1/attribution", "patching": "/api/v1/patch"}
        alone = {}
        for kind, body in bodies.items():  # each alone on the idle server: the reference for the slowdown
            status, seconds, refusal = LongRequest(base, paths[kind], body).wait()
            assert status == 200, (kind, status, refusal)
            alone[kind] = seconds
        bodies = {kind: largest_body(server, maker, kind) for kind in bodies}  # fresh texts, the same sizes

        lab = httpx.post(f"{base}/api/v1/labs/induction/train", json={}, timeout=30)
        assert lab.status_code == 202, lab.text
        job = lab.json()
        long = {kind: LongRequest(base, paths[kind], body) for kind, body in bodies.items()}
        time.sleep(1.0)  # the long work under way (the views' client starts after it, as a user's would)
        busy = timed_views(base, fresh_views(maker))
        health = httpx.get(f"{base}/healthz").json()["jobs"]
        together = {}
        for kind, request in long.items():
            status, seconds, refusal = request.wait()
            assert status == 200, (kind, status, refusal)
            together[kind] = seconds
        httpx.delete(f"{base}/api/v1/labs/induction/train/{job['job']}", timeout=30)  # the lab's training ends

    p95_idle, p95_busy = percentile(idle, 0.95), percentile(busy, 0.95)
    rows = [
        ["/api/v1/attention, 8–32 tokens, idle server (reference)", len(idle), f"{percentile(idle, 0.5):.1f}",
         f"{p95_idle:.1f}", f"{max(idle):.1f}", "—"],
        ["the same, with the three long jobs running", len(busy), f"{percentile(busy, 0.5):.1f}", f"{p95_busy:.1f}",
         f"{max(busy):.1f}", f"p95 ≤ {TARGET_P95_MS:.0f} ms: {verdict(p95_busy <= TARGET_P95_MS)} "
         f"({p95_busy / p95_idle:.1f}× idle)"],
    ]
    out = print_table("Fair sharing: a view's forward while the longest analyses run (ms)",
                      ["requests", "n", "p50", "p95", "max", "target"], rows)
    long_rows = [[kind, tokens_of(bodies[kind]), bodies[kind].get("steps", "—"), f"{alone[kind]:.1f}",
                  f"{together[kind]:.1f}", f"{together[kind] / alone[kind]:.2f}×"] for kind in bodies]
    out += print_table("The long requests: alone, and beside each other, the lab and the views (s)",
                       ["request (largest accepted)", "tokens", "steps", "alone", "together", "slowdown"], long_rows)
    background = health["background"]
    out += f"Mid-run /healthz: background lane {background}, interactive lane {health['interactive']}.\n"
    print(out.splitlines()[-1])
    return out


if __name__ == "__main__":
    run()
