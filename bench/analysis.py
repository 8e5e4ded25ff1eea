"""The analysis routes as a user's client sees them, against HF's eager forward on the same text.

The server is `attnscope serve` in its own process; this process is the client (httpx, one keep-alive
connection) and runs HF transformers' BertModel (eager, output_attentions, the same torch thread count)
as the reference, on the same texts, each side timed after the other has been idle for PAUSE_S. Every
timed request sends a text of random vocabulary words never sent before (TextMaker asserts it), so no
cache answers. Each route's time runs from sending the request to the last byte of its JSON answer.

    .venv/bin/python -m bench.analysis
"""

from __future__ import annotations

import time

import httpx

from bench.common import Server, TextMaker, hf_forward, load_hf, median, print_table, timed

LENGTHS = {32: 6, 128: 4, 512: 3}  # tokens: timed texts per route
PAUSE_S = 0.5
ROUTES = {  # what the explorer asks for
    "/attention?encoding=u16 (all maps)": ("/api/v1/attention?encoding=u16", {}),
    "/aggregate mean": ("/api/v1/aggregate", {"kind": "mean"}),
    "/aggregate rollout": ("/api/v1/aggregate", {"kind": "rollout", "residual": 0.5}),
    "/metrics": ("/api/v1/metrics", {}),
    "/contributions (1 layer, 1 head)": ("/api/v1/contributions", {"layers": [2], "heads": [5]}),
}


def run() -> str:
    hf = load_hf()
    texts = TextMaker(seed=23, vocabulary=True)
    rows = []
    with Server() as server, httpx.Client(base_url=server.base, timeout=300) as client:
        def post(path: str, extra: dict, text: str) -> float:
            t0 = time.perf_counter()
            r = client.post(path, json={"text": text, **extra})
            r.read()
            assert r.status_code == 200, r.text[:300]
            return (time.perf_counter() - t0) * 1000

        for n, repeats in LENGTHS.items():
            for path, extra in ROUTES.values():  # warm-up, both sides
                post(path, extra, texts.text(n))
                hf_forward(hf, texts.text(n))
            time.sleep(PAUSE_S)
            block = [texts.text(n) for _ in range(repeats)]
            hf_ms = [timed(lambda text=text: hf_forward(hf, text)) for text in block]
            for name, (path, extra) in ROUTES.items():
                block = [texts.text(n) for _ in range(repeats)]
                time.sleep(PAUSE_S)
                ms = [post(path, extra, text) for text in block]
                rows.append([n, name, f"{min(ms):.1f} / {median(ms):.1f}", f"{min(hf_ms):.1f} / {median(hf_ms):.1f}",
                             f"{min(ms) / min(hf_ms):.2f} / {median(ms) / median(hf_ms):.2f}"])
    return print_table(
        "Analysis routes over HTTP (httpx client, fresh random words each request) vs HF eager forward with "
        "attentions on the same lengths (min / median ms)",
        ["tokens", "route", "answer", "HF forward", "answer / HF"], rows,
    )


if __name__ == "__main__":
    run()
