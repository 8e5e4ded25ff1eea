"""bench/flash_sweep.py without timing anything: where the naive computation is refused, that a refused case
starts no process, the tiled forward against softmax attention in numpy, and the committed results file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from bench import flash_sweep
from bench.flash_sweep import LENGTHS, METHODS, NAIVE_MAX_BYTES, refusal

RESULTS = Path(__file__).resolve().parents[2] / "static" / "data" / "flash-sweep.json"


def test_the_naive_bound_is_on_its_n_by_n_float32_matrix():
    assert NAIVE_MAX_BYTES == 2 * 2**30
    # 4·N² bytes: N = 23170 is 2,147,395,600 bytes (under 2 GiB = 2,147,483,648), N = 23171 is over
    assert 4 * 23170**2 == 2_147_395_600 <= 2**31 < 4 * 23171**2
    assert refusal("naive", 23170) is None
    why = refusal("naive", 23171)
    assert why is not None and "23171 × 23171 float32 matrix" in why and "over the bound of 2 GiB" in why
    assert refusal("naive", 32768) == ("refused: its 32768 × 32768 float32 matrix would take 4 GiB (two of them, "
                                       "scores and weights), over the bound of 2 GiB")
    # the tiled forward and SDPA keep no N × N matrix: never refused
    for method in ("tiled", "sdpa"):
        assert all(refusal(method, n) is None for n in (*LENGTHS, 10**6))
    assert [n for n in LENGTHS if refusal("naive", n)] == [32768]


def test_a_refused_case_starts_no_process(monkeypatch):
    def no_process(*args, **kwargs):
        raise AssertionError("a refused case ran")

    monkeypatch.setattr(subprocess, "run", no_process)
    result = flash_sweep.run_case("naive", 65536)
    assert result == {"method": "naive", "n": 65536, "refused": refusal("naive", 65536)}
    assert "refused (matrix over 2 GiB)" in flash_sweep.table([
        result, {"method": "tiled", "n": 65536, "seconds": 1.5, "peak_rss_bytes": 3 * 2**20},
        {"method": "sdpa", "n": 65536, "seconds": 0.25, "peak_rss_bytes": 0}])


def softmax_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    s = q @ k.T / np.sqrt(q.shape[1])
    w = np.exp(s - s.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize(("n", "block_rows", "block_cols"), [(300, 128, 128), (64, 16, 48), (7, 128, 128)])
def test_the_three_compute_softmax_attention(n, block_rows, block_cols):
    gen = torch.Generator().manual_seed(n)
    q, k, v = (torch.randn(n, 64, generator=gen, dtype=torch.float32) * 3 for _ in range(3))
    ref = softmax_attention(*(t.double().numpy() for t in (q, k, v)))
    for out in (flash_sweep.tiled(q, k, v, block_rows, block_cols), flash_sweep.naive(q, k, v),
                flash_sweep.sdpa(q, k, v)):
        assert out.shape == (n, 64) and out.dtype == torch.float32
        assert np.abs(out.double().numpy() - ref).max() < 1e-4


def test_the_load_note():
    assert flash_sweep.load_note(0.4, 2) is None
    note = flash_sweep.load_note(4.81, 2)
    assert note is not None and note.startswith("measured under load: load average 4.81 on 2 CPUs")


def test_the_committed_results_file():
    body = json.loads(RESULTS.read_text(encoding="utf-8"))
    assert body["command"] == "python -m bench.flash_sweep --out static/data/flash-sweep.json"
    assert body["naive_max_matrix_bytes"] == NAIVE_MAX_BYTES and body["d_head"] == 64 and body["block"] == [128, 128]
    assert {"cpu", "cpu_count", "torch", "date", "torch_threads", "note"} <= set(body["machine"])
    assert sorted((r["method"], r["n"]) for r in body["results"]) == sorted(
        (m, n) for m in METHODS for n in body["lengths"])
    for r in body["results"]:
        if "refused" in r:
            assert r["refused"] == refusal(r["method"], r["n"])
        else:
            assert refusal(r["method"], r["n"]) is None
            assert r["seconds"] > 0 and r["peak_rss_bytes"] >= 0 and r["runs"] >= flash_sweep.MIN_RUNS
