"""A golden set of API answers: what the API says today for a fixed list of requests, kept to prove
that a change meant to move code around changes no number.

`python -m tests.golden DIR` records the answers of the models served from the test checkpoints in DIR
(made with tests/checkpoints.py when DIR is empty) into tests/golden/answers.json.gz;
tests/api/test_golden.py replays every request and compares. Numbers must agree to GOLDEN_TOLERANCE
relative to the largest magnitude of their list; everything else is compared exactly. The tolerance is the
accuracy attnscope promises against its references (1e-5): CPUs of different vector widths sum float32
products in different orders, which moved MiniLM's maps by up to 2.1e-6 of their largest weight between two
machines (answers recorded on one, replayed on the other), while a change of code that changes answers moves
them by far more. Re-record only for a change that is meant to change answers, and
say which in the commit.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Any

ANSWERS = Path(__file__).with_name("answers.json.gz")
GOLDEN_TOLERANCE = 1e-5

TEXTS = ("The cat sat on the mat because it was warm.", "注意力让模型看向最相关的词。")
LOCAL = ("tiny-bert", "tiny-roberta", "tiny-distilbert", "tiny-electra", "tiny-gpt2")
VARIANTS = ("scaled_dot", "dot", "additive", "hard", "sample", "gumbel")
TOY_POSITIONS = ("sinusoidal", "rope", "alibi")
EDIT = {"layer": 0, "heads": [0], "hidden_keys": [1], "temperature": 2.0}


def requests() -> list[tuple[str, str, str, dict[str, Any]]]:
    """(name, method, path, body or query) for every answer of the set."""
    out: list[tuple[str, str, str, dict[str, Any]]] = []
    for model in ("minilm", *LOCAL):
        for i, text in enumerate(TEXTS):
            out.append((f"attention {model} {i}", "POST", "/api/v1/attention", {"text": text, "model": model}))
        text = TEXTS[0]
        out += [
            (f"trace {model}", "POST", "/api/v1/trace", {"text": text, "model": model, "layer": 1, "head": 1}),
            (f"summary {model}", "POST", "/api/v1/attention/summary", {"text": text, "model": model, "size": 4}),
            (f"metrics {model}", "POST", "/api/v1/metrics", {"text": text, "model": model}),
            (f"mean {model}", "POST", "/api/v1/aggregate", {"text": text, "model": model, "kind": "mean"}),
            (f"rollout {model}", "POST", "/api/v1/aggregate", {"text": text, "model": model, "kind": "rollout"}),
            (f"contributions {model}", "POST", "/api/v1/contributions", {"text": text, "model": model}),
            (f"edit {model}", "POST", "/api/v1/attention", {"text": text, "model": model, "edit": EDIT}),
            (f"positions {model}", "GET", "/api/v1/positions", {"kind": "learned", "model": model, "length": 8}),
            (f"cost {model}", "GET", "/api/v1/cost", {"model": model, "seq_len": 32}),
        ]
    out.append(("pair minilm", "POST", "/api/v1/attention", {"text": TEXTS[0], "text_pair": "It went home."}))
    out.append(("lens tiny-gpt2", "POST", "/api/v1/lens", {"text": TEXTS[0], "model": "tiny-gpt2", "top_k": 5}))
    for variant in VARIANTS:
        toy = {"variant": variant, "temperature": 0.5, "causal": variant == "dot"}
        out.append((f"toy {variant}", "POST", "/api/v1/toy", toy))
        out.append((f"toy backward {variant}", "POST", "/api/v1/toy/backward", toy))
    for kind in TOY_POSITIONS:
        out.append((f"toy {kind}", "POST", "/api/v1/toy", {"positions": kind}))
        out.append((f"toy backward {kind}", "POST", "/api/v1/toy/backward", {"positions": kind, "hidden_keys": [0]}))
    out.append(("toy straight-through", "POST", "/api/v1/toy/backward",
                {"variant": "gumbel", "straight_through": True, "seed": 3}))
    for kind in ("sinusoidal", "rope", "alibi"):
        out.append((f"positions {kind}", "GET", "/api/v1/positions", {"kind": kind, "length": 12, "d_model": 16}))
    out.append(("cost", "GET", "/api/v1/cost", {"d_model": 1024, "n_heads": 64, "seq_len": 100000, "bytes": 2}))
    return out


def ask(client: Any, method: str, path: str, body: dict[str, Any]) -> Any:
    r = client.post(path, json=body) if method == "POST" else client.get(path, params=body)
    assert r.status_code == 200, f"{method} {path} {body}: {r.status_code} {r.text[:300]}"
    return r.json()


def load() -> dict[str, Any]:
    with gzip.open(ANSWERS, "rt", encoding="utf-8") as f:
        answers: dict[str, Any] = json.load(f)
    return answers


def differences(want: Any, got: Any, where: str = "", scale: float | None = None) -> list[str]:
    """Where `got` differs from `want`: exactly for everything but floats, which may differ by
    GOLDEN_TOLERANCE times the largest magnitude of the list they sit in (1 for a lone number)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(want) != set(got):
            return [f"{where}: keys {sorted(want) if isinstance(want, dict) else want} != "
                    f"{sorted(got) if isinstance(got, dict) else got}"]
        return [d for k in want for d in differences(want[k], got[k], f"{where}.{k}")]
    if isinstance(want, list):
        if not isinstance(got, list) or len(want) != len(got):
            return [f"{where}: length {len(want)} != {len(got) if isinstance(got, list) else got!r}"]
        size = max((abs(x) for x in _numbers(want)), default=1.0)
        return [d for i, (w, g) in enumerate(zip(want, got, strict=True))
                for d in differences(w, g, f"{where}[{i}]", max(size, 1e-300) if scale is None else scale)]
    if isinstance(want, float) and isinstance(got, int | float) and not isinstance(got, bool):
        if math.isfinite(want) and abs(want - got) <= GOLDEN_TOLERANCE * max(scale or 1.0, abs(want)):
            return []
        return [] if want == got else [f"{where}: {want!r} != {got!r}"]
    return [] if want == got and type(want) is type(got) else [f"{where}: {want!r} != {got!r}"]


def _numbers(value: Any) -> list[float]:
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return [float(value)] if isinstance(value, int | float) and not isinstance(value, bool) else []
