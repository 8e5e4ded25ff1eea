"""Target 6: `attnscope serve` to the first 200 from /healthz, and to the first /attention answer,
beside the cold import-and-load of the same model in HF transformers (a fresh interpreter each time)."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.common import ROOT, Server, median, print_table, verdict

RUNS = 3
HF_LOAD = (
    "import transformers; from model.checkpoints.registry import minilm_dir; d = str(minilm_dir()); "
    "transformers.AutoTokenizer.from_pretrained(d); "
    "transformers.BertModel.from_pretrained(d, attn_implementation='eager')"
)


def hf_cold_load() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", HF_LOAD], cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - t0


def ours() -> tuple[float, float]:
    server = Server()
    t0 = time.perf_counter()
    try:
        health = server.start()
        status, _ = server.request("POST", "/api/v1/attention", {"text": "The first answer after start-up."})
        assert status == 200
        return health, time.perf_counter() - t0
    finally:
        server.stop()


def run() -> str:
    hf, health, first = [], [], []
    for _ in range(RUNS):  # alternate, so that both see the same file cache and load
        hf.append(hf_cold_load())
        h, f = ours()
        health.append(h)
        first.append(f)
    ratio = median(health) / median(hf)
    return print_table(
        f"Start-up (median of {RUNS}, seconds, a fresh process each time)",
        ["attnscope serve -> /healthz 200", "-> first /attention", "HF import + load", "ratio", "goal", ""],
        [[f"{median(health):.2f}", f"{median(first):.2f}", f"{median(hf):.2f}", f"{ratio:.2f}", "<= 0.5",
          verdict(ratio <= 0.5)]],
    )


if __name__ == "__main__":
    run()
