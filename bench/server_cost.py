"""Target 1 and 2: a full /attention answer over loopback HTTP / HF's bare eager forward; bytes and error.

Each timed request uses a fresh text; the HF forward runs on the same texts with the same thread count.
The two sides alternate in blocks (HF block, HTTP block, three times each) so that both see the same
machine load, while neither side's idle OpenMP threads, still spinning after a forward, steal a core
from the other side's next forward.
"""

from __future__ import annotations

import json

import numpy as np

from bench.common import Server, TextMaker, hf_forward, load_hf, median, print_table, timed, verdict

LENGTHS = {32: (10, 1.3), 128: (6, 1.3), 512: (3, 1.5)}  # tokens: (repeats per block, goal ratio)
BLOCKS = 3


def decode_u16(body: bytes):
    size = int.from_bytes(body[4:8], "little")
    header = json.loads(body[8 : 8 + size])
    return header, np.frombuffer(body, dtype="<u2", offset=8 + size).reshape(header["shape"]) / header["scale"]


def run() -> str:
    hf = load_hf()
    texts = TextMaker(seed=1)
    rows, out = [], ""
    with Server() as server:
        for n, (repeats, goal) in LENGTHS.items():
            for _ in range(2):  # warm-up, both sides
                hf_forward(hf, texts.text(n))
                server.request("POST", "/api/v1/attention?encoding=u16", {"text": texts.text(n)})
            hf_ms, ours_ms = [], []
            for _ in range(BLOCKS):
                block = [texts.text(n) for _ in range(repeats)]
                hf_ms += [timed(lambda text=text: hf_forward(hf, text)) for text in block]
                ours_ms += [timed(lambda text=text: server.request("POST", "/api/v1/attention?encoding=u16",
                                                                   {"text": text}))
                            for text in block]
            ratio = median(ours_ms) / median(hf_ms)
            rows.append([n, f"{median(ours_ms):.1f}", f"{median(hf_ms):.1f}", f"{ratio:.2f}", f"<= {goal}",
                         verdict(ratio <= goal)])
        out += print_table(
            "Server cost: full /attention?encoding=u16 over HTTP vs HF eager forward (median ms)",
            ["tokens", "attnscope HTTP", "HF forward", "ratio", "goal", ""], rows,
        )

        text = texts.text(128)
        status, js = server.request("POST", "/api/v1/attention", {"text": text})
        status, u16 = server.request("POST", "/api/v1/attention?encoding=u16", {"text": text})
        _, weights = decode_u16(u16)
        err = float(np.abs(weights - np.array(json.loads(js)["attention"])).max())
        out += print_table(
            "Bytes: all 6 x 12 maps at 128 tokens",
            ["encoding", "bytes", "max abs error", "goal", ""],
            [["json", f"{len(js):,}", "0 (float32 as decimal)", "", ""],
             ["u16", f"{len(u16):,}", f"{err:.1e}", "<= 2.5 MB, <= 1e-4", verdict(len(u16) <= 2.5e6 and err <= 1e-4)]],
        )
    return out


if __name__ == "__main__":
    run()
