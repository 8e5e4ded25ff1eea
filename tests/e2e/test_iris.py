"""The Iris page (/iris) in real Chromium against a real server: what the page draws while a model
trains is compared with the same job's event stream, read here with httpx (the server keeps a
job's events, so a client that connects late gets all of them), and with POST /api/v1/iris/predict."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until

TRAINING = 120_000  # ms a short training may take on a slow machine (a wait, never an assertion)
TERMINAL = {"done", "cancelled", "error"}


def read_events(api, job: str) -> list[tuple[str, dict]]:
    """Every event of a job's stream, from the first epoch to done, cancelled or error."""
    events: list[tuple[str, dict]] = []
    name, data = "message", []
    with api.stream("GET", f"/api/v1/iris/train/{job}/events", timeout=TRAINING / 1000) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line[len("event:"):].strip()
            elif line.startswith("data:"):
                data.append(line[len("data:"):].removeprefix(" "))
            elif line == "" and data:
                events.append((name, json.loads("\n".join(data))))
                if name in TERMINAL:
                    break
                name, data = "message", []
    return events


def epochs_of(events) -> list[dict]:
    return [body for name, body in events if name == "epoch"]


def plot(page: Page, element: str, field: str, trace: int = 0):
    return page.evaluate("([id, field, i]) => document.getElementById(id).data[i][field]", [element, field, trace])


def open_iris(page: Page, query: str = "") -> None:
    page.goto(f"/iris{query}")
    expect(page.locator("#iris-watch option")).to_have_count(30)
    expect(page.locator("#plot-loss .main-svg").first).to_be_attached()


def train(page: Page, phase: str = "done") -> str:
    """Press Train, wait until the run reaches `phase`; returns the job id the page follows."""
    page.locator("#iris-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", phase, timeout=TRAINING)
    job = page.locator("#results").get_attribute("data-job")
    assert job
    return job


def test_a_training_is_drawn_event_by_event(page: Page, api):
    data = api.get("/api/v1/iris/data").json()
    open_iris(page, "?epochs=20&watch=3")
    expect(page.locator("#iris-epochs")).to_have_value("20")
    expect(page.locator("#iris-watch")).to_have_value("3")
    expect(page.locator("#iris-stop")).to_be_disabled()

    job = train(page)
    expect(page).to_have_url(re.compile(rf"/iris\?epochs=20&watch=3&job={job}$"))
    events = read_events(api, job)
    epochs = epochs_of(events)
    assert [e["epoch"] for e in epochs] == list(range(21))  # 0 = untrained, then every epoch
    name, done = events[-1]
    assert name == "done"

    # The curves hold exactly the stream's numbers, one point per epoch.
    assert plot(page, "plot-loss", "x") == list(range(21))
    assert plot(page, "plot-loss", "y") == [e["loss"] for e in epochs]
    assert plot(page, "plot-accuracy", "y", 0) == [e["train_accuracy"] for e in epochs]
    assert plot(page, "plot-accuracy", "y", 1) == [e["test_accuracy"] for e in epochs]
    assert len(plot(page, "plot-accuracy", "x", 1)) == 21

    # The maps are the watched flower's at the last epoch, one per head, labelled with the features.
    for h in range(2):
        assert plot(page, f"plot-head-{h}", "z") == epochs[-1]["attention"][h]
    ticks = page.evaluate("() => document.getElementById('plot-head-0').layout.xaxis.ticktext")
    assert ticks == ["sepal length", "sepal width", "petal length", "petal width"]
    row = data["rows"][data["test"][3]]
    expect(page.locator("#iris-maps-flower")).to_contain_text(f"#3 · {data['classes'][data['labels'][data['test'][3]]]}")
    expect(page.locator("#iris-maps-flower")).to_contain_text(", ".join(f"{v:.1f}" for v in row))

    # Progress at 100 %, the confusion matrix of the 30 test flowers, the final accuracy.
    bar = page.get_by_role("progressbar")
    expect(bar).to_have_attribute("aria-valuenow", "20")
    expect(bar).to_have_attribute("aria-valuemax", "20")
    expect(bar).to_have_attribute("data-percent", "100")
    expect(page.locator("#iris-progress-text")).to_contain_text("epoch 20 / 20")
    expect(page.locator("#plot-confusion")).to_be_visible()
    confusion = plot(page, "plot-confusion", "z")
    assert confusion == done["confusion"]
    assert sum(map(sum, confusion)) == 30
    correct = sum(confusion[i][i] for i in range(3))
    assert abs(done["test_accuracy"] - correct / 30) < 1e-12
    expect(page.locator("#iris-final")).to_contain_text(f"{correct} of 30")
    expect(page.locator("#iris-train")).to_be_enabled()
    expect(page.locator("#iris-stop")).to_be_disabled()


def test_stop_ends_a_long_training_early(page: Page, api):
    open_iris(page, "?epochs=2000")
    page.locator("#iris-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "running")
    # Drawn while it trains: the curves have grown past epoch 0 and the maps left their uniform start.
    wait_until(page,
        """() => document.getElementById('results').dataset.run === 'running'
                 && document.getElementById('plot-loss').data[0].y.length >= 2
                 && document.getElementById('plot-head-0').data[0].z.flat().some((w) => w !== 0.25)""",
        timeout=TRAINING,
    )
    page.locator("#iris-stop").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "cancelled", timeout=TRAINING)
    job = page.locator("#results").get_attribute("data-job")

    events = read_events(api, job)
    name, cancelled = events[-1]
    assert name == "cancelled"
    epochs = epochs_of(events)
    assert epochs[-1]["epoch"] < 2000
    expect(page.locator("#status")).to_contain_text(f"Stopped at epoch {cancelled['epoch']} of 2000")
    assert plot(page, "plot-loss", "y") == [e["loss"] for e in epochs]  # every epoch it did, none after
    expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", str(epochs[-1]["epoch"]))
    expect(page.locator("#plot-confusion")).to_be_hidden()
    expect(page.locator("#iris-train")).to_be_enabled()


def test_predict_shows_the_api_answer_and_opens_the_walkthrough(page: Page, api):
    open_iris(page, "?epochs=20&watch=12")
    job = train(page)
    data = api.get("/api/v1/iris/data").json()
    watched = data["rows"][data["test"][12]]
    for i, value in enumerate(watched):  # prefilled with the watched flower
        assert float(page.locator(f"#iris-f{i}").input_value()) == value

    features = [6.1, 2.8, 4.7, 1.2]
    for i, value in enumerate(features):
        page.locator(f"#iris-f{i}").fill(str(value))
    page.locator("#iris-predict").click()
    expect(page.locator("#iris-walkthrough")).to_have_attribute("data-drawn", "20")

    response = api.post("/api/v1/iris/predict", json={"job": job, "features": features})
    assert response.status_code == 200, response.text
    answer = response.json()
    assert plot(page, "plot-probabilities", "x") == answer["probabilities"]
    assert abs(sum(answer["probabilities"]) - 1) < 1e-9
    predicted = answer["predicted"] if isinstance(answer["predicted"], int) else answer["classes"].index(answer["predicted"])
    expect(page.locator("#iris-predicted")).to_contain_text(answer["classes"][predicted])
    for h in range(2):
        assert plot(page, f"plot-predict-head-{h}", "z") == answer["trace"]["steps"]["softmax"][h]

    # The trained layer in the walkthrough of /toy: its input is the 4 tokens × 8 of the answer's trace.
    expect(page.locator("#stage")).to_have_attribute("data-step", "input")
    x = page.evaluate("() => document.querySelector('#stage-grid [data-matrix]').data[0].z")
    assert x == answer["trace"]["steps"]["input"]["q"]
    assert len(x) == 4 and all(len(r) == 8 for r in x)
    page.locator('#step-list button[data-step="softmax"]').click()
    expect(page.locator("#stage")).to_have_attribute("data-step", "softmax")


def test_bad_numbers_are_named_before_anything_is_sent(page: Page, browser_log):
    open_iris(page)
    page.locator("#iris-epochs").fill("0")
    page.locator("#iris-train").click()
    expect(page.locator("#status")).to_have_text("Epochs: type a whole number from 1 to 2000.")
    expect(page.locator("#iris-epochs")).to_have_attribute("aria-invalid", "true")
    page.locator("#iris-epochs").fill("20")
    page.locator("#iris-lr").fill("5")
    page.locator("#iris-train").click()
    expect(page.locator("#status")).to_contain_text("Learning rate: type a number above 0, at most 1")
    assert browser_log.api_posts("/api/v1/iris/train") == 0


@pytest.mark.expect_http_errors(429)
def test_a_third_training_is_refused_with_the_wait(page: Page, api):
    jobs = []
    try:
        for _ in range(2):
            response = api.post("/api/v1/iris/train", json={"epochs": 2000})
            assert response.status_code == 202, response.text
            jobs.append(response.json()["job"])
        open_iris(page, "?epochs=20")
        page.locator("#iris-train").click()
        expect(page.locator("#status")).to_have_text(re.compile(r"^Two trainings are already running on this server; try again in \d+ s\.$"))
        expect(page.locator("#status")).to_have_class(re.compile(r"is-error"))
        expect(page.locator("#iris-train")).to_be_enabled()
    finally:
        for job in jobs:
            api.delete(f"/api/v1/iris/train/{job}")
            assert read_events(api, job)[-1][0] in TERMINAL  # the slot is free again


def test_chinese_replays_the_run_with_no_english_left(page: Page, api):
    open_iris(page, "?epochs=20")
    job = train(page)
    switch_to_chinese(page)  # the page reloads; the job in its URL replays from the first epoch
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    assert page.locator("#results").get_attribute("data-job") == job
    expect(page.locator("#iris-progress-text")).to_contain_text("第 20 / 20 轮")
    ticks = page.evaluate("() => document.getElementById('plot-confusion').layout.xaxis.ticktext")
    assert ticks == ["山鸢尾", "变色鸢尾", "维吉尼亚鸢尾"]
    ticks = page.evaluate("() => document.getElementById('plot-head-1').layout.yaxis.ticktext")
    assert ticks == ["萼片长度", "萼片宽度", "花瓣长度", "花瓣宽度"]
    page.locator("#iris-predict").click()
    expect(page.locator("#iris-walkthrough")).to_have_attribute("data-drawn", "20")
    assert english_left(page) == []


def test_800_px_stacks_the_figures_without_overflow(page: Page):
    page.set_viewport_size({"width": 800, "height": 900})
    open_iris(page, "?epochs=20")
    train(page)
    page.locator("#iris-predict").click()
    expect(page.locator("#iris-walkthrough")).to_have_attribute("data-drawn", "20")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 800
    loss = page.locator("#plot-loss").bounding_box()
    accuracy = page.locator("#plot-accuracy").bounding_box()
    assert accuracy["y"] > loss["y"] + loss["height"] - 1  # stacked, not side by side


@pytest.mark.expect_http_errors(404)
def test_a_link_to_a_training_the_server_does_not_know_says_so(page: Page):
    page.goto(f"/iris?epochs=20&job={'0' * 32}")  # well formed, never started
    expect(page.locator("#results")).to_have_attribute("data-run", "lost")
    expect(page.locator("#status")).to_have_text(
        "The server no longer knows this training (it may have restarted); press Train to start a new one."
    )
    expect(page.locator("#iris-train")).to_be_enabled()
    expect(page.locator("#iris-predict")).to_be_disabled()
