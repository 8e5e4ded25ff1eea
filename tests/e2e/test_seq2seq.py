"""The encoder-decoder lab's page (/seq2seq) in real Chromium against a real server: two trainings (with and
without attention) drawn live and compared with their event streams read here with httpx; the alignment share and
the bottleneck sentence recomputed here from those numbers; a text of one's own against /predict; Stop; 中文; 390 px."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until
from .test_induction import read_events as read_induction_events
from .test_iris import TRAINING, plot

# The page evaluates every max(1, steps / 30) steps: 12 steps are 13 evaluations of each run (500 examples decoded
# each time), what the drawing and every sentence need; bench/seq2seq.py trains the real thing.
STEPS = 12
SMALL = f"?steps={STEPS}&batch=16&hidden=16&seed=3"


def read_events(api, job):
    return read_induction_events(api, job, train="/api/v1/labs/seq2seq/train")


def evals_of(events):
    return [data for name, data in events if name == "eval"]


def percent(x: float) -> str:
    return f"{100 * x:.1f} %"


def train(page: Page, query: str, phase: str = "done") -> tuple[str, str | None]:
    page.goto(f"/seq2seq{query}")
    expect(page.locator("#plot-loss .main-svg").first).to_be_attached()
    page.locator("#seq2seq-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", phase, timeout=TRAINING)
    url = page.url
    job = re.search(r"[?&]job=([0-9a-f]{32})", url).group(1)
    plain = re.search(r"[?&]plain=([0-9a-f]{32})", url)
    return job, plain.group(1) if plain else None


def longest_mean(by_length: dict) -> tuple[int, int, float]:
    lengths = sorted(map(int, by_length))[-6:]
    return lengths[0], lengths[-1], sum(by_length[str(n)] for n in lengths) / len(lengths)


@pytest.mark.expect_http_errors(422)  # the text the task cannot read
def test_both_runs_are_drawn_and_stated_from_their_own_numbers(page: Page, api):
    job, plain = train(page, SMALL)
    assert plain is not None
    runs = [evals_of(read_events(api, j)) for j in (job, plain)]
    for trace, evals in enumerate(runs):
        assert plot(page, "plot-loss", "x", trace) == [e["step"] for e in evals]
        assert plot(page, "plot-loss", "y", trace) == [e["loss"] for e in evals]
        assert plot(page, "plot-accuracy", "y", trace) == [e["accuracy"] for e in evals]
    last, last_plain = runs[0][-1], runs[1][-1]

    # the watched example's alignment: the map, its rows' and columns' characters, the share stated under it
    alignment = last["alignment"]
    assert plot(page, "plot-alignment", "z") == alignment["weights"]
    ticks = page.evaluate("() => { const l = document.getElementById('plot-alignment').layout; "
                          "return [l.xaxis.ticktext, l.yaxis.ticktext]; }")
    assert ticks == [alignment["source"], alignment["target"]]
    expect(page.locator("#seq2seq-share")).to_have_text(
        f"At step {last['step']}, {percent(last['alignment_share'])} of each output character’s attention lies on its "
        "right input position (n − 1 − t), on average over the 500 evaluation examples with the true previous "
        "characters fed in.")

    # accuracy against length, both runs, and the bottleneck sentence over the six longest lengths
    for trace, run in enumerate((last, last_plain)):
        lengths = sorted(map(int, run["accuracy_by_length"]))
        assert plot(page, "plot-length", "x", trace) == lengths
        assert plot(page, "plot-length", "y", trace) == [run["accuracy_by_length"][str(n)] for n in lengths]
    first, final, mean = longest_mean(last["accuracy_by_length"])
    _, _, mean_plain = longest_mean(last_plain["accuracy_by_length"])
    assert (first, final) == (25, 30)
    expect(page.locator("#seq2seq-bottleneck")).to_have_text(
        f"Inputs of 25 to 30 characters: {percent(mean)} exactly right with attention (step {STEPS}), {percent(mean_plain)} "
        f"without (step {STEPS}).")
    expect(page.locator("#status")).to_contain_text(f"Trained {STEPS} steps: {percent(last['accuracy'])} of the evaluation")

    # a text of one's own: both networks' outputs and the attention network's alignment, as /predict answers
    expect(page.locator("#seq2seq-text")).to_have_value("attention")
    page.locator("#seq2seq-text").fill("bahdanau")
    page.locator("#seq2seq-predict").click()
    answers = [api.post("/api/v1/labs/seq2seq/predict", json={"job": j, "text": "bahdanau"}).json() for j in (job, plain)]
    expect(page.locator("#seq2seq-predicted")).to_have_text(
        f"“bahdanau” → “{answers[0]['output']}” with attention, “{answers[1]['output']}” without (the networks after "
        f"step {STEPS}).")
    wait_until(page, "() => document.getElementById('plot-predicted').data?.[0]?.z?.length > 0")
    assert plot(page, "plot-predicted", "z") == answers[0]["alignment"]["weights"]

    # a text the task cannot read is refused in the page's words
    page.locator("#seq2seq-text").fill("Bahdanau")
    page.locator("#seq2seq-predict").click()
    expect(page.locator("#status")).to_have_text("Input: use the task’s characters, 4 to 30 of them.")

    # the same runs in Chinese, replayed from the kept events
    switch_to_chinese(page)
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    expect(page.locator("#seq2seq-share")).to_contain_text(percent(last["alignment_share"]))
    assert english_left(page) == []


def test_stop_ends_both_trainings(page: Page, api):
    # 3000 steps: the page evaluates every 100 (steps / 30), so the second point comes soon, long before the end
    job, plain = train(page, "?steps=3000&hidden=8&batch=8", phase="running")
    wait_until(page, "() => document.getElementById('plot-loss').data[0].x.length >= 2", timeout=TRAINING)
    page.locator("#seq2seq-stop").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "cancelled", timeout=TRAINING)
    for j in (job, plain):
        assert read_events(api, j)[-1][0] == "cancelled"
    expect(page.locator("#status")).to_contain_text("Stopped at step")
    expect(page.locator("#seq2seq-train")).to_be_enabled()


def test_dates_alone_and_the_page_at_390_px(page: Page, api):
    page.set_viewport_size({"width": 390, "height": 844})
    # choosing the task changes its description and the example input at once, before any training: to what a
    # page opened on that task shows (compared below)
    page.goto(f"/seq2seq{SMALL}")
    hint, example = page.locator("#seq2seq-task-hint"), page.locator("#seq2seq-text")
    expect(hint).not_to_be_empty()
    reverse = (hint.inner_text(), example.input_value())
    page.select_option("#seq2seq-task", "dates")
    expect(hint).not_to_have_text(reverse[0])
    chosen = (hint.inner_text(), example.input_value())
    assert chosen[1] != reverse[1] and "?task=" not in page.url  # nothing trained, nothing navigated
    job, plain = train(page, SMALL + "&task=dates&both=0")
    assert (hint.inner_text(), example.input_value()) == chosen
    assert plain is None
    last = evals_of(read_events(api, job))[-1]
    assert all(len(length) for length in last["accuracy_by_length"])
    expect(page.locator("#seq2seq-share")).to_contain_text(f"{percent(last['alignment_share'])} of each output digit’s")
    expect(page.locator("#seq2seq-bottleneck")).to_have_text("")  # one run: nothing to compare
    expect(page.locator("#seq2seq-text")).to_have_value("1 Dec 2026")
    page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")
