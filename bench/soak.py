"""Soak: every operation from several client processes for many minutes; the server's memory, errors and answers.

* A real server (bench.common.Server) and separate client processes (`python -m bench.soak --client ROLE`):
  two "maps" clients (attention JSON, u16 and streamed answers left early, summaries, trace, metrics,
  contributions, aggregates, lens, token, patching, attribution; mostly 512-token texts, every one never sent
  before), a "light" client (toy, toy backward, flash with its backward, positions, cost, pages, short texts,
  streamed answers left early) and a "labs" client (Iris, seq2seq and induction trained to the end with
  predictions, a job cancelled midway, event streams closed early).
* The server's RSS (VmRSS from /proc) is sampled every SAMPLE_S seconds; the table gives, per minute, the RSS
  then, the lowest and the peak within the minute, and the requests, errors and 5xx answers so far. A 4xx
  `work_too_large` (the server's per-request work budget) and a 429 (two lab jobs already training) are
  refusals, not errors; every other non-2xx answer and every broken connection is an error.
* After the clients stop: the RSS at rest (after REST_S idle seconds) and where it lies (glibc's main heap,
  its per-thread arenas, other anonymous memory, files), then a fixed set of requests (texts not sent before)
  whose answers must equal the same requests' answers on a fresh server (byte-equal, or equal JSON).

Targets: RSS at rest <= 600 MB; growth of the lowest RSS within a minute (what the server keeps between answers)
from the minute ending at a third of the run to the last minute <= 5 %; 0 errors; 0 5xx; every answer equal.
Exit status 1 when one is missed. `--smoke` runs 12 s with one maps client, 128-token texts,
small labs and only the last three checks (tests/service/test_soak.py).

    python -m bench.soak --minutes 30
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import ROOT, Server, TextMaker, print_table, verdict

REST_GOAL_MB, GROWTH_GOAL = 600.0, 0.05
SAMPLE_S = 3.0
REST_S = 30.0
SMOKE_MINUTES = 0.2
REFUSALS = (b"work_too_large", b"patch_too_large")  # the per-request work budget's refusals: expected, not errors
LONG = 512  # tokens: MiniLM's limit
JSON_HEADS = 9  # 1 layer x 9 heads x 512 x 512 = 2.36 M weights, under the JSON cap of 2.5 M


class Tally:
    """A client's counters, written to its file every few seconds for the soak's table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.c = {"requests": 0, "errors": 0, "e5xx": 0, "refused": 0, "left_early": 0, "samples": []}
        self._written = 0.0

    def record(self, what: str, status: int | None, body: bytes = b"", expected: tuple[int, ...] = (200,)) -> bool:
        """Counts one answer; True when it is one of the expected statuses."""
        self.c["requests"] += 1
        ok = status in expected
        if not ok:
            if status is not None and 400 <= status < 500 and (any(r in body for r in REFUSALS) or status == 429):
                self.c["refused"] += 1
            else:
                self.c["errors"] += 1
                if status is not None and status >= 500:
                    self.c["e5xx"] += 1
                if len(self.c["samples"]) < 20:
                    self.c["samples"].append(f"{what}: {status} {body[:300]!r}")
        self.flush()
        return ok

    def flush(self, force: bool = False) -> None:
        if force or time.monotonic() - self._written > 2:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.c))
            os.replace(tmp, self.path)
            self._written = time.monotonic()


class Conn:
    """One keep-alive HTTP/1.1 connection (http.client), reopened after an error or an answer left early."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None
        self.used = 0.0

    IDLE_S = 3.0  # uvicorn closes a keep-alive connection idle for 5 s: an older one is not reused

    def _open(self) -> http.client.HTTPConnection:
        if self.conn is not None and time.monotonic() - self.used > self.IDLE_S:
            self.close()
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        self.used = time.monotonic()
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method: str, path: str, body: dict | None = None, read: int | None = None,
                headers: dict | None = None) -> tuple[int | None, bytes]:
        """The status and body; with `read`, only the first `read` bytes of a 200's body, then the connection is
        closed (a client that leaves mid-stream). (None, error text) when the connection broke."""
        try:
            conn = self._open()
            payload = None if body is None else json.dumps(body)
            conn.request(method, path, payload, {**({"content-type": "application/json"} if body else {}),
                                                 **(headers or {})})
            r = conn.getresponse()
            if read is not None and r.status == 200:
                data = r.read(read)
                self.close()
                return r.status, data
            data = r.read()
            self.used = time.monotonic()
            return r.status, data
        except (OSError, http.client.HTTPException) as exc:
            self.close()
            return None, repr(exc).encode()


def sse_events(conn: Conn, path: str, stop_after: int | None = None,
               deadline: float = float("inf")) -> tuple[int | None, list[tuple[str, str]]]:
    """Reads a job's event stream to its end, or leaves after `stop_after` events or once an event arrives past
    `deadline` (time.monotonic()); the (event, data) pairs."""
    c = http.client.HTTPConnection("127.0.0.1", conn.port, timeout=600)
    events: list[tuple[str, str]] = []
    try:
        c.request("GET", path)
        r = c.getresponse()
        if r.status != 200:
            return r.status, [("body", r.read().decode(errors="replace"))]
        name, data = "", []
        while True:
            line = r.readline()
            if not line:
                break
            line = line.decode().rstrip("\r\n")
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
            elif not line and name:
                events.append((name, "\n".join(data)))
                name, data = "", []
                if (stop_after is not None and len(events) >= stop_after) or time.monotonic() > deadline:
                    break
        return 200, events
    except (OSError, http.client.HTTPException) as exc:
        return None, [("broken", repr(exc))]
    finally:
        c.close()


def maps_ops(texts: TextMaker, rng: random.Random, n: int, lm_head: bool) -> list[tuple[str, str, dict, dict]]:
    """The model operations, each on texts never sent before: (name, path, body, options)."""
    short = max(8, n // 8)
    layer, head = rng.randrange(6), rng.randrange(12)
    heads = rng.sample(range(12), JSON_HEADS)
    return [
        ("attention u16", "/api/v1/attention?encoding=u16", {"text": texts.text(n)}, {}),
        ("attention u16 left", "/api/v1/attention?encoding=u16", {"text": texts.text(n)}, {"read": 4096}),
        ("attention json", "/api/v1/attention", {"text": texts.text(n), "layers": [layer], "heads": heads}, {}),
        ("attention pair", "/api/v1/attention?encoding=u16",
         {"text": texts.text(n // 2), "text_pair": texts.text(n // 2 - 1)}, {}),
        ("summary", "/api/v1/attention/summary?encoding=u16", {"text": texts.text(n), "size": 64}, {}),
        ("trace", "/api/v1/trace", {"text": texts.text(n), "layer": layer, "head": head}, {}),
        ("metrics", "/api/v1/metrics", {"text": texts.text(n)}, {}),
        ("contributions", "/api/v1/contributions",
         {"text": texts.text(n), "layers": [layer], "heads": heads[:JSON_HEADS - 1]}, {}),  # + the layer sum
        ("aggregate mean", "/api/v1/aggregate", {"text": texts.text(n), "kind": "mean"}, {}),
        ("aggregate rollout", "/api/v1/aggregate", {"text": texts.text(n), "kind": "rollout", "residual": 0.5}, {}),
        # MiniLM has no LM head: its logit lens is a 422 `no_lm_head`, the answer the client must get
        ("lens", "/api/v1/lens", {"text": texts.text(n), "top_k": 20}, {"expected": (200,) if lm_head else (422,)}),
        ("token", "/api/v1/token", {"text": rng.choice(texts.words)}, {}),
        ("patch heads", "/api/v1/patch", {"clean": texts.text(short), "corrupted": texts.text(short)}, {}),
        ("patch residual", "/api/v1/patch",
         {"clean": texts.text(short), "corrupted": texts.text(short), "target": "residual"}, {}),
        ("attribution gxi", "/api/v1/attribution",
         {"text": texts.text(n), "target": texts.text(8), "method": "gradient_x_input"}, {}),
        ("attribution ig", "/api/v1/attribution",
         {"text": texts.text(n - 12), "target": texts.text(10), "steps": 32}, {}),
        ("attribution ig left", "/api/v1/attribution",
         {"text": texts.text(n - 12), "target": texts.text(10), "steps": 128}, {"leave_s": 2.0}),
    ]


def light_ops(texts: TextMaker, rng: random.Random) -> list[tuple[str, str | None, dict | None, dict]]:
    """The toy, flash, positions, cost and pages, at their largest sizes, and short texts."""
    big = [[round(rng.uniform(-3, 3), 3) for _ in range(64)] for _ in range(64)]
    return [
        ("toy", "/api/v1/toy", {"queries": big, "n_heads": 8, "causal": True}, {}),
        ("toy backward", "/api/v1/toy/backward",
         {"queries": big, "n_heads": 4, "variant": rng.choice(["scaled_dot", "gumbel", "sample", "additive"]),
          "positions": "rope"}, {}),
        ("flash", "/api/v1/flash", {"queries": big, "n_heads": 1, "block_rows": 8, "block_cols": 8,
                                    "backward": True}, {}),
        ("positions", "/api/v1/positions?kind=rope&length=512&d_model=256&n_heads=8", None, {}),
        ("positions minilm", "/api/v1/positions?kind=learned&model=minilm", None, {}),
        ("cost", "/api/v1/cost?model=minilm&seq_len=512&batch=8", None, {}),
        ("attention short", "/api/v1/attention", {"text": texts.text(rng.randrange(4, 48))}, {}),
        ("attention left", "/api/v1/attention", {"text": texts.text(200), "layers": [0], "heads": [0, 1]},
         {"read": 512}),
        ("page", rng.choice(["/", "/steps?text=hello+world", "/toy", "/flash", "/cost", "/iris", "/seq2seq",
                             "/induction", "/positions", "/learn"]), None, {}),
        ("models", "/api/v1/models", None, {}),
    ]


def run_op(conn: Conn, tally: Tally, op: tuple) -> None:
    name, path, body, opt = op
    method = "GET" if body is None else "POST"
    if "leave_s" in opt:  # a long answer the client gives up on: it closes the connection while it is computed
        c = http.client.HTTPConnection("127.0.0.1", conn.port, timeout=opt["leave_s"])
        try:
            c.request(method, path, json.dumps(body), {"content-type": "application/json"})
            r = c.getresponse()
            status, data = r.status, r.read()
        except TimeoutError:
            tally.c["left_early"] += 1
            return
        except (OSError, http.client.HTTPException) as exc:
            status, data = None, repr(exc).encode()
        finally:
            c.close()
        tally.record(name, status, data)
        return
    status, data = conn.request(method, path, body, read=opt.get("read"))
    if opt.get("read") is not None and status == 200:
        tally.c["left_early"] += 1
    tally.record(name, status, data, expected=opt.get("expected", (200,)))


def lab_cycle(conn: Conn, tally: Tally, rng: random.Random, smoke: bool, deadline: float) -> None:
    """Each lab trained to the end (its whole event stream read, a prediction asked), one job cancelled midway
    after its stream was left early. A job still training at `deadline` is cancelled."""
    seed = rng.randrange(1 << 30)
    labs = [
        ("iris", "/api/v1/iris/train", {"epochs": 60 if smoke else 300, "batch": 16, "seed": seed, "watch": 3}),
        ("seq2seq", "/api/v1/labs/seq2seq/train",
         {"task": rng.choice(["reverse", "dates"]), "steps": 20 if smoke else 300, "hidden": 64 if smoke else 256,
          "batch": 32 if smoke else 128, "eval_every": 10 if smoke else 100, "seed": seed}),
        ("induction", "/api/v1/labs/induction/train",
         {"length": 32 if smoke else 128, "d_model": 64 if smoke else 256, "layers": 2 if smoke else 4,
          "heads": 2 if smoke else 8, "vocab": 64, "batch": 16, "steps": 10, "eval_every": 5, "seed": seed}),
    ]
    for lab, path, body in labs:
        if time.monotonic() > deadline:
            return
        status, data = conn.request("POST", path, body)
        if not tally.record(f"{lab} train", status, data, expected=(202,)):
            time.sleep(1)
            continue
        job = json.loads(data)
        # a second job of the same lab, whose stream is left after its first event, then cancelled midway
        status2, data2 = conn.request("POST", path, {**body, "seed": seed + 1})
        if tally.record(f"{lab} train 2", status2, data2, expected=(202,)):
            other = json.loads(data2)
            status, events = sse_events(conn, other["events"], stop_after=1)
            tally.record(f"{lab} events left", status, json.dumps(events[-1:]).encode())
            tally.c["left_early"] += 1
            status, data = conn.request("DELETE", path + "/" + other["job"])
            tally.record(f"{lab} cancel", status, data, expected=(200, 202, 204, 409))
        status, events = sse_events(conn, job["events"], deadline=deadline)
        final = events[-1][0] if events else None
        if final == "eval" or final == "epoch":  # the soak ends: this job is cancelled, not trained to the end
            status, data = conn.request("DELETE", path + "/" + job["job"])
            tally.record(f"{lab} cancel at the end", status, data, expected=(200, 202, 204, 409))
            return
        tally.record(f"{lab} events", status if final == "done" else 599, json.dumps(events[-1:])[:300].encode())
        if lab == "iris":
            status, data = conn.request("POST", "/api/v1/iris/predict",
                                        {"job": job["job"], "features": [5.1, 3.5, 1.4, 0.2]})
            tally.record("iris predict", status, data)
        elif lab == "seq2seq":
            text = "attention" if body["task"] == "reverse" else "1 Dec 2026"
            status, data = conn.request("POST", "/api/v1/labs/seq2seq/predict", {"job": job["job"], "text": text})
            tally.record("seq2seq predict", status, data)


def client_main(role: str, port: int, seed: int, seconds: float, out: Path, smoke: bool) -> None:
    tally = Tally(out)
    rng = random.Random(seed)
    texts = TextMaker(seed=1000 + seed, vocabulary=True)
    conn = Conn(port)
    status, data = conn.request("GET", "/api/v1/models")
    lm_head = status == 200 and any(m["lm_head"] and m["default"] for m in json.loads(data)["models"])
    deadline = time.monotonic() + seconds
    while True:
        if role == "labs":
            lab_cycle(conn, tally, rng, smoke, deadline)
        else:
            n = 128 if smoke else LONG
            ops = maps_ops(texts, rng, n, lm_head) if role == "maps" else light_ops(texts, rng)
            rng.shuffle(ops)
            for op in ops:
                run_op(conn, tally, op)
                if time.monotonic() > deadline:
                    break
        if time.monotonic() > deadline:
            break
    tally.flush(force=True)


def fixed_requests(long: int = LONG) -> list[tuple[str, str, dict | None]]:
    """The requests sent at the end to the soaked server and to a fresh one (texts the clients never sent)."""
    texts = TextMaker(seed=99, vocabulary=True)
    t512, t128, t32 = texts.text(long), texts.text(128), texts.text(32)
    return [
        ("POST", "/api/v1/attention?encoding=u16", {"text": t512}),
        ("POST", "/api/v1/attention", {"text": t128}),
        ("POST", "/api/v1/attention/summary?encoding=u16", {"text": t512, "size": 64}),
        ("POST", "/api/v1/trace", {"text": t128, "layer": 3, "head": 5}),
        ("POST", "/api/v1/metrics", {"text": t512}),
        ("POST", "/api/v1/contributions", {"text": t128}),
        ("POST", "/api/v1/aggregate", {"text": t512, "kind": "rollout"}),
        ("POST", "/api/v1/lens", {"text": t128, "top_k": 20}),
        ("POST", "/api/v1/patch", {"clean": t32, "corrupted": texts.text(32)}),
        ("POST", "/api/v1/attribution", {"text": t128, "target": t32, "steps": 32}),
        ("POST", "/api/v1/toy", {"causal": True}),
        ("POST", "/api/v1/toy/backward", {"variant": "gumbel", "seed": 3}),
        ("POST", "/api/v1/flash", {"backward": True}),
        ("GET", "/api/v1/positions?kind=sinusoidal&length=64&d_model=32", None),
        ("GET", "/api/v1/cost?model=minilm&seq_len=512", None),
    ]


def answers(server: Server, reqs) -> list[tuple[int, bytes]]:
    return [server.request(method, path, body) for method, path, body in reqs]


def same(a: tuple[int, bytes], b: tuple[int, bytes]) -> str:
    if a == b:
        return "byte-equal"
    if a[0] == b[0]:
        try:
            if json.loads(a[1]) == json.loads(b[1]):
                return "equal JSON"
        except ValueError:
            pass
    return "DIFFERENT"


def memory_parts(pid: int) -> dict[str, float]:
    """The process's resident memory (MB) by where it lies, from /proc/PID/smaps: glibc's main heap ([heap]), its
    per-thread arenas (their heaps: anonymous 64 MiB reservations, 64 MiB aligned, a read-write part and a ---p
    rest; an arena grown past 64 MiB chains several), other
    anonymous mappings (torch's and numpy's large buffers served by mmap, thread stacks), and files (libraries,
    weights read through mmap)."""
    parts = {"main heap": 0.0, "thread arenas": 0.0, "heaps": 0, "other anonymous": 0.0, "files": 0.0}
    maps: list[tuple[int, int, str, str, int]] = []  # start, end, perms, name, rss kB
    cur = None
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        head = line.split()
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            start, end = (int(x, 16) for x in head[0].split("-"))
            cur = [start, end, head[1], head[5] if len(head) > 5 else "", 0]
            maps.append(cur)  # type: ignore[arg-type]
        elif head[0] == "Rss:" and cur is not None:
            cur[4] = int(head[1])
    arena = 64 << 20
    for i, (start, end, perms, name, rss) in enumerate(maps):
        mb = rss / 1024
        if name == "[heap]":
            parts["main heap"] += mb
        elif name.startswith("/"):
            parts["files"] += mb
        elif (not name and start % arena == 0 and perms.startswith("rw") and i + 1 < len(maps)
              and maps[i + 1][0] == end and maps[i + 1][2].startswith("---") and maps[i + 1][1] - start == arena):
            parts["thread arenas"] += mb
            parts["heaps"] += 1
        elif (not name and start % arena == 0 and perms.startswith("rw") and end - start == arena):
            parts["thread arenas"] += mb  # an arena grown to the whole reservation
            parts["heaps"] += 1
        else:
            parts["other anonymous"] += mb
    return parts


def run(minutes: float = 30, smoke: bool = False, maps_clients: int = 2, env: dict | None = None,
        labs: bool = True) -> tuple[bool, str]:
    seconds = minutes * 60
    row_s = 60.0 if minutes >= 2 else 10.0
    rest_s = 2.0 if smoke else REST_S
    out = ""
    with tempfile.TemporaryDirectory(prefix="attnscope-soak-") as tmp, Server(**(env or {})) as server:
        rss0 = server.rss_mb()
        roles = ["maps"] * maps_clients + ["light"] + (["labs"] if labs else [])
        files = [Path(tmp) / f"client{i}.json" for i in range(len(roles))]
        procs = [subprocess.Popen(
            [sys.executable, "-m", "bench.soak", "--client", role, "--port", str(server.port), "--seed", str(i),
             "--seconds", str(seconds), "--out", str(f)] + (["--smoke"] if smoke else []), cwd=ROOT)
            for i, (role, f) in enumerate(zip(roles, files, strict=True))]
        t0 = time.monotonic()
        samples: list[tuple[float, float]] = []  # (seconds, RSS MB)
        rows = []
        next_row = row_s

        def totals() -> dict[str, int]:
            tot = {"requests": 0, "errors": 0, "e5xx": 0, "refused": 0, "left_early": 0}
            for f in files:
                if f.exists():
                    c = json.loads(f.read_text())
                    for k in tot:
                        tot[k] += c[k]
            return tot

        while any(p.poll() is None for p in procs):
            time.sleep(SAMPLE_S)
            t = time.monotonic() - t0
            samples.append((t, server.rss_mb()))
            if t >= next_row or all(p.poll() is not None for p in procs):
                window = [r for s, r in samples if s > next_row - row_s]
                tot = totals()
                rows.append([f"{t / 60:.1f}", f"{samples[-1][1]:.0f}", f"{min(window):.0f}", f"{max(window):.0f}",
                             tot["requests"],
                             tot["refused"], tot["left_early"], tot["errors"], tot["e5xx"]])
                print(f"  {rows[-1]}", flush=True)
                next_row += row_s
        client_failed = [p.returncode for p in procs if p.returncode != 0]
        tot = totals()
        samples_errors = [s for f in files if f.exists() for s in json.loads(f.read_text())["samples"]]
        time.sleep(rest_s)
        rest = server.rss_mb()
        parts = memory_parts(server.proc.pid)
        reqs = fixed_requests(128 if smoke else LONG)
        soaked = answers(server, reqs)
        peak = max(r for _, r in samples)
    third = [r for s, r in samples if seconds / 3 - row_s < s <= seconds / 3] or [samples[0][1]]
    last = [r for s, r in samples if seconds - row_s < s <= seconds] or [samples[-1][1]]  # the load's last minute
    # the lowest RSS of a period is what the server keeps between requests; its peak depends on which answers
    # happened to be in flight when sampled (an attribution of 500 tokens holds 1-2 GB while it runs)
    growth = min(last) / min(third) - 1
    with Server(**(env or {})) as fresh:
        fresh_answers = answers(fresh, reqs)
    compared = [same(a, b) for a, b in zip(soaked, fresh_answers, strict=True)]
    statuses_ok = all(a[0] == b[0] and a[0] < 500 for a, b in zip(soaked, fresh_answers, strict=True))

    out += print_table(
        f"Soak: {len(procs)} client processes ({maps_clients} maps, 1 light, {int(labs)} labs) for {minutes:g} min; "
        f"server RSS sampled every {SAMPLE_S:g} s (started: {rss0:.0f} MB)",
        ["minute", "RSS MB", "lowest in the period", "peak in the period", "requests", "refused (work budget, 429)",
         "left early", "errors", "5xx"], rows)
    out += print_table(
        f"At rest after {rest_s:g} s idle: where the RSS lies (/proc/PID/smaps)",
        ["RSS MB", "main heap", "thread arenas (their 64 MiB heaps)", "other anonymous", "files"],
        [[f"{rest:.0f}", f"{parts['main heap']:.0f}", f"{parts['thread arenas']:.0f} ({parts['heaps']})",
          f"{parts['other anonymous']:.0f}", f"{parts['files']:.0f}"]])
    out += print_table(
        "Answers at the end vs the same requests on a fresh server",
        ["request", "status soaked / fresh", "bytes", "same"],
        [[f"{m} {p}", f"{a[0]} / {b[0]}", len(a[1]), c]
         for (m, p, _), a, b, c in zip(reqs, soaked, fresh_answers, compared, strict=True)])
    checks = [
        ("0 errors", tot["errors"] == 0 and not client_failed, f"{tot['errors']} (clients exiting non-zero: "
                                                               f"{len(client_failed)})"),
        ("0 5xx", tot["e5xx"] == 0, str(tot["e5xx"])),
        ("answers equal a fresh server's", statuses_ok and all(c != "DIFFERENT" for c in compared),
         f"{sum(c != 'DIFFERENT' for c in compared)} / {len(compared)}"),
    ]
    if not smoke:
        checks += [
            (f"RSS at rest <= {REST_GOAL_MB:.0f} MB", rest <= REST_GOAL_MB, f"{rest:.0f} MB (peak {peak:.0f})"),
            (f"growth of the lowest RSS, minute {seconds / 180:g} -> the last <= {GROWTH_GOAL:.0%}",
             growth <= GROWTH_GOAL,
             f"{min(third):.0f} -> {min(last):.0f} MB ({growth:+.1%}; peaks {max(third):.0f} -> {max(last):.0f})"),
        ]
    out += print_table("Soak targets", ["target", "measured", ""], [[n, m, verdict(ok)] for n, ok, m in checks])
    if samples_errors:
        print("Errors (first of each client):\n  " + "\n  ".join(samples_errors[:40]), flush=True)
        out += "Errors:\n" + "\n".join(samples_errors[:40]) + "\n"
    return all(ok for _, ok, _ in checks), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--smoke", action="store_true", help=f"{SMOKE_MINUTES} min, small sizes, no memory targets")
    ap.add_argument("--maps-clients", type=int, default=2)
    ap.add_argument("--no-labs", action="store_true", help="no labs client (nothing trains)")
    ap.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                    help="an environment variable for the server (repeatable), e.g. MALLOC_ARENA_MAX=16")
    ap.add_argument("--client", choices=["maps", "light", "labs"], help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        client_main(args.client, args.port, args.seed, args.seconds, args.out, args.smoke)
        return
    ok, _ = run(SMOKE_MINUTES if args.smoke else args.minutes, smoke=args.smoke,
                maps_clients=1 if args.smoke else args.maps_clients, env=dict(e.split("=", 1) for e in args.env),
                labs=not args.no_labs)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
