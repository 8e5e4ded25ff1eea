"""`attnscope serve --workers 2`: two worker processes behind one port, and the Iris training jobs, the one
state kept across requests, work whichever worker answers each request.

Every request here goes to a chosen worker: new connections are opened until /healthz's Attnscope-Worker
header names it, and the request goes over that same connection (bench/workers.py `connect`, which checks
the connection's local port on every answer)."""

import json
from pathlib import Path

import pytest

from bench.workers import WorkersServer, connect, parent

from ..api.test_iris import read_events

UNKNOWN = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def server():
    with WorkersServer(2, ATTNSCOPE_TORCH_THREADS="1") as s:  # 2 cores, 2 workers: one torch thread each
        yield s


@pytest.fixture(scope="module")
def workers(server):
    """The two worker processes' pids: the one that will start the jobs, and the other."""
    return server.pids


def jobs_dir(pid: int) -> Path:
    """The store the server made for its workers (from the worker's environment)."""
    env = dict(item.split("=", 1) for item in Path(f"/proc/{pid}/environ").read_text().split("\0") if "=" in item)
    return Path(env["ATTNSCOPE_JOBS_DIR"])


def start(server, pid, **settings) -> str:
    with connect(server.base, pid) as worker:
        r = worker.request("POST", "/api/v1/iris/train", json=settings)
    assert r.status_code == 202, r.text
    return r.json()["job"]


def events(server, pid, job, headers=None, until=None):
    """The job's event stream as worker `pid` sends it: [(id, name, data)]; stops early once `until(event)`."""
    with connect(server.base, pid) as worker:
        with worker.client.stream("GET", f"/api/v1/iris/train/{job}/events", headers=headers) as r:
            worker.check(r)
            assert r.status_code == 200
            return read_events(r.iter_lines(), until)


def call(server, pid, method, path, **kwargs):
    with connect(server.base, pid) as worker:
        return worker.request(method, path, **kwargs)


def test_two_worker_processes_answer_each_with_its_own_models(server, workers):
    assert len(workers) == 2 and workers[0] != workers[1]
    for pid in workers:
        assert parent(pid) == server.proc.pid  # uvicorn's worker processes, under the server's process
        models = call(server, pid, "GET", "/api/v1/models")
        assert models.status_code == 200 and "minilm" in [m["id"] for m in models.json()["models"]]
        r = call(server, pid, "POST", "/api/v1/attention", json={"text": "The cat sat.", "layers": [0], "heads": [0]})
        assert r.status_code == 200
    assert jobs_dir(workers[0]) == jobs_dir(workers[1])  # the one thing they share: the Iris jobs


def test_a_job_started_on_one_worker_streams_and_is_cancelled_through_the_other(server, workers):
    owner, other = workers
    job = start(server, owner, epochs=2000, batch=1)
    settings = json.loads((jobs_dir(owner) / job / "settings.json").read_text())
    assert settings["process"]["pid"] == owner  # it trains in the worker that accepted it

    seen = events(server, other, job, until=lambda e: e[1] == "epoch" and e[2]["epoch"] >= 1)
    predicted = call(server, other, "POST", "/api/v1/iris/predict", json={"job": job, "features": [6.3, 2.9, 5.6, 1.8]})
    assert predicted.status_code == 200 and predicted.json()["epoch"] >= 1  # the owner's parameters, while it trains
    assert call(server, other, "DELETE", f"/api/v1/iris/train/{job}").status_code == 204

    from_other = events(server, other, job)
    assert from_other[: len(seen)] == seen
    assert [i for i, _, _ in from_other] == list(range(len(from_other)))
    assert from_other[-1][1] == "cancelled" and 1 <= from_other[-1][2]["epoch"] < 2000
    assert {name for _, name, _ in from_other[:-1]} == {"epoch"}
    assert events(server, owner, job) == from_other


def test_a_finished_job_replays_from_either_worker(server, workers):
    owner, other = workers[1], workers[0]
    job = start(server, owner, epochs=5, batch=30, seed=1, watch=3)
    live = events(server, other, job)  # followed live, through the worker that does not train it
    assert [name for _, name, _ in live] == ["epoch"] * 6 + ["done"]
    for pid in (owner, other):
        assert events(server, pid, job) == live
        assert events(server, pid, job, headers={"Last-Event-ID": "3"}) == live[4:]
        r = call(server, pid, "GET", f"/api/v1/iris/train/{job}/events", headers={"Last-Event-ID": "6"})
        assert r.status_code == 204
    answers = [call(server, pid, "POST", "/api/v1/iris/predict", json={"job": job, "features": [5.1, 3.5, 1.4, 0.2]})
               for pid in (owner, other)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json() == answers[1].json() and answers[0].json()["epoch"] == 5


def test_the_job_limit_counts_the_jobs_of_both_workers(server, workers):
    first, second = workers
    running = [start(server, first, epochs=2000, batch=1, seed=s) for s in (1, 2)]
    try:
        r = call(server, second, "POST", "/api/v1/iris/train", json={"epochs": 1})
        assert r.status_code == 429
        assert r.json()["errors"][0]["ctx"]["running"] == 2 and int(r.headers["Retry-After"]) >= 1
    finally:
        for job in running:
            call(server, second, "DELETE", f"/api/v1/iris/train/{job}")
    for job in running:
        assert events(server, second, job)[-1][1] == "cancelled"
    assert events(server, first, start(server, second, epochs=1))[-1][1] == "done"


@pytest.mark.parametrize("method, path, body", [
    ("GET", f"/api/v1/iris/train/{UNKNOWN}/events", None),
    ("DELETE", f"/api/v1/iris/train/{UNKNOWN}", None),
    ("POST", "/api/v1/iris/predict", {"job": UNKNOWN, "features": [1, 2, 3, 4]}),
])
def test_unknown_jobs_are_404_on_every_worker(server, workers, method, path, body):
    for pid in workers:
        r = call(server, pid, method, path, json=body)
        assert r.status_code == 404 and r.json()["errors"][0]["type"] == "unknown_job"
