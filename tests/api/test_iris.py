"""The Iris transformer's API on a real uvicorn server: training jobs, their event stream, cancelling,
the job limit, predictions with their attention trace, the data set; and the job store in process (two
registries on one directory stand for two worker processes; tests/service/test_workers.py runs real ones)."""

import asyncio
import json
import subprocess
import sys
import threading

import httpx
import numpy as np
import pytest
import torch

from app.errors import JobsBusy, UnknownJob
from app.jobs import JobRegistry, one_intra_op_thread
from app.jobs.labs import IRIS
from bench.common import Server
from model.lab.iris import TrainConfig

UNKNOWN = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def server():
    with Server() as s:
        yield s


@pytest.fixture(scope="module")
def api(server):
    with httpx.Client(base_url=server.base, trust_env=False, timeout=120) as client:
        yield client


def start(api, **settings) -> str:
    r = api.post("/api/v1/iris/train", json=settings)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["events"] == f"/api/v1/iris/train/{body['job']}/events"
    return body["job"]


def read_events(lines, until=None):
    """Server-sent events (lines of the stream) as [(id, name, data)]; stops early once `until(event)` holds."""
    found, block = [], {}
    for line in lines:
        if line == "":
            if "event" in block:
                found.append((int(block["id"]), block["event"], json.loads(block["data"])))
                if until is not None and until(found[-1]):
                    return found
            block = {}
        elif not line.startswith(":"):  # a comment line is a ping
            key, _, value = line.partition(":")
            block[key] = value.removeprefix(" ")
    return found


def events(api, job, headers=None, until=None):
    """Parse the job's event stream into [(id, name, data)]; stop early once `until(event)` holds."""
    with api.stream("GET", f"/api/v1/iris/train/{job}/events", headers=headers) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        return read_events(r.iter_lines(), until)


def test_a_short_job_streams_every_epoch_then_done(api):
    job = start(api, epochs=5, batch=30, seed=1, watch=3)
    stream = events(api, job)
    assert [i for i, _, _ in stream] == list(range(7))
    assert [name for _, name, _ in stream] == ["epoch"] * 6 + ["done"]
    epochs = [data for _, _, data in stream[:-1]]
    assert [e["epoch"] for e in epochs] == [0, 1, 2, 3, 4, 5]
    for e in epochs:
        assert e["epochs"] == 5
        assert 0 <= e["train_accuracy"] <= 1 and 0 <= e["test_accuracy"] <= 1 and e["loss"] > 0
        maps = np.array(e["attention"])
        assert maps.shape == (2, 4, 4)
        np.testing.assert_allclose(maps.sum(axis=-1), 1.0, atol=1e-12)
    seconds = [e["seconds"] for e in epochs]
    assert seconds == sorted(seconds)
    done = stream[-1][2]
    confusion = np.array(done["confusion"])
    assert confusion.shape == (3, 3) and confusion.sum() == 30
    assert confusion.sum(axis=1).tolist() == [10, 10, 10]  # rows are the true class: 10 test flowers each
    assert done["test_accuracy"] == pytest.approx(np.trace(confusion) / 30)
    assert done["test_accuracy"] == epochs[-1]["test_accuracy"] and done["epochs"] == 5

    # a late client gets every event from the start; Last-Event-ID resumes after that event
    assert events(api, job) == stream
    assert events(api, job, headers={"Last-Event-ID": "3"}) == stream[4:]
    r = api.get(f"/api/v1/iris/train/{job}/events", headers={"Last-Event-ID": "6"})
    assert r.status_code == 204  # nothing after the last event of a finished job: EventSource stops


def test_the_same_seed_gives_the_same_numbers(api):
    first, second = (events(api, start(api, epochs=3, seed=42)) for _ in range(2))
    def numbers(stream):
        return [(name, {k: v for k, v in data.items() if k != "seconds"}) for _, name, data in stream]

    assert numbers(first) == numbers(second)


def test_cancel_mid_way(api):
    job = start(api, epochs=2000, batch=1)
    seen = events(api, job, until=lambda e: e[1] == "epoch" and e[2]["epoch"] >= 1)
    assert api.delete(f"/api/v1/iris/train/{job}").status_code == 204
    stream = events(api, job)
    assert stream[: len(seen)] == seen
    name, data = stream[-1][1], stream[-1][2]
    assert name == "cancelled"
    assert 1 <= data["epoch"] < 2000
    assert data["epoch"] == stream[-2][2]["epoch"]  # the last epoch event is the last finished epoch
    assert api.delete(f"/api/v1/iris/train/{job}").status_code == 204  # a finished job: nothing to stop


def test_a_third_job_is_refused_with_retry_after(api):
    jobs = [start(api, epochs=2000, batch=1, seed=s) for s in (1, 2)]
    try:
        r = api.post("/api/v1/iris/train", json={"epochs": 1})
        assert r.status_code == 429
        retry = int(r.headers["Retry-After"])
        assert retry >= 1
        error = r.json()["errors"][0]
        assert error["type"] == "jobs_busy" and error["ctx"] == {"running": 2, "retry_after": retry}
        assert f"retry in about {retry} s" in r.json()["detail"]
    finally:
        for job in jobs:
            api.delete(f"/api/v1/iris/train/{job}")
    for job in jobs:  # both stop; then a new job is accepted again
        assert events(api, job)[-1][1] == "cancelled"
    assert events(api, start(api, epochs=1))[-1][1] == "done"


def test_the_attention_api_answers_while_a_job_trains(api):
    job = start(api, epochs=2000, batch=1)
    events(api, job, until=lambda e: e[1] == "epoch" and e[2]["epoch"] >= 1)  # training has begun
    r = api.post("/api/v1/attention", json={"text": "The cat sat on the mat.", "layers": [0], "heads": [0]})
    assert r.status_code == 200
    predicted = api.post("/api/v1/iris/predict", json={"job": job, "features": [6.3, 2.9, 5.6, 1.8]})
    assert predicted.status_code == 200 and predicted.json()["epoch"] >= 1  # the latest finished epoch
    assert api.delete(f"/api/v1/iris/train/{job}").status_code == 204
    assert events(api, job)[-1][1] == "cancelled"  # it was still training when both answered


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_predict_and_its_trace(api):
    job = start(api, epochs=30)
    assert events(api, job)[-1][1] == "done"
    r = api.post("/api/v1/iris/predict", json={"job": job, "features": [5.1, 3.5, 1.4, 0.2]})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["classes"] == ["setosa", "versicolor", "virginica"]
    assert sum(body["probabilities"]) == pytest.approx(1.0, abs=1e-12)
    assert body["predicted"] == body["classes"][int(np.argmax(body["probabilities"]))]
    assert body["predicted"] == "setosa"  # the data set's first flower
    assert body["epoch"] == 30

    trace = body["trace"]
    assert (trace["d_model"], trace["n_heads"], trace["d_head"], trace["d_keys"], trace["d_values"]) == (8, 2, 4, 4, 4)
    assert trace["scale"] == 0.5
    steps = trace["steps"]
    x = np.array(steps["input"]["q"])  # (4, 8): the tokens after ReLU
    assert x.shape == (4, 8) and (x >= 0).all()
    assert steps["input"]["k"] == steps["input"]["q"] == steps["input"]["v"]
    w = {name: np.array(m) for name, m in trace["weights"].items()}
    b = {name: np.array(v) for name, v in trace["biases"].items()}
    # numpy re-computation of the layer from the trace's own input, weights and biases
    q, k, v = (x @ w[n] + b[n] for n in "qkv")  # (4, 8)
    heads = [slice(0, 4), slice(4, 8)]
    weights = np.stack([softmax(q[:, h] @ k[:, h].T * 0.5) for h in heads])  # (2, 4, 4)
    concat = np.concatenate([weights[i] @ v[:, h] for i, h in enumerate(heads)], axis=1)  # (4, 8)
    out = concat @ w["o"] + b["o"]
    np.testing.assert_allclose(np.array(steps["softmax"]).sum(axis=-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(steps["project"]["q"], q, atol=1e-12)
    np.testing.assert_allclose(steps["softmax"], weights, atol=1e-12)
    np.testing.assert_allclose(steps["concat"], concat, atol=1e-12)
    np.testing.assert_allclose(steps["output"], out, atol=1e-12)


def test_data(api):
    r = api.get("/api/v1/iris/data")
    assert r.status_code == 200
    body = r.json()
    assert body["features"] == ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    assert body["classes"] == ["setosa", "versicolor", "virginica"]
    rows = np.array(body["rows"])
    assert rows.shape == (150, 4) and rows[0].tolist() == [5.1, 3.5, 1.4, 0.2]
    assert len(body["labels"]) == 150 and sorted(set(body["labels"])) == [0, 1, 2]
    assert len(body["train"]) == 120 and len(body["test"]) == 30
    assert sorted(body["train"] + body["test"]) == list(range(150))
    np.testing.assert_allclose(body["mean"], rows[body["train"]].mean(axis=0), rtol=1e-13)
    np.testing.assert_allclose(body["std"], rows[body["train"]].std(axis=0), rtol=1e-13)


@pytest.mark.parametrize("method, path, body, loc", [
    ("GET", f"/api/v1/iris/train/{UNKNOWN}/events", None, ["path", "job"]),
    ("DELETE", f"/api/v1/iris/train/{UNKNOWN}", None, ["path", "job"]),
    ("POST", "/api/v1/iris/predict", {"job": UNKNOWN, "features": [1, 2, 3, 4]}, ["body", "job"]),
])
def test_unknown_jobs_are_404_naming_them(api, method, path, body, loc):
    r = api.request(method, path, json=body)
    assert r.status_code == 404
    answer = r.json()
    assert UNKNOWN in answer["detail"] and "POST /api/v1/iris/train" in answer["detail"]
    assert answer["errors"][0]["type"] == "unknown_job" and answer["errors"][0]["loc"] == loc


@pytest.mark.parametrize("body, loc", [
    ({"epochs": 0}, ["body", "epochs"]),
    ({"epochs": 2001}, ["body", "epochs"]),
    ({"lr": 0}, ["body", "lr"]),
    ({"lr": 1.5}, ["body", "lr"]),
    ({"optimizer": "rmsprop"}, ["body", "optimizer"]),
    ({"batch": 121}, ["body", "batch"]),
    ({"seed": -1}, ["body", "seed"]),
    ({"watch": 30}, ["body", "watch"]),
    ({"epochs": "3"}, ["body", "epochs"]),
    ({"speed": 1}, ["body", "speed"]),
])
def test_bad_settings_are_422_naming_the_field(api, body, loc):
    r = api.post("/api/v1/iris/train", json=body)
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == loc


@pytest.mark.parametrize("features", [[1, 2, 3], [1, 2, 3, 4, 5], [1, 2, 3, -1], [1, 2, 3, 101]])
def test_bad_features_are_422(api, features):
    r = api.post("/api/v1/iris/predict", json={"job": UNKNOWN, "features": features})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][:2] == ["body", "features"]


def test_a_malformed_job_id_is_422(api):
    r = api.get("/api/v1/iris/train/not-a-job/events")
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["path", "job"]


def test_the_openapi_schema_documents_the_iris_operations(api):
    paths = api.get("/openapi.json").json()["paths"]
    train = paths["/api/v1/iris/train"]["post"]
    assert {"202", "422", "429"} <= set(train["responses"])
    assert {"200", "204", "404", "422"} <= set(paths["/api/v1/iris/train/{job}/events"]["get"]["responses"])
    assert {"204", "404"} <= set(paths["/api/v1/iris/train/{job}"]["delete"]["responses"])
    assert {"200", "404", "422"} <= set(paths["/api/v1/iris/predict"]["post"]["responses"])
    examples = train["requestBody"]["content"]["application/json"]["examples"]
    for example in examples.values():  # every documented example starts a job (or meets the job limit)
        r = api.post("/api/v1/iris/train", json=example["value"])
        assert r.status_code in (202, 429)
        if r.status_code == 202:
            api.delete(f"/api/v1/iris/train/{r.json()['job']}")


# ---- the registry in process ------------------------------------------------------------------------------


def wait_finished(job):
    job.thread.join(120)
    assert job.finished


def test_finished_jobs_beyond_the_kept_number_are_dropped_and_named_so():
    jobs = JobRegistry(max_running=2, keep=1)
    try:
        first = jobs.start(IRIS, TrainConfig(epochs=1))
        wait_finished(first)
        assert jobs.get(IRIS, first.id, "path").state() == "done"
        second = jobs.start(IRIS, TrainConfig(epochs=1))
        wait_finished(second)
        with pytest.raises(UnknownJob) as err:
            jobs.get(IRIS, first.id, "body")
        assert err.value.type == "job_evicted" and "train again" in err.value.message
        assert jobs.get(IRIS, second.id, "path").events()[-1][0] == "done"
        with pytest.raises(UnknownJob) as err:
            jobs.get(IRIS, UNKNOWN, "path")
        assert err.value.type == "unknown_job"
    finally:
        jobs.close()


def test_close_cancels_running_jobs_and_removes_a_private_store():
    jobs = JobRegistry()
    job = jobs.start(IRIS, TrainConfig(epochs=2000, batch=1))
    store = jobs.dir
    assert (store / job.id / "events").exists()
    jobs.close()
    assert job.finished and job.state == "cancelled"
    assert not store.exists()


def test_close_leaves_a_shared_store_with_the_cancelled_job(tmp_path):
    jobs = JobRegistry(tmp_path)
    job = jobs.start(IRIS, TrainConfig(epochs=2000, batch=1))
    jobs.close()
    assert job.state == "cancelled"
    assert JobRegistry(tmp_path).get(IRIS, job.id, "path").events()[-1][0] == "cancelled"


def follow_all(files, start=0):
    """Every (id, event) of a job's stream, collected on a thread of its own (it runs an event loop)."""
    async def collect():
        return [item async for item in files.follow(start)]

    found = []
    thread = threading.Thread(target=lambda: found.extend(asyncio.run(collect())))
    thread.start()
    thread.join(120)
    return found


def test_two_registries_on_one_store_share_jobs_and_the_job_limit(tmp_path):
    """Two worker processes' registries, here in one process: what one starts the other reads and cancels."""
    first, second = JobRegistry(tmp_path), JobRegistry(tmp_path)
    try:
        running = [first.start(IRIS, TrainConfig(epochs=2000, batch=1, seed=s)) for s in (1, 2)]
        with pytest.raises(JobsBusy) as busy:
            second.start(IRIS, TrainConfig(epochs=1))
        assert busy.value.running == 2 and busy.value.retry_after >= 1
        seen = second.get(IRIS, running[0].id, "path")
        second.get(IRIS, running[0].id, "path").cancel()
        second.get(IRIS, running[1].id, "path").cancel()
        for job in running:
            wait_finished(job)
        stream = follow_all(seen)
        assert [i for i, _ in stream] == list(range(len(stream)))
        assert stream[-1][1][0] == "cancelled" and {name for _, (name, _) in stream[:-1]} == {"epoch"}
        assert follow_all(seen, start=2) == stream[2:]
        snapshot, trained = second.get(IRIS, running[0].id, "body").snapshot(), running[0].training.latest
        assert snapshot.count == trained.epoch == json.loads(stream[-1][1][1])["epoch"]
        assert snapshot.parameters.keys() == trained.parameters.keys()
        for name, value in trained.parameters.items():  # the training process's own tensors, bit for bit
            assert torch.equal(snapshot.parameters[name], value)
        done = second.start(IRIS, TrainConfig(epochs=2))  # both stopped: a place again, in either registry
        wait_finished(done)
        assert [name for name, _ in first.get(IRIS, done.id, "path").events()] == ["epoch"] * 3 + ["done"]
    finally:
        first.close()
        second.close()


def test_a_job_whose_training_process_died_ends_with_an_error_and_frees_its_place(tmp_path):
    jobs = JobRegistry(tmp_path, max_running=1)
    try:
        job = jobs.start(IRIS, TrainConfig(epochs=1))
        wait_finished(job)
        # make it look like a job still training in a process that has exited since
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True, check=True)
        settings = tmp_path / job.id / "settings.json"
        recorded = json.loads(settings.read_text())
        recorded["process"]["pid"] = int(gone.stdout)
        settings.write_text(json.dumps(recorded))
        events = tmp_path / job.id / "events"
        events.write_bytes(b"".join(events.read_bytes().splitlines(keepends=True)[:-1]))  # no `done`
        files = jobs.get(IRIS, job.id, "path")
        assert files.state() == "running" and files.orphaned()

        stream = follow_all(files)  # a waiting client is told, rather than left waiting
        assert stream[-1][1][0] == "error" and f"pid {int(gone.stdout)}" in json.loads(stream[-1][1][1])["detail"]
        assert jobs.get(IRIS, job.id, "path").state() == "error"
        wait_finished(jobs.start(IRIS, TrainConfig(epochs=1)))  # it no longer holds the only place
    finally:
        jobs.close()


@pytest.fixture
def two_threads():
    """The process at two intra-op threads (the suite runs at one, tests/conftest.py), so that a job thread's
    one can be told from the process's; restored afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(before)


def test_job_threads_leave_the_process_torch_threads_alone(two_threads):
    jobs = JobRegistry()
    wait_finished(jobs.start(IRIS, TrainConfig(epochs=1)))
    seen = []
    fresh = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    fresh.start()
    fresh.join()
    assert torch.get_num_threads() == two_threads and seen == [two_threads]


def test_a_job_thread_runs_torch_with_one_thread(two_threads):
    """What app/jobs/threads.py does first on each job thread: one intra-op thread there, nowhere else."""
    seen = []

    def job_thread():
        seen.append(one_intra_op_thread())
        seen.append(torch.get_num_threads())

    thread = threading.Thread(target=job_thread)
    thread.start()
    thread.join()
    assert seen == [True, 1]
    assert torch.get_num_threads() == two_threads
