"""A user's client in its own process: times compact /attention answers with httpx, prints JSON.

Run as `python -m bench.client`; reads one JSON object from stdin:

    {"base": "http://127.0.0.1:8123", "path": "/api/v1/attention?encoding=u16", "texts": ["...", ...]}

opens one keep-alive connection (an untimed GET /healthz), then POSTs each text in turn and prints

    {"results": [{"total_ms": ..., "ttfb_ms": ..., "headers_ms": ..., "bytes": ..., "shape": [...]}, ...]}

With `"model": ID` the texts go to that model. With `"bodies": [{...}, ...]` in place of "texts" it POSTs
those JSON bodies to a server-sent-events route (POST /api/v1/generate) and counts the `token` events of
each answer (`"tokens"` in place of `"shape"`).

`ttfb_ms` is the time from sending the request to the first byte of the body, `headers_ms` to the
status line and headers, `total_ms` to the last byte. The client keeps the whole body in memory, as
`response.read()` would, and checks it against the documented layout (magic, header length, shape).
It imports only httpx and the standard library, as a user's script would.
"""

from __future__ import annotations

import json
import math
import struct
import sys
import time

import httpx

MAGIC = b"ATN1"


def check_u16(body: bytes | bytearray) -> list[int]:
    """The answer's shape, after checking the body is exactly header + 2 bytes per weight."""
    magic, size = struct.unpack_from("<4sI", body, 0)
    if magic != MAGIC:
        raise ValueError(f"body starts with {magic!r}, not {MAGIC!r}")
    shape = json.loads(body[8 : 8 + size])["shape"]
    expected = 8 + size + 2 * math.prod(shape)
    if len(body) != expected:
        raise ValueError(f"body has {len(body)} bytes, the header's shape {shape} needs {expected}")
    return shape


def count_events(body: bytes | bytearray) -> int:
    """How many `token` events a server-sent-events body holds (after checking it ends with `done`)."""
    events = [line for line in bytes(body).decode().splitlines() if line.startswith("event: ")]
    if not events or events[-1] != "event: done":
        raise ValueError(f"the stream does not end with a done event: {events[-3:]}")
    return events.count("event: token")


def time_one(client: httpx.Client, url: str, payload: dict, events: bool = False) -> dict:
    body = bytearray()
    t0 = time.perf_counter()
    with client.stream("POST", url, json=payload) as r:
        t_headers = time.perf_counter()
        t_first = None
        for chunk in r.iter_raw():
            if t_first is None and chunk:
                t_first = time.perf_counter()
            body += chunk
        t_end = time.perf_counter()
    if r.status_code != 200:
        raise RuntimeError(f"{r.status_code} from {url}: {bytes(body[:500])!r}")
    return {
        "total_ms": (t_end - t0) * 1000,
        "ttfb_ms": ((t_first or t_end) - t0) * 1000,
        "headers_ms": (t_headers - t0) * 1000,
        "bytes": len(body),
        **({"tokens": count_events(body)} if events else {"shape": check_u16(body)}),
    }


def main() -> None:
    job = json.load(sys.stdin)
    with httpx.Client(base_url=job["base"], timeout=120) as client:
        client.get("/healthz").raise_for_status()  # the connection is open before the first timed request
        if "bodies" in job:
            results = [time_one(client, job["path"], body, events=True) for body in job["bodies"]]
        else:
            extra = {"model": job["model"]} if "model" in job else {}
            results = [time_one(client, job["path"], {"text": text, **extra}) for text in job["texts"]]
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
