"""bench/sequence_sweep.py without timing anything: the skip rule, that a skipped case starts no process, the
crossing points worked out from numbers, and the committed results file (its shape, and that its claims, the
crossings and the conv stack's depths, follow from its own numbers)."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import pytest

from bench import sequence_sweep
from bench.sequence_sweep import KINDS, LENGTHS, MAX_BYTES, PHASES, D, conv_layers, measured_crossing, refusal
from model.lab.sequence import receptive_field

RESULTS = Path(__file__).resolve().parents[2] / "static" / "data" / "sequence-sweep.json"


def test_the_conv_stack_covers_each_length_with_the_fewest_layers():
    for n in LENGTHS:
        layers = conv_layers(n)
        assert receptive_field(3, layers, True) >= n > receptive_field(3, layers - 1, True)
    assert [conv_layers(n) for n in LENGTHS] == [8, 9, 10, 11, 12, 13, 14]


def test_only_attention_is_ever_skipped_and_only_over_the_bound():
    for n in LENGTHS:
        for phase in PHASES:
            assert refusal("rnn", phase, n) is None and refusal("conv", phase, n) is None
    assert refusal("attention", "forward", 16384) is None  # 10·N² = 2.7 GB
    why = refusal("attention", "train", 20000)
    assert why is not None and "over the bound of 4 GB" in why and "5.6 GB" in why


def test_a_skipped_case_starts_no_process(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a skipped case ran")

    monkeypatch.setattr(subprocess, "run", no_process)
    result = sequence_sweep.run_case("attention", "train", 65536)
    why = refusal("attention", "train", 65536)
    assert result == {"kind": "attention", "phase": "train", "n": 65536, "skipped": why}


def _case(kind, phase, n, seconds):
    return {"kind": kind, "phase": phase, "n": n, "seconds": seconds, "peak_rss_bytes": 0}


def test_the_measured_crossing_from_numbers():
    results = [_case("attention", "forward", 100, 1.0), _case("rnn", "forward", 100, 4.0),
               _case("attention", "forward", 400, 8.0), _case("rnn", "forward", 400, 2.0)]
    found = measured_crossing(results, "forward")
    # log ratios −log 4 at N = 100 and +log 4 at 400: halfway in log N, N = 200
    assert found["between"] == [100, 400] and math.isclose(found["n"], 200.0) and found["always"] is None
    assert measured_crossing(results[:2], "forward")["always"] == "attention_faster"
    assert measured_crossing(results, "train") == {"phase": "train", "slower": "attention", "than": "rnn",
                                                   "between": None, "n": None, "always": None}


def test_the_committed_results_file():
    body = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert body["command"] == "python -m bench.sequence_sweep --out static/data/sequence-sweep.json"
    assert body["d"] == D == 64 and body["batch"] == 1 and body["kernel"] == 3 and body["dilated"] is True
    assert body["max_bytes"] == MAX_BYTES
    assert {"cpu", "cpu_count", "torch", "date", "torch_threads"} <= set(body["machine"])
    assert body["machine"]["torch_threads"] == 1
    assert "VmHWM" in body["memory"]
    assert sorted((r["kind"], r["phase"], r["n"]) for r in body["results"]) == sorted(
        (k, p, n) for k in KINDS for p in PHASES for n in body["lengths"])
    assert body["conv_layers"] == {str(n): conv_layers(n) for n in body["lengths"]}
    for r in body["results"]:
        if "skipped" in r:
            assert r["skipped"].startswith("skipped: ")
        else:
            assert refusal(r["kind"], r["phase"], r["n"]) is None
            assert r["seconds"] > 0 and r["runs"] >= sequence_sweep.MIN_RUNS and r["peak_rss_bytes"] >= 0
            assert r["conv_layers"] == (conv_layers(r["n"]) if r["kind"] == "conv" else None)
    assert body["formulas"] == sequence_sweep.FORMULAS
    assert body["formulas"]["rnn"]["time"] == "O(N·d²)" and body["formulas"]["attention"]["time"] == "O(N²·d + N·d²)"
    assert body["formulas"]["conv"]["time"] == "O(N·k·d²·L)"
    # the formulas cross where N²·d = N·d²: N = d
    assert body["formula_crossing"]["n"] == D
    assert all(n * n * D < n * D * D for n in range(1, D)) and all(n * n * D > n * D * D for n in range(D + 1, 4 * D))
    # each measured crossing is what its numbers give, recomputed here
    for phase, claim in zip(PHASES, body["measured_crossings"], strict=True):
        assert claim == measured_crossing(body["results"], phase)
        if claim["n"] is not None:
            n0, n1 = claim["between"]
            t = {(r["kind"], r["n"]): r["seconds"] for r in body["results"] if r["phase"] == phase and "seconds" in r}
            assert t[("attention", n0)] < t[("rnn", n0)] and t[("attention", n1)] >= t[("rnn", n1)]
            assert n0 < claim["n"] <= n1
            earlier = [n for n in body["lengths"] if n < n0 and ("attention", n) in t and ("rnn", n) in t]
            assert all(t[("attention", n)] < t[("rnn", n)] for n in earlier)  # the first crossing


@pytest.mark.parametrize("kind", KINDS)
def test_the_layers_run_on_a_short_sequence(kind):
    layer, x = sequence_sweep._layer_and_input(kind, 256)
    assert x.shape == (1, 256, D)
    sequence_sweep._run(layer, x[:, :32], "train")
    assert all(p.grad is not None for p in layer.parameters())
