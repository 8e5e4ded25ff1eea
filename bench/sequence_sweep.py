"""An RNN, a convolution stack and self-attention measured on this machine: d = 64, batch 1, float32, on the
CPU, one torch thread, N = 256 … 16384 positions.

The three layers are model/lab/sequence.py's (the /sequence page's):

* rnn: torch.nn.GRU, d → d. Its N steps run one after another (h_t needs h_{t−1}).
* conv: CONV_KERNEL-wide causal convolutions d → d with dilation 2^l in layer l, as many layers as cover the
  whole sequence (the fewest L with receptive field 1 + (k − 1)(2^L − 1) ≥ N: 8 layers at N = 256, 14 at
  16384), tanh between layers. Each layer runs all N positions at once.
* attention: one head of causal self-attention written with matmuls (it holds the N × N scores and weights).

Two phases per layer and N: `forward` (under torch.no_grad) and `train`, one training step: the forward, the
loss mean(y²) and the backward to every parameter (no optimiser update).

Each case runs in a fresh interpreter (`--case`): the layer and input are made and a small warm-up run loads the
kernels; the peak resident set is reset (writing 5 to /proc/self/clear_refs) and the current RSS read; then one
run, and the peak RSS (VmHWM) minus that RSS is the case's peak memory: what the computation added to the
process at its worst, as the kernel counts it (torch's CPU allocator has no peak counter; tracemalloc does not
see torch's memory). Time: the best of several further runs (at least MIN_RUNS, more while under ENOUGH_S in
all). A case whose estimated memory passes MAX_BYTES is skipped, its reason in the file; so is a case that runs
past CASE_TIMEOUT_S.

    python -m bench.sequence_sweep --out static/data/sequence-sweep.json

writes the table as JSON, read by the /sequence page ("measured here"), and prints it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.common import ROOT, print_table
from bench.flash_sweep import _status_kb, human_bytes, human_seconds, machine

D = 64
LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384)
KINDS = ("rnn", "conv", "attention")
PHASES = ("forward", "train")
CONV_KERNEL = 3
BYTES = 4  # float32
MAX_BYTES = 4 * 10**9  # a case estimated to need more is skipped
MIN_RUNS, MAX_RUNS, ENOUGH_S = 3, 10, 2.0
CASE_TIMEOUT_S = 180  # a case past this (about 60 s a run) is recorded as skipped
THREADS = 1  # one thread: the RNN's sequential loop and attention's matrix products on the same single core

# The formula of each curve: what the work grows like (and what must run one after another).
FORMULAS = {
    "rnn": {"time": "O(N·d²)", "sequential": "N", "memory": "O(N·d)",
            "note": "N sequential steps, each a d × 3d product per input and per state"},
    "conv": {"time": "O(N·k·d²·L)", "sequential": "L", "memory": "O(N·d·L)",
             "note": "L layers, each all N positions at once"},
    "attention": {"time": "O(N²·d + N·d²)", "sequential": "1", "memory": "O(N²)",
                  "note": "the N × N scores and weights; every position at once"},
}


def conv_layers(n: int) -> int:
    """The dilated stack's depth at N: the fewest layers whose receptive field holds all N positions."""
    from model.lab.sequence import layers_to_cover

    return layers_to_cover(n, CONV_KERNEL, True)


def estimated_bytes(kind: str, phase: str, n: int) -> int:
    """An estimate of the case's peak, to skip what would pass MAX_BYTES before running it. Attention holds
    N × N matrices: 10·N² bytes in the forward, 14·N² in a training step (measured here: 9.1·N² and 13.2·N² at
    N = 8192 and 16384; the float32 scores, masked scores and weights are 4·N² bytes each, the boolean masks
    N²); the others hold O(N·d)."""
    if kind == "attention":
        return 10 * n * n if phase == "forward" else 14 * n * n
    layers = conv_layers(n) if kind == "conv" else 4
    return 8 * BYTES * n * D * layers * (3 if phase == "train" else 1)


def refusal(kind: str, phase: str, n: int) -> str | None:
    need = estimated_bytes(kind, phase, n)
    if need > MAX_BYTES:
        return (f"skipped: estimated {need / 1e9:.1f} GB (the N × N matrices it holds at N = {n}), over the bound "
                f"of {MAX_BYTES / 1e9:g} GB")
    return None


def _layer_and_input(kind: str, n: int):
    import torch

    from model.lab.sequence import make_layers

    torch.manual_seed(0)
    layer = make_layers(D, CONV_KERNEL, True, conv_layers(n), seed=n)[kind]
    gen = torch.Generator().manual_seed(n)
    x = torch.randn(1, n, D, generator=gen)  # (B, T, D)
    return layer, x


def _run(layer, x, phase: str) -> None:
    import torch

    if phase == "forward":
        with torch.no_grad():
            layer(x)
        return
    layer.zero_grad(set_to_none=True)
    loss = layer(x).square().mean()
    loss.backward()


def measure(kind: str, phase: str, n: int) -> dict:
    """One case, in this process (meant to be a fresh one): peak memory of the first run, best time."""
    import torch

    torch.set_num_threads(THREADS)
    layer, x = _layer_and_input(kind, n)
    _run(layer, x[:, :64], phase)  # load the kernels before the peak is reset
    layer.zero_grad(set_to_none=True)
    Path("/proc/self/clear_refs").write_text("5")  # the peak resident set starts again from here
    base_kb = _status_kb("VmRSS")
    t0 = time.perf_counter()
    _run(layer, x, phase)
    first_s = time.perf_counter() - t0
    peak_kb = _status_kb("VmHWM")
    times: list[float] = []
    while len(times) < MIN_RUNS or (sum(times) < ENOUGH_S and len(times) < MAX_RUNS):
        t0 = time.perf_counter()
        _run(layer, x, phase)
        times.append(time.perf_counter() - t0)
    return {"kind": kind, "phase": phase, "n": n, "seconds": min(times), "runs": len(times),
            "first_run_seconds": first_s, "peak_rss_bytes": (peak_kb - base_kb) * 1024,
            "conv_layers": conv_layers(n) if kind == "conv" else None}


def run_case(kind: str, phase: str, n: int) -> dict:
    """The case in a fresh interpreter (its own peak RSS), or why it was skipped."""
    why = refusal(kind, phase, n)
    if why is not None:
        return {"kind": kind, "phase": phase, "n": n, "skipped": why}
    try:
        out = subprocess.run([sys.executable, "-m", "bench.sequence_sweep", "--case", kind, phase, str(n)], cwd=ROOT,
                             check=True, capture_output=True, text=True, timeout=CASE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"kind": kind, "phase": phase, "n": n,
                "skipped": f"skipped: still running after {CASE_TIMEOUT_S} s (over about 60 s a run)"}
    return json.loads(out.stdout)


def sweep(lengths: list[int] | tuple[int, ...] = LENGTHS) -> list[dict]:
    results = []
    for n in lengths:
        for phase in PHASES:
            for kind in KINDS:
                results.append(run_case(kind, phase, n))
                print(f"  N = {n} {kind} {phase}: {results[-1]}", file=sys.stderr, flush=True)
    return results


def _time(results: list[dict], kind: str, phase: str, n: int) -> float | None:
    found = [r for r in results if r["kind"] == kind and r["phase"] == phase and r["n"] == n and "seconds" in r]
    return found[0]["seconds"] if found else None


def measured_crossing(results: list[dict], phase: str, slower: str = "attention", than: str = "rnn") -> dict:
    """Where `slower`'s measured time first passes `than`'s as N grows: the two lengths around the first sign
    change of t_slower − t_than, and N there by linear interpolation of log t against log N (None when the
    sign never changes: `always` then says which was faster at every N measured)."""
    lengths = sorted({r["n"] for r in results})
    pairs = [(n, _time(results, slower, phase, n), _time(results, than, phase, n)) for n in lengths]
    both = [(n, a, b) for n, a, b in pairs if a is not None and b is not None]
    for (n0, a0, b0), (n1, a1, b1) in zip(both, both[1:], strict=False):
        if a0 < b0 and a1 >= b1:
            g0, g1 = math.log(a0 / b0), math.log(a1 / b1)  # log ratios, g0 < 0 ≤ g1
            at = math.exp(math.log(n0) + (math.log(n1) - math.log(n0)) * (-g0) / (g1 - g0))
            return {"phase": phase, "slower": slower, "than": than, "between": [n0, n1], "n": at,
                    "always": None}
    if not both:
        always = None
    elif all(a < b for _, a, b in both):
        always = f"{slower}_faster"
    elif all(a >= b for _, a, b in both):
        always = f"{than}_faster"
    else:
        always = "mixed"
    return {"phase": phase, "slower": slower, "than": than, "between": None, "n": None, "always": always}


def formula_crossing(d: int = D) -> dict:
    """Where attention's N²·d multiply-adds pass the RNN's N·d²: N²·d = N·d² at N = d."""
    return {"attention": "N²·d", "rnn": "N·d²", "n": d,
            "says": f"below N = d = {d} attention's N²·d is smaller, above it the RNN's N·d² is"}


def table(results: list[dict]) -> str:
    rows = []
    for n in sorted({r["n"] for r in results}):
        row: list[object] = [n, conv_layers(n)]
        for phase in PHASES:
            for kind in KINDS:
                r = next(r for r in results if r["n"] == n and r["kind"] == kind and r["phase"] == phase)
                row.append("skipped" if "skipped" in r else
                           f"{human_seconds(r['seconds'])} / {human_bytes(max(r['peak_rss_bytes'], 0))}")
        rows.append(row)
    return print_table(
        f"GRU, dilated conv stack (k = {CONV_KERNEL}) and causal self-attention, d = {D}, batch 1, float32, CPU, "
        f"torch threads: {THREADS}; best time / peak RSS increase",
        ["N", "conv layers", *[f"{kind} {phase}" for phase in PHASES for kind in KINDS]], rows)


def run() -> str:
    """`make bench`'s section: the sweep's table (the committed results file is written only with --out)."""
    return table(sweep())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--note", default=None, help="a note on the conditions, kept in the file")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS))
    parser.add_argument("--case", nargs=3, metavar=("KIND", "PHASE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.case:
        print(json.dumps(measure(args.case[0], args.case[1], int(args.case[2]))))
        return
    info = {**machine(args.note), "torch_threads": THREADS}
    results = sweep(args.lengths)
    text = table(results)
    crossings = [measured_crossing(results, phase) for phase in PHASES]
    print(f"formulas cross at N = d = {D}; measured: {crossings}")
    if args.out:
        info["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        body = {
            "what": f"a GRU, a dilated causal convolution stack (kernel {CONV_KERNEL}) and one head of causal "
                    f"self-attention, d = {D}, batch 1, float32, on the CPU",
            "command": "python -m bench.sequence_sweep --out static/data/sequence-sweep.json",
            "machine": info, "d": D, "batch": 1, "kernel": CONV_KERNEL, "dilated": True,
            "conv_layers": {str(n): conv_layers(n) for n in args.lengths},
            "conv_layers_rule": f"the fewest L with 1 + (k − 1)(2^L − 1) ≥ N (k = {CONV_KERNEL}, dilation 2^l in "
                                "layer l): the whole sequence in the last position's receptive field",
            "phases": {"forward": "the layer's forward under torch.no_grad",
                       "train": "one training step: forward, loss mean(y²), backward to every parameter (no "
                                "optimiser update)"},
            "memory": "peak RSS increase: VmHWM after the first run minus VmRSS before it, in a fresh process "
                      "(torch's CPU allocator has no peak counter; tracemalloc does not see torch)",
            "time": f"best of at least {MIN_RUNS} runs after the first",
            "max_bytes": MAX_BYTES,
            "formulas": FORMULAS,
            "formula_crossing": formula_crossing(),
            "measured_crossings": crossings,
            "lengths": args.lengths, "results": results, "table": text,
        }
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
