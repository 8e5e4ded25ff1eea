"""The training labs' API on a real uvicorn server: the induction-head lab's and the encoder-decoder's jobs, their
event streams and predictions against the labs' own reports for the same settings, cancelling, refusals, and the job
limit shared with Iris."""

from __future__ import annotations

import math
import threading

import httpx
import numpy as np
import pytest

from app.jobs import one_intra_op_thread
from bench.common import Server
from model.lab import seq2seq
from model.lab.induction import EvalReport, InductionConfig, Training
from tests.api.test_iris import UNKNOWN, read_events

SMALL = {"vocab": 16, "length": 12, "layers": 2, "heads": 2, "d_model": 16, "steps": 20, "batch": 4, "seed": 3,
         "eval_every": 10}
LONG = {**SMALL, "steps": 20_000}  # runs until cancelled
TRAIN = "/api/v1/labs/induction/train"


@pytest.fixture(scope="module")
def api():
    with Server() as server, httpx.Client(base_url=server.base, trust_env=False, timeout=120) as client:
        yield client


def start(api, settings) -> str:
    r = api.post(TRAIN, json=settings)
    assert r.status_code == 202, r.text
    body = r.json()
    assert body["events"] == f"{TRAIN}/{body['job']}/events"
    return body["job"]


def events(api, job, headers=None, until=None):
    with api.stream("GET", f"{TRAIN}/{job}/events", headers=headers) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        return read_events(r.iter_lines(), until)


def on_a_job_thread(work):
    """work() on a thread with one intra-op thread, as a job runs (the same sums in the same order)."""
    found = []

    def run():
        one_intra_op_thread()
        found.append(work())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(120)
    return found[0]


def test_a_job_streams_what_the_lab_reports_for_the_same_settings(api):
    job = start(api, SMALL)
    stream = events(api, job)
    assert [i for i, _, _ in stream] == [0, 1, 2, 3]
    assert [name for _, name, _ in stream] == ["eval", "eval", "eval", "done"]
    training = Training(InductionConfig(**SMALL))
    reports = [r for r in on_a_job_thread(lambda: list(training.run())) if isinstance(r, EvalReport)]
    for (_, _, sent), report in zip(stream[:-1], reports, strict=True):
        assert sent["step"] == report.step and sent["steps"] == 20 and sent["tokens"] == report.tokens
        assert sent["loss_first_half"] == pytest.approx(report.loss_first_half, rel=1e-6)
        assert sent["loss_repeated_half"] == pytest.approx(report.loss_repeated_half, rel=1e-6)
        np.testing.assert_allclose(sent["previous_token"], report.previous_token.numpy(), rtol=1e-6)
        np.testing.assert_allclose(sent["induction"], report.induction.numpy(), rtol=1e-6)
        maps = np.array(sent["maps"])
        assert maps.shape == (2, 2, 12, 12)
        np.testing.assert_allclose(maps, report.maps.numpy(), atol=0.5e-4 + 1e-7)  # rounded to 4 decimals
        assert np.all(np.triu(maps, k=1) == 0)  # causal: no weight on a later token
        np.testing.assert_allclose(maps.sum(axis=-1), 1.0, atol=12 * 0.5e-4)
    assert stream[0][2]["loss_first_half"] == pytest.approx(math.log(16), abs=0.5)  # untrained: near uniform
    assert stream[-1][2]["steps"] == 20 and stream[-1][2]["seconds"] >= stream[-2][2]["seconds"]

    assert events(api, job) == stream  # a late client gets every event from the start
    assert events(api, job, headers={"Last-Event-ID": "1"}) == stream[2:]
    assert api.get(f"{TRAIN}/{job}/events", headers={"Last-Event-ID": "3"}).status_code == 204


def test_the_same_settings_give_the_same_events(api):
    first, second = (events(api, start(api, {**SMALL, "seed": 11})) for _ in range(2))

    def numbers(stream):
        return [(name, {k: v for k, v in data.items() if k != "seconds"}) for _, name, data in stream]

    assert numbers(first) == numbers(second)


def test_cancel_and_the_job_limit_shared_with_iris(api):
    jobs = [start(api, {**LONG, "seed": s}) for s in (1, 2)]
    try:
        events(api, jobs[0], until=lambda e: e[1] == "eval" and e[2]["step"] >= 10)  # training has begun
        for path, body in ((TRAIN, SMALL), ("/api/v1/iris/train", {"epochs": 1})):
            r = api.post(path, json=body)
            assert r.status_code == 429 and r.json()["errors"][0]["type"] == "jobs_busy"
            assert int(r.headers["Retry-After"]) >= 1
    finally:
        for job in jobs:
            assert api.delete(f"{TRAIN}/{job}").status_code == 204
    for job in jobs:
        stream = events(api, job)
        name, data = stream[-1][1], stream[-1][2]
        assert name == "cancelled" and data["step"] >= stream[-2][2]["step"] and data["step"] < 20_000
    assert api.delete(f"{TRAIN}/{jobs[0]}").status_code == 204  # a finished job: nothing to stop


def test_a_job_of_another_lab_is_unknown_here(api):
    iris = api.post("/api/v1/iris/train", json={"epochs": 1}).json()["job"]
    for method, path in (("GET", f"{TRAIN}/{iris}/events"), ("DELETE", f"{TRAIN}/{iris}"),
                         ("GET", f"{TRAIN}/{UNKNOWN}/events")):
        r = api.request(method, path)
        assert r.status_code == 404, path
        assert r.json()["errors"][0]["type"] == "unknown_job" and f"POST {TRAIN}" in r.json()["detail"]
    assert api.get(f"/api/v1/iris/train/{start(api, SMALL)}/events").status_code == 404


@pytest.mark.parametrize("body, field, words", [
    ({"length": 13}, "length", "even"),
    ({"d_model": 18, "heads": 4}, "d_model", "multiple of heads"),
    ({"vocab": 8, "length": 32}, "length", "different tokens"),
    ({"steps": 0}, "steps", None),
    ({"lr": 0}, "lr", None),
    ({"heads": 9}, "heads", None),
    ({"layers": "2"}, "layers", None),
    ({"epochs": 3}, "epochs", None),
])
def test_bad_settings_are_422_naming_the_field(api, body, field, words):
    r = api.post(TRAIN, json=body)
    assert r.status_code == 422
    error = r.json()["errors"][0]
    assert error["loc"] == ["body", field]
    if words is not None:
        assert error["type"] == "lab_setting" and words in r.json()["detail"]


# ---- the encoder-decoder ----------------------------------------------------------------------------------------

SEQ2SEQ = "/api/v1/labs/seq2seq/train"
TINY = {"task": "reverse", "steps": 20, "batch": 8, "hidden": 8, "eval_every": 10, "seed": 4}


def seq2seq_events(api, job):
    with api.stream("GET", f"{SEQ2SEQ}/{job}/events") as r:
        assert r.status_code == 200
        return read_events(r.iter_lines())


def test_an_encoder_decoder_job_streams_and_predicts_what_the_lab_computes(api):
    r = api.post(SEQ2SEQ, json=TINY)
    assert r.status_code == 202 and r.json()["events"] == f"{SEQ2SEQ}/{r.json()['job']}/events"
    job = r.json()["job"]
    stream = seq2seq_events(api, job)
    assert [name for _, name, _ in stream] == ["eval", "eval", "eval", "done"]
    training = seq2seq.Training(seq2seq.Seq2SeqConfig(**TINY))
    reports = [r for r in on_a_job_thread(lambda: list(training.run())) if isinstance(r, seq2seq.EvalReport)]
    for (_, _, sent), report in zip(stream[:-1], reports, strict=True):
        assert sent["step"] == report.step and sent["accuracy"] == report.accuracy
        assert sent["loss"] == pytest.approx(report.loss, rel=1e-6)
        assert sent["accuracy_by_length"] == {str(n): a for n, a in report.accuracy_by_length.items()}
        assert sent["alignment"]["source"] == report.alignment.source
        assert sent["alignment"]["target"] == report.alignment.target
        weights = np.array(sent["alignment"]["weights"])
        np.testing.assert_allclose(weights, report.alignment.weights.numpy(), atol=0.5e-4 + 1e-7)
        assert sent["alignment_share"] == pytest.approx(report.alignment_share, rel=1e-6)
    assert stream[1][2]["train_loss"] > 0 and stream[0][2]["train_loss"] is None

    r = api.post("/api/v1/labs/seq2seq/predict", json={"job": job, "text": "attention"})
    assert r.status_code == 200, r.text
    answer, expected = r.json(), seq2seq.predict(training, "attention")
    assert answer["step"] == 20 and answer["task"] == "reverse" and answer["attention"] is True
    assert answer["output"] == expected.output and answer["alignment"]["source"] == list("attention")
    weights = np.array(answer["alignment"]["weights"])
    assert weights.shape == (len(expected.output), 9)
    np.testing.assert_allclose(weights, expected.alignment.weights.numpy(), atol=1e-6)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)


def test_without_attention_there_are_no_weights(api):
    job = api.post(SEQ2SEQ, json={**TINY, "attention": False, "steps": 1, "eval_every": 1}).json()["job"]
    stream = seq2seq_events(api, job)
    assert all(data["alignment"]["weights"] is None and data["alignment_share"] is None for _, name, data in stream
               if name == "eval")
    answer = api.post("/api/v1/labs/seq2seq/predict", json={"job": job, "text": "abcd"}).json()
    assert answer["attention"] is False and answer["alignment"]["weights"] is None


@pytest.mark.parametrize("text, words", [("abc", "send 4 to 30"), ("Hello", "outside the reverse task's alphabet")])
def test_a_text_the_task_cannot_read_is_422(api, text, words):
    job = api.post(SEQ2SEQ, json={**TINY, "steps": 1}).json()["job"]
    seq2seq_events(api, job)
    r = api.post("/api/v1/labs/seq2seq/predict", json={"job": job, "text": text})
    assert r.status_code == 422 and words in r.json()["detail"]
    assert r.json()["errors"][0]["type"] == "lab_setting" and r.json()["errors"][0]["loc"] == ["body", "text"]


def test_predict_knows_only_encoder_decoder_jobs(api):
    other = start(api, {**SMALL, "steps": 1})
    for job in (other, UNKNOWN):
        r = api.post("/api/v1/labs/seq2seq/predict", json={"job": job, "text": "abcd"})
        assert r.status_code == 404 and r.json()["errors"][0]["loc"] == ["body", "job"]
    assert api.post(SEQ2SEQ, json={"task": "sort"}).status_code == 422
