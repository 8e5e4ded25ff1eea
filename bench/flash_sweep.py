"""FlashAttention measured on this machine: one head, d = 64, float32, on the CPU, N = 256 … 32768 tokens.

Three ways to compute softmax(Q·Kᵀ/√d)·V for Q, K, V of N × 64:

* naive: written out in torch, the N × N matrix materialised: the scores S = Q·Kᵀ/√d, the weights
  A = softmax(S) (a second N × N matrix) and A·V. Refused, with the reason in the table, when its
  N × N float32 matrix (4·N² bytes) would pass NAIVE_MAX_BYTES = 2 GiB: at N = 32768 it is 4 GiB.
* tiled: the FlashAttention forward (Dao et al. 2022) in float32 with blocks of 128 × 128, the same
  update of the running maximum m, sum ℓ and output O per query block as model/lab/flash.py's
  tiled_forward, but keeping only the current block's state. (tiled_forward itself is the /flash
  page's float64 toy: it keeps every tile's scores for display, so its memory grows like N².)
* sdpa: torch.nn.functional.scaled_dot_product_attention, the fused kernel torch runs on the CPU.

Each case runs in a fresh interpreter (`--case`): its inputs are made, the peak resident set is reset
(writing 5 to /proc/self/clear_refs) and the current RSS read; then one run, and the peak RSS (VmHWM)
minus that RSS is the case's peak memory: what the computation added to the process at its worst, as
the kernel counts it (torch's CPU allocator has no peak counter; tracemalloc does not see torch's
memory). Time: the best of several further runs (at least 3, more while under a second in all), on
one torch thread (THREADS). The cases run one after another, never two at once.

    python -m bench.flash_sweep --out static/data/flash-sweep.json

writes the table as JSON, read by the /cost page ("measured here"), and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, print_table

D = 64  # the head's width
LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
METHODS = ("naive", "tiled", "sdpa")
BLOCK = 128  # the tiled forward's block of query rows and of keys
NAIVE_MAX_BYTES = 2 * 2**30  # the N × N float32 matrix the naive one may allocate: 2 GiB (N ≤ 23170)
BYTES = 4  # float32
MIN_RUNS, MAX_RUNS, ENOUGH_S = 3, 10, 1.0
CASE_TIMEOUT_S = 900
# One torch thread: the three compared on one core. (With two threads on a busy machine each of the tiled
# loop's small products waits for the other thread, and it ran 30 times slower than with one.)
THREADS = int(os.environ.get("FLASH_SWEEP_THREADS", "1"))


def matrix_bytes(n: int) -> int:
    """The N × N float32 matrix of the scores (the weights are a second one): 4·N² bytes."""
    return BYTES * n * n


def refusal(method: str, n: int) -> str | None:
    """Why the sweep does not run this case, or None when it does: the naive one beyond NAIVE_MAX_BYTES."""
    if method == "naive" and matrix_bytes(n) > NAIVE_MAX_BYTES:
        return (f"refused: its {n} × {n} float32 matrix would take {matrix_bytes(n) / 2**30:g} GiB "
                f"(two of them, scores and weights), over the bound of {NAIVE_MAX_BYTES / 2**30:g} GiB")
    return None


def naive(q, k, v):
    import torch

    scores = (q @ k.T) * (1.0 / math.sqrt(q.shape[1]))  # (N, N)
    weights = torch.softmax(scores, dim=1)  # (N, N)
    return weights @ v


def tiled(q, k, v, block_rows: int = BLOCK, block_cols: int = BLOCK):
    """softmax(q kᵀ/√d) v one block of queries at a time against one block of keys at a time: per query
    block a running row maximum m, sum ℓ = Σ exp(s − m) and unnormalised output o; no N × N matrix."""
    import torch

    n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    out = torch.empty(n, v.shape[1], dtype=q.dtype)
    for r0 in range(0, n, block_rows):
        qb = q[r0:r0 + block_rows] * scale
        rows = qb.shape[0]
        m = torch.full((rows,), float("-inf"), dtype=q.dtype)
        l = torch.zeros(rows, dtype=q.dtype)  # noqa: E741 (the paper's ℓ)
        o = torch.zeros(rows, v.shape[1], dtype=q.dtype)
        for c0 in range(0, k.shape[0], block_cols):
            s = qb @ k[c0:c0 + block_cols].T  # (Br, Bc)
            m_new = torch.maximum(m, s.max(dim=1).values)
            alpha = torch.exp(m - m_new)
            p = torch.exp(s - m_new[:, None])
            l = alpha * l + p.sum(dim=1)  # noqa: E741
            o = alpha[:, None] * o + p @ v[c0:c0 + block_cols]
            m = m_new
        out[r0:r0 + rows] = o / l[:, None]
    return out


def sdpa(q, k, v):
    import torch.nn.functional as F

    return F.scaled_dot_product_attention(q[None, None], k[None, None], v[None, None])[0, 0]


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def measure(method: str, n: int) -> dict:
    """One case, in this process (meant to be a fresh one): peak memory of the first run, best time."""
    import torch

    torch.set_num_threads(THREADS)
    fn = {"naive": naive, "tiled": tiled, "sdpa": sdpa}[method]
    gen = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(n, D, generator=gen, dtype=torch.float32) for _ in range(3))
    with torch.no_grad():
        fn(q[:BLOCK], k[:BLOCK], v[:BLOCK])  # load the kernels before the peak is reset
        Path("/proc/self/clear_refs").write_text("5")  # the peak resident set starts again from here
        base_kb = _status_kb("VmRSS")
        t0 = time.perf_counter()
        out = fn(q, k, v)
        first_s = time.perf_counter() - t0
        peak_kb = _status_kb("VmHWM")
        del out
        times: list[float] = []
        while len(times) < MIN_RUNS or (sum(times) < ENOUGH_S and len(times) < MAX_RUNS):
            t0 = time.perf_counter()
            fn(q, k, v)
            times.append(time.perf_counter() - t0)
    return {"method": method, "n": n, "seconds": min(times), "runs": len(times), "first_run_seconds": first_s,
            "peak_rss_bytes": (peak_kb - base_kb) * 1024}


def check_agreement(n: int = 1000) -> float:
    """The largest difference between the three outputs at N = n (float32): they compute the same thing."""
    import torch

    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(n, D, generator=gen, dtype=torch.float32) for _ in range(3))
    with torch.no_grad():
        ref = naive(q.double(), k.double(), v.double())
        return max(float((fn(q, k, v).double() - ref).abs().max()) for fn in (naive, tiled, sdpa))


def run_case(method: str, n: int) -> dict:
    """The case in a fresh interpreter (its own peak RSS), or its refusal."""
    why = refusal(method, n)
    if why is not None:
        return {"method": method, "n": n, "refused": why}
    out = subprocess.run([sys.executable, "-m", "bench.flash_sweep", "--case", method, str(n)], cwd=ROOT,
                         check=True, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    return json.loads(out.stdout)


def load_note(load: float, cpus: int) -> str | None:
    """What the file says of the conditions: under load when the load average passes half the CPUs."""
    if load > cpus / 2:
        return (f"measured under load: load average {load:.2f} on {cpus} CPUs at the start (other jobs running), "
                "so the times are slower than on an idle machine; the memory does not depend on it")
    return None


def sweep(lengths: list[int] | tuple[int, ...] = LENGTHS) -> list[dict]:
    results = []
    for n in lengths:
        for method in METHODS:
            results.append(run_case(method, n))
            print(f"  N = {n} {method}: {results[-1]}", file=sys.stderr, flush=True)
    return results


def run() -> str:
    """`make bench`'s section: the sweep's table (the committed results file is written only with --out)."""
    return table(sweep())


def machine(note: str | None) -> dict:
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu, "cpu_count": os.cpu_count(), "torch_threads": THREADS, "torch": torch.__version__,
        "python": platform.python_version(), "system": f"{platform.system()} {platform.release()}",
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()], "niceness": os.nice(0),
        "note": note or load_note(os.getloadavg()[0], os.cpu_count() or 1),
    }


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"  # not 1e+03
    return f"{n:.0f} B"


def human_seconds(t: float) -> str:
    return f"{t * 1e6:.3g} µs" if t < 1e-3 else f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


def table(results: list[dict]) -> str:
    rows = []
    for n in sorted({r["n"] for r in results}):
        row: list[object] = [n, human_bytes(matrix_bytes(n))]
        for method in METHODS:
            r = next(r for r in results if r["n"] == n and r["method"] == method)
            row += ([f"refused (matrix over {NAIVE_MAX_BYTES / 2**30:g} GiB)", ""] if "refused" in r else
                    [human_seconds(r["seconds"]), human_bytes(max(r["peak_rss_bytes"], 0))])
        rows.append(row)
    return print_table(
        f"Attention of one head, d = {D}, float32, CPU, torch threads: {THREADS}; best time, peak RSS increase",
        ["N", "N×N matrix", "naive time", "naive memory", "tiled time", "tiled memory", "SDPA time", "SDPA memory"],
        rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--note", default=None, help="a note on the conditions, kept in the file")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--case", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(measure(args.case[0], int(args.case[1]))))
        return
    info = machine(args.note)
    agreement = check_agreement()
    results = sweep(args.lengths)
    text = table(results)
    print(f"largest difference between the three outputs at N = 1000: {agreement:.2e}")
    if args.out:
        info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        body = {
            "what": f"softmax(Q·Kᵀ/√d)·V for one head, d = {D}, float32, on the CPU",
            "command": "python -m bench.flash_sweep --out static/data/flash-sweep.json",
            "machine": info, "d_head": D, "bytes_per_number": BYTES, "block": [BLOCK, BLOCK],
            "naive_max_matrix_bytes": NAIVE_MAX_BYTES,
            "memory": "peak RSS increase (VmHWM after the first run minus VmRSS before it, in a fresh process)",
            "time": f"best of at least {MIN_RUNS} runs after the first",
            "max_abs_difference_at_1000": agreement,
            "lengths": args.lengths, "results": results, "table": text,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
