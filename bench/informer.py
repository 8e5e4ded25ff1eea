"""The Informer lab (model/lab/informer.py) measured on this machine, one torch thread.

(a) Training at the defaults, seeds 0, 1 and 2, both attentions, each run as a job of the server runs it (one
    intra-op thread): the test MSE of each network, the seasonal-naive and linear baselines' on the same test
    windows, and the seconds. Targets: both networks' test MSE below the seasonal-naive's; ProbSparse's within
    10 % of full attention's; each run within GOAL_S seconds.
(b) One encoder forward (Informer.encode: embedding, the attention layers and the distilling between them, final
    norm; batch 1, eval mode, no grad) of the default network (heads, d_model, factor, layers at their defaults) at
    L = 96 … 4096 for both attentions. Each case runs in a fresh interpreter (`--case`): a warm-up forward at
    L = 96 loads the kernels, then the peak resident set is reset (5 written to /proc/self/clear_refs) and the
    current RSS read; one forward at L, and the peak RSS (VmHWM) minus that RSS is the case's peak memory (what the
    forward added to the process at its worst, as the kernel counts it; MB = 10⁶ bytes). Time: the median of
    REPEATS further forwards. The crossover is the first L from which ProbSparse's forward is faster at every
    longer L measured (null if none).

    .venv/bin/python -m bench.informer [--part all|seeds|sweep] [--out static/data/informer-sweep.json]

writes the JSON the /informer page reads, and prints the tables.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, print_table, verdict
from bench.flash_sweep import _status_kb, human_bytes, human_seconds

LENGTHS = (96, 192, 384, 768, 1536, 3072, 4096)
ATTENTIONS = ("full", "probsparse")
SEEDS = (0, 1, 2)
GOAL_S = 90.0  # seconds a training run may take (the issue allows 180)
WITHIN = 0.10  # ProbSparse's test MSE at most this much above full attention's
REPEATS = 7
CASE_TIMEOUT_S = 300
OUT = ROOT / "static" / "data" / "informer-sweep.json"


def machine_name() -> str:
    import os
    import platform

    import torch

    cpu = platform.machine()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, 1 thread"


def measure(attention: str, length: int) -> dict:
    """One forward case, in this process (meant to be a fresh one)."""
    import torch

    from model.lab.informer import Informer, InformerConfig

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = Informer(InformerConfig(attention=attention)).eval()
    x = torch.randn(1, length, generator=torch.Generator().manual_seed(length))  # (1, L)
    with torch.no_grad():
        model.encode(x[:, :96])  # load the kernels before the peak is reset
        Path("/proc/self/clear_refs").write_text("5")
        base_kb = _status_kb("VmRSS")
        t0 = time.perf_counter()
        out = model.encode(x)
        first = time.perf_counter() - t0
        peak_kb = _status_kb("VmHWM")
        del out
        times = []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            model.encode(x)
            times.append(time.perf_counter() - t0)
    return {"attention": attention, "length": length, "seconds": statistics.median(times), "runs": len(times),
            "first_run_seconds": first, "peak_bytes": (peak_kb - base_kb) * 1024}


def run_case(attention: str, length: int) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.informer", "--case", attention, str(length)], cwd=ROOT,
                         check=True, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    return json.loads(out.stdout)


def crossover(full: list[float], probsparse: list[float], lengths: tuple[int, ...] = LENGTHS) -> int | None:
    """The first length from which ProbSparse is faster at that and every longer length; None if none."""
    found = None
    for length, f, p in reversed(list(zip(lengths, full, probsparse, strict=True))):
        if p >= f:
            break
        found = length
    return found


def sweep() -> dict:
    cases = {a: [run_case(a, n) for n in LENGTHS] for a in ATTENTIONS}
    timings = {a: {"seconds": [c["seconds"] for c in cases[a]],
                   "peak_mb": [round(c["peak_bytes"] / 1e6, 2) for c in cases[a]]} for a in ATTENTIONS}
    at = crossover(timings["full"]["seconds"], timings["probsparse"]["seconds"])
    rows = [[n, human_seconds(cases["full"][i]["seconds"]), human_seconds(cases["probsparse"][i]["seconds"]),
             f"{cases['full'][i]['seconds'] / cases['probsparse'][i]['seconds']:.2f}",
             human_bytes(max(cases["full"][i]["peak_bytes"], 0)),
             human_bytes(max(cases["probsparse"][i]["peak_bytes"], 0))] for i, n in enumerate(LENGTHS)]
    print_table(f"One encoder forward, batch 1, one thread (median of {REPEATS}); peak RSS added by the first forward "
                f"(fresh process each); ProbSparse faster from L = {at}",
                ["L", "full", "probsparse", "full / probsparse", "full peak", "probsparse peak"], rows)
    return {**timings, "crossover": at}


def train(seed: int, attention: str) -> dict:
    import torch

    from model.lab.informer import InformerConfig, InformerDone, Training

    torch.set_num_threads(1)
    done = None
    for report in Training(InformerConfig(seed=seed, attention=attention)).run():
        if isinstance(report, InformerDone):
            done = report
    assert done is not None
    return {"test_mse": done.test_mse, "seconds": done.seconds, "naive_mse": done.naive_mse,
            "linear_mse": done.linear_mse}


def seeds() -> list[dict]:
    from model.lab.informer import InformerConfig

    results, rows = [], []
    c = InformerConfig()
    for seed in SEEDS:
        runs = {a: train(seed, a) for a in ATTENTIONS}
        naive, linear = runs["full"]["naive_mse"], runs["full"]["linear_mse"]
        results.append({"seed": seed, "series": c.series,
                        **{a: {"test_mse": runs[a]["test_mse"], "seconds": runs[a]["seconds"]} for a in ATTENTIONS},
                        "naive_mse": naive, "linear_mse": linear})
        full, sparse = runs["full"]["test_mse"], runs["probsparse"]["test_mse"]
        rows.append([seed, f"{full:.4f}", f"{sparse:.4f}", f"{naive:.4f}", f"{linear:.4f}",
                     f"{runs['full']['seconds']:.1f}", f"{runs['probsparse']['seconds']:.1f}",
                     verdict(full < naive and sparse < naive), verdict(sparse <= (1 + WITHIN) * full),
                     verdict(max(runs[a]["seconds"] for a in ATTENTIONS) <= GOAL_S)])
        print(f"  seed {seed}: {runs}", file=sys.stderr, flush=True)
    print_table(f"Training at the defaults ({c.series}, window {c.window}, horizon {c.horizon}, {c.layers} layers x "
                f"{c.heads} heads, d_model {c.d_model}, factor {c.factor}, {c.steps} steps of {c.batch}, Adam "
                f"{c.lr:g}): test MSE ({'ppm²' if c.series == 'co2' else 'units²'}) and seconds",
                ["seed", "full", "probsparse", "seasonal naive", "linear", "full s", "probsparse s",
                 "both below naive", f"probsparse within {WITHIN:.0%}", f"each <= {GOAL_S:.0f} s"], rows)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("all", "seeds", "sweep"), default="all")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--case", nargs=2, metavar=("ATTENTION", "LENGTH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(measure(args.case[0], int(args.case[1]))))
        return
    from model.lab.informer import InformerConfig

    c = InformerConfig()
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    started = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    result = {"machine": machine_name(), "measured": started, "threads": 1, "heads": c.heads, "d_model": c.d_model,
              "factor": c.factor, "layers": c.layers, "lengths": list(LENGTHS),
              "memory": "peak resident set (VmHWM) minus the resident set before one forward, fresh process, MB"}
    result.update({k: previous[k] for k in ("full", "probsparse", "crossover", "seeds") if k in previous})
    if args.part in ("all", "sweep"):
        result.update(sweep())
    if args.part in ("all", "seeds"):
        result["seeds"] = seeds()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
