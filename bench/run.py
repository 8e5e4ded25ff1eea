"""`make bench`: every benchmark in one run; prints each table and writes them all to bench/results.md."""

from __future__ import annotations

import importlib
import os
import platform
import sys
import time
from pathlib import Path

import torch

from bench.common import THREADS

SECTIONS = ["server_cost", "json_answer", "analysis", "startup", "page_load", "head_view", "steps_page", "throughput",
            "load", "fair", "workers", "flash_sweep", "sequence_sweep", "budget", "decoder", "induction", "seq2seq",
            "corpus"]


def main(names: list[str]) -> None:
    header = (
        f"# attnscope benchmarks\n\n{time.strftime('%Y-%m-%d %H:%M')} · {platform.machine()} · "
        f"torch {torch.__version__} · {THREADS} torch threads on both sides · ratios are attnscope / reference "
        "measured in the same run · load average at the start "
        f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n\n"
    )
    print(header)
    parts = [header]
    for name in names or SECTIONS:
        parts.append(importlib.import_module(f"bench.{name}").run())
    out = Path(__file__).with_name("results.md")
    out.write_text("\n".join(parts), encoding="utf-8")
    print(f"written to {out}")
    if any("check FAILED" in part for part in parts):
        raise SystemExit("a reference check FAILED (see above): the ratios of this run are not trustworthy")


if __name__ == "__main__":
    main(sys.argv[1:])
