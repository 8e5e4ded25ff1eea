"""The Informer lab over HTTP (/api/v1/labs/informer): a tiny job trained to its end, its events, its `done` numbers
against the seasonal-naive MSE recomputed here with numpy from statsmodels' series and the split rule of
model/lab/informer_data.py's docstring, a watched test window (rows summing to 1, lengths halving, active queries in
range), the series list, refusals naming the field, and unknown jobs."""

from __future__ import annotations

import csv
import io
import math
from importlib import resources

import numpy as np
import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.routes.informer import ATTENTION_BYTES
from model.lab.informer import EVAL_BATCH

from .conftest import read_lab_events, train_lab

TRAIN = "/api/v1/labs/informer/train"
WATCH = "/api/v1/labs/informer/watch"
UNKNOWN = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
# sunspots: 309 yearly values, so each evaluation and the test are a few dozen windows
TINY = {"series": "sunspots", "window": 22, "horizon": 5, "layers": 2, "heads": 2, "d_model": 8, "factor": 2,
        "steps": 6, "batch": 8, "eval_every": 3, "seed": 5}


@pytest.fixture(scope="module")
def api():
    with TestClient(create_app(), base_url="http://127.0.0.1") as client:
        yield client


def read_events(api, job: str) -> list[tuple[str, dict]]:
    return read_lab_events(api, TRAIN, job)


def train(api, settings: dict) -> tuple[str, list[tuple[str, dict]]]:
    return train_lab(api, TRAIN, settings)


def sunspots() -> np.ndarray:
    """The yearly sunspot numbers as statsmodels ships them (year, value per row)."""
    text = (resources.files("statsmodels") / "datasets" / "sunspots" / "sunspots.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(io.StringIO(text)))[1:]
    return np.array([float(row[1]) for row in rows])


def first_test_position(n: int) -> int:
    return int(n * (0.7 + 0.1))


def naive_mse(values: np.ndarray, window: int, horizon: int, season: int) -> float:
    """The seasonal-naive forecast's MSE on the test windows: the test part is the last 20 %, the values from
    ⌊(0.7 + 0.1)·N⌋ on (after 70 % training and 10 % validation), a test
    window's forecast lies wholly inside it (its history may reach back), one window per start, and each forecast
    point is the value one season before it (horizon ≤ season here)."""
    n = len(values)
    test_start = first_test_position(n)
    errors = []
    for first in range(test_start, n - horizon + 1):  # the forecast's first position
        truth = values[first: first + horizon]
        naive = values[first - season: first - season + horizon]
        errors.append((truth - naive) ** 2)
    return float(np.mean(errors))


def test_a_tiny_job_streams_evaluations_then_consistent_test_numbers(api):
    job, events = train(api, TINY)
    assert [name for name, _ in events] == ["eval", "eval", "eval", "done"]
    evals = [data for name, data in events if name == "eval"]
    assert [e["step"] for e in evals] == [0, 3, 6] and all(e["steps"] == 6 for e in evals)
    assert evals[0]["train_mse"] is None and all(e["train_mse"] > 0 for e in evals[1:])
    assert all(math.isfinite(e["val_mse"]) and e["val_mse"] > 0 for e in evals)
    assert [e["seconds"] for e in evals] == sorted(e["seconds"] for e in evals)
    done = events[-1][1]
    assert set(done) == {"steps", "seconds", "test_mse", "naive_mse", "linear_mse"}
    assert done["steps"] == 6 and done["seconds"] >= evals[-1]["seconds"]
    values = sunspots()
    assert len(values) == 309
    assert done["naive_mse"] == pytest.approx(naive_mse(values, 22, 5, 11), rel=1e-12)
    assert 0 < done["linear_mse"] and 0 < done["test_mse"]
    # the same settings give the same numbers
    _, again = train(api, TINY)
    strip = [(name, {k: v for k, v in data.items() if k != "seconds"}) for name, data in again]
    assert strip == [(name, {k: v for k, v in data.items() if k != "seconds"}) for name, data in events]


def test_a_watched_window_halves_its_length_and_its_rows_sum_to_1(api):
    job, _ = train(api, TINY)
    series = api.get("/api/v1/labs/informer/series", params={"window": 22, "horizon": 5}).json()
    count = {s["name"]: s["test_windows"] for s in series["series"]}["sunspots"]
    assert count == 309 - first_test_position(309) - 5 + 1
    r = api.post(WATCH, json={"job": job, "index": count - 1})
    assert r.status_code == 200, r.text
    a = r.json()
    assert (a["step"], a["series"], a["attention"], a["index"], a["windows"]) == (6, "sunspots", "probsparse",
                                                                                 count - 1, count)
    values = sunspots()
    start = a["start"]
    assert start + 22 + 5 == len(values)  # the last test window ends with the series
    np.testing.assert_allclose(a["history"], values[start: start + 22])
    np.testing.assert_allclose(a["truth"], values[start + 22:])
    np.testing.assert_allclose(a["naive"], values[start + 22 - 11: start + 22 - 11 + 5])
    assert len(a["times"]) == 27 and len(a["forecast"]) == 5
    assert [layer["length"] for layer in a["layers"]] == [22, 11]
    for layer in a["layers"]:
        n = layer["length"]
        weights = np.array(layer["weights"])
        assert weights.shape == (2, n, n)
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=n * 0.5e-4)
        u = min(2 * math.ceil(math.log(n)), n)
        active = np.array(layer["active"])
        assert active.shape == (2, u) and active.min() >= 0 and active.max() < n
        assert all(list(row) == sorted(set(row)) for row in active.tolist())
        lazy = [[i for i in range(n) if i not in row] for row in active.tolist()]
        for head, rows in enumerate(lazy):  # a lazy row is the mean of V: 1/length on every key
            np.testing.assert_allclose(weights[head, rows], 1 / n, atol=0.5e-4)
        assert np.array(layer["measure"]).shape == (2, n)
    assert api.post(WATCH, json={"job": job, "index": count - 1}).json() == a  # the key sample is seeded


def test_full_attention_has_no_active_queries(api):
    job, events = train(api, {**TINY, "attention": "full", "steps": 1, "eval_every": 1})
    assert events[-1][0] == "done"
    a = api.post(WATCH, json={"job": job, "index": 0}).json()
    assert a["attention"] == "full" and a["step"] == 1
    for layer in a["layers"]:
        assert layer["active"] is None and layer["measure"] is None
        np.testing.assert_allclose(np.array(layer["weights"]).sum(axis=-1), 1.0, atol=layer["length"] * 0.5e-4)


def test_the_series_list(api):
    r = api.get("/api/v1/labs/informer/series")
    assert r.status_code == 200
    a = r.json()
    assert (a["window"], a["horizon"]) == (96, 24)
    by_name = {s["name"]: s for s in a["series"]}
    assert set(by_name) == {"co2", "sunspots"}
    assert (by_name["co2"]["season"], by_name["co2"]["values"], by_name["co2"]["step_label"]) == (52, 2284, "week")
    assert by_name["co2"]["test_windows"] == 2284 - first_test_position(2284) - 24 + 1
    assert by_name["sunspots"]["test_windows"] == 309 - first_test_position(309) - 24 + 1
    longer = api.get("/api/v1/labs/informer/series", params={"window": 300}).json()
    assert [s["test_windows"] for s in longer["series"]] == [by_name["co2"]["test_windows"], None]  # 300 > sunspots'
    assert api.get("/api/v1/labs/informer/series", params={"window": 7}).status_code == 422


@pytest.mark.parametrize("body, field, rule", [
    ({"window": 20}, "window", "lab_setting"),  # shorter than CO₂'s season of 52
    ({"series": "sunspots", "window": 250}, "window", "lab_setting"),  # longer than its training part allows
    ({"series": "sunspots", "window": 22, "horizon": 40}, "horizon", "lab_setting"),  # longer than validation
    ({"d_model": 10, "heads": 4}, "d_model", "lab_setting"),
    ({"window": 1024, "attention": "full", "heads": 8}, "window", "lab_setting"),  # attention over 1 GiB
    ({"series": "tides"}, "series", None),
    ({"attention": "sparse"}, "attention", None),
    ({"steps": 0}, "steps", None),
    ({"factor": 0}, "factor", None),
    ({"lr": 0}, "lr", None),
    ({"window": "96"}, "window", None),
    ({"epochs": 3}, "epochs", None),
])
def test_bad_settings_are_422_naming_the_field(api, body, field, rule):
    r = api.post(TRAIN, json=body)
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["loc"] == ["body", field]
    if rule is not None:
        assert error["type"] == rule and set(error["ctx"]) == {"min", "max"}


def test_the_memory_bound_names_the_longest_window_that_fits(api):
    error = api.post(TRAIN, json={"window": 1024, "attention": "full", "heads": 8}).json()["errors"][0]
    longest = error["ctx"]["max"]
    assert 4 * EVAL_BATCH * 8 * longest**2 <= ATTENTION_BYTES < 4 * EVAL_BATCH * 8 * (longest + 1) ** 2


def test_unknown_jobs_and_windows(api):
    for method, path in (("GET", f"{TRAIN}/{UNKNOWN}/events"), ("DELETE", f"{TRAIN}/{UNKNOWN}")):
        r = api.request(method, path)
        assert r.status_code == 404 and r.json()["errors"][0]["type"] == "unknown_job"
    r = api.post(WATCH, json={"job": UNKNOWN, "index": 0})
    assert r.status_code == 404 and r.json()["errors"][0]["loc"] == ["body", "job"]
    job, _ = train(api, {**TINY, "steps": 1, "eval_every": 1})
    windows = api.post(WATCH, json={"job": job, "index": 0}).json()["windows"]
    r = api.post(WATCH, json={"job": job, "index": windows})
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert (error["type"], error["loc"], error["ctx"]) == ("lab_setting", ["body", "index"],
                                                          {"min": 0, "max": windows - 1})
    # a job of another lab is unknown here
    other = api.post("/api/v1/labs/seq2seq/train", json={"steps": 1, "hidden": 8}).json()["job"]
    assert api.post(WATCH, json={"job": other, "index": 0}).status_code == 404
    assert api.delete(f"{TRAIN}/{other}").status_code == 404


def test_cancel_ends_a_job_with_cancelled(api):
    r = api.post(TRAIN, json={**TINY, "steps": 20_000, "eval_every": 1000})
    job = r.json()["job"]
    assert api.delete(f"{TRAIN}/{job}").status_code == 204
    events = read_events(api, job)
    assert events[-1][0] == "cancelled" and events[-1][1]["step"] < 20_000
    assert api.delete(f"{TRAIN}/{job}").status_code == 204  # finished: nothing to stop
