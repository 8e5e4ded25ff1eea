"""The glimpse lab over HTTP (/api/v1/labs/glimpse): tiny jobs of each method trained to their end, their events'
shapes against the documented models, every glimpse's weights over the 9 cells (rows summing to 1, one-hot for the
hard methods on the cell the network's own attention ranks first, recomputed here from a run of model/lab/glimpse.py
with the same settings), the same settings giving the same events, refusals naming the field, unknown jobs,
cancelling, and the work bound."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
import torch
from fastapi.testclient import TestClient

from app.jobs.threads import one_intra_op_thread
from app.main import create_app
from app.schemas.glimpse import GlimpseDoneEvent, GlimpseEvalEvent
from model.lab import glimpse
from model.lab.glimpse_data import END, MAX_PIXEL, REGIONS, SIDE

from .conftest import read_lab_events, train_lab

TRAIN = "/api/v1/labs/glimpse/train"
UNKNOWN = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
TINY = {"steps": 4, "batch": 8, "eval_every": 2, "channels": 4, "hidden": 8, "seed": 3}
METHODS = ("soft", "reinforce", "gumbel", "straight_through")


@pytest.fixture(scope="module")
def api():
    with TestClient(create_app(), base_url="http://127.0.0.1") as client:
        yield client


def read_events(api, job: str) -> list[tuple[str, dict]]:
    return read_lab_events(api, TRAIN, job)


def train(api, settings: dict) -> tuple[str, list[tuple[str, dict]]]:
    return train_lab(api, TRAIN, settings)


@pytest.fixture(scope="module")
def runs(api) -> dict[str, list[tuple[str, dict]]]:
    return {method: train(api, {**TINY, "method": method})[1] for method in METHODS}


@pytest.mark.parametrize("method", METHODS)
def test_a_tiny_job_streams_evaluations_with_glimpses_then_done(runs, method):
    events = runs[method]
    assert [name for name, _ in events] == ["eval", "eval", "eval", "done"]
    evals = [GlimpseEvalEvent.model_validate(data) for name, data in events if name == "eval"]
    assert [e.step for e in evals] == [0, 2, 4] and all(e.steps == 4 for e in evals)
    assert evals[0].loss is None and all(e.loss is not None and e.loss > 0 for e in evals[1:])
    assert [e.seconds for e in evals] == sorted(e.seconds for e in evals)
    for e in evals:
        assert 0 <= e.accuracy <= 1 and 0 <= e.digit_accuracy <= 1
        assert 0 <= e.entropy <= math.log(REGIONS) + 1e-6
        assert e.grad_variance >= 0 and e.grad_mean_square >= 0
        assert (e.tau is not None) == (method in ("gumbel", "straight_through"))
        assert len(e.glimpses) == glimpse.WATCHED
        for seen in e.glimpses:
            pixels = np.array(seen.pixels)
            assert pixels.shape == (SIDE, SIDE) and pixels.min() >= 0 and pixels.max() <= MAX_PIXEL
            assert 1 <= len(seen.target) <= 4 and all(0 <= d <= 9 for d in seen.target + seen.output)
            regions = np.array(seen.regions)
            assert regions.shape == (min(len(seen.output) + 1, 5), REGIONS)  # no END: 5 digits, 5 steps
            np.testing.assert_allclose(regions.sum(axis=1), 1.0, atol=REGIONS * 0.5e-4)
            if method != "soft":
                assert set(np.unique(regions)) <= {0.0, 1.0}
                assert (regions == 1).sum(axis=1).tolist() == [1] * len(regions)
    if method == "soft":
        assert all(e.grad_variance < 1e-9 for e in evals)  # nothing is sampled
    done = GlimpseDoneEvent.model_validate(events[-1][1])
    assert set(events[-1][1]) == {"steps", "seconds", "test_accuracy", "digit_accuracy"}
    assert done.steps == 4 and done.seconds >= evals[-1].seconds
    assert 0 <= done.test_accuracy <= 1 and 0 <= done.digit_accuracy <= 1


def test_the_events_are_the_modules_reports_and_a_hard_glimpse_is_the_most_likely_cell(api, runs):
    """The same settings read by model/lab/glimpse.py here give the same numbers; after the last step each hard
    glimpse is the cell that the network's attention distribution ranks first at that step."""
    config = glimpse.GlimpseConfig(**{**TINY, "method": "reinforce"})
    training = glimpse.Training(config)
    reports: list[glimpse.Report] = []

    def run() -> None:  # as a job runs: on a thread of its own with one intra-op thread
        one_intra_op_thread()
        reports.extend(training.run())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    evals = [data for name, data in runs["reinforce"] if name == "eval"]
    assert len(reports) == len(evals) + 1
    for report, data in zip(reports, evals, strict=False):
        assert isinstance(report, glimpse.EvalReport)
        assert (report.step, report.accuracy, report.digit_accuracy) == (data["step"], data["accuracy"],
                                                                          data["digit_accuracy"])
        assert report.grad_variance == pytest.approx(data["grad_variance"], rel=1e-9)
        for watched, seen in zip(report.glimpses, data["glimpses"], strict=True):
            np.testing.assert_allclose(np.round(watched.regions.numpy(), 4), seen["regions"])
            assert watched.output == seen["output"] and watched.target == seen["target"]
    assert isinstance(reports[-1], glimpse.GlimpseDoneReport)
    assert reports[-1].test_accuracy == runs["reinforce"][-1][1]["test_accuracy"]
    last = evals[-1]["glimpses"]
    pixels = torch.tensor(np.array([seen["pixels"] for seen in last]), dtype=torch.float32)
    with torch.no_grad():
        decoded = training.model(pixels, max_steps=5)
    for i, seen in enumerate(last):
        steps = len(seen["regions"])
        assert np.argmax(seen["regions"], axis=1).tolist() == decoded.log_p[i, :steps].argmax(dim=-1).tolist()
        greedy = decoded.logits[i].argmax(dim=-1).tolist()
        assert greedy[: len(seen["output"])] == seen["output"]
        assert steps == 5 or greedy[steps - 1] == END


def test_the_same_settings_give_the_same_events(api, runs):
    _, again = train(api, {**TINY, "method": "gumbel"})
    strip = [(name, {k: v for k, v in data.items() if k != "seconds"}) for name, data in again]
    assert strip == [(name, {k: v for k, v in data.items() if k != "seconds"}) for name, data in runs["gumbel"]]


def test_the_baseline_changes_only_reinforce(api, runs):
    _, without = train(api, {**TINY, "method": "reinforce", "baseline": False})
    with_baseline = [data["grad_variance"] for name, data in runs["reinforce"] if name == "eval"]
    assert [data["grad_variance"] for name, data in without if name == "eval"] != with_baseline


@pytest.mark.parametrize("body, field", [
    ({"method": "hard"}, "method"),
    ({"steps": 0}, "steps"),
    ({"steps": 20_001}, "steps"),
    ({"batch": 0}, "batch"),
    ({"lr": 0}, "lr"),
    ({"hidden": 2}, "hidden"),
    ({"tau_start": 0.01}, "tau_start"),
    ({"entropy_bonus": -0.1}, "entropy_bonus"),
    ({"baseline": "yes"}, "baseline"),
    ({"steps": "40"}, "steps"),
    ({"epochs": 3}, "epochs"),
])
def test_bad_settings_are_422_naming_the_field(api, body, field):
    r = api.post(TRAIN, json=body)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", field]


def test_too_much_work_is_refused_with_the_steps_that_fit(api):
    r = api.post(TRAIN, json={"steps": 20_000, "batch": 256, "channels": 64, "hidden": 256})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert (error["type"], error["loc"]) == ("work_too_large", ["body", "steps"])
    assert 1 <= error["ctx"]["largest"] < 20_000


def test_unknown_jobs_and_other_labs_jobs_are_404(api):
    for method, path in (("GET", f"{TRAIN}/{UNKNOWN}/events"), ("DELETE", f"{TRAIN}/{UNKNOWN}")):
        r = api.request(method, path)
        assert r.status_code == 404 and r.json()["errors"][0]["type"] == "unknown_job"
    other = api.post("/api/v1/labs/seq2seq/train", json={"steps": 1, "hidden": 8}).json()["job"]
    assert api.delete(f"{TRAIN}/{other}").status_code == 404
    read_events_other = api.get(f"/api/v1/labs/seq2seq/train/{other}/events")
    assert read_events_other.status_code == 200


def test_cancel_ends_a_job_with_cancelled(api):
    r = api.post(TRAIN, json={**TINY, "steps": 20_000, "eval_every": 10_000})
    job = r.json()["job"]
    assert api.delete(f"{TRAIN}/{job}").status_code == 204
    events = read_events(api, job)
    assert events[-1][0] == "cancelled" and events[-1][1]["step"] < 20_000
    assert api.delete(f"{TRAIN}/{job}").status_code == 204  # finished: nothing to stop
