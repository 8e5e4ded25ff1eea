"""The glimpse lab's page (/glimpse) in real Chromium against a real server: all four methods and REINFORCE without
its baseline trained (two at a time) and drawn from their event streams, read here with httpx; the table equal to
the `done` events; each sentence's claim (the best run, the variance ratios, the baseline, the temperature, where the
glimpses agree) recomputed here from those numbers; the drawn glimpse equal to its event's weights; Stop; 中文;
390 px."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until
from .test_induction import read_events as read_lab_events
from .test_informer import significant
from .test_iris import TRAINING, plot

TRAIN = "/api/v1/labs/glimpse/train"
RUNS = ("soft", "reinforce", "gumbel", "straight_through", "nobaseline")
NAMES = {"soft": "Soft attention", "reinforce": "REINFORCE", "gumbel": "Gumbel-softmax",
         "straight_through": "Straight-through", "nobaseline": "REINFORCE without baseline"}
# 2 steps of 8 canvases, evaluated after each (the page evaluates every max(1, steps / 16) steps): a few seconds a
# run; bench/glimpse.py trains the real thing
SMALL = "?steps=2&batch=8&seed=3&without=1"


def read_events(api, job):
    return read_lab_events(api, job, train=TRAIN)


def fixed2(x: float) -> str:
    """x.toFixed(2): the exact binary value rounded, halves away from zero."""
    return str(Decimal(x).quantize(Decimal("0.01"), ROUND_HALF_UP))


def variance_text(x: float) -> str:
    """The page's variance in words: 0, three significant digits from 0.001 to 10⁴, else d.dde±x."""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e4:
        return significant(x, 3)
    mantissa, exponent = f"{x:.2e}".split("e")
    return f"{mantissa}e{'+' if int(exponent) >= 0 else '-'}{abs(int(exponent))}"


def sentences(done: dict, evals: dict) -> list[str]:
    """The sentences under the table, recomputed from the runs' `done` and last `eval` events."""
    said = []
    best = max(d["test_accuracy"] for d in done.values())
    winners = [run for run in RUNS if done[run]["test_accuracy"] == best]
    digits = max(done[run]["digit_accuracy"] for run in winners)
    names = " and ".join(NAMES[run] for run in winners)
    said.append(f"{names} read the most test canvases exactly: {100 * best:.1f} % (and {100 * digits:.1f} % of "
                "their digits)." if len(winners) == 1 else f"{names} read equally many test canvases exactly: "
                f"{100 * best:.1f} % (at best {100 * digits:.1f} % of their digits).")
    last = {run: evals[run][-1] for run in RUNS}
    reinforce = last["reinforce"]["grad_variance"]
    for run, name in (("gumbel", "Gumbel-softmax's"), ("straight_through", "straight-through's")):
        theirs = last[run]["grad_variance"]
        said.append(f"At the last evaluation (step {last['reinforce']['step']}), REINFORCE's gradient estimate had "
                    f"{significant(reinforce / theirs, 3)} times the variance of {name} ({variance_text(reinforce)} "
                    f"against {variance_text(theirs)}).")
    without = last["nobaseline"]["grad_variance"]
    tail = (f"that run read {100 * done['nobaseline']['test_accuracy']:.1f} % of the test canvases exactly, against "
            f"{100 * done['reinforce']['test_accuracy']:.1f} % with the baseline.")
    ratio = significant(without / reinforce, 3)
    said.append(f"Without its baseline, REINFORCE's gradient variance at the last evaluation was {ratio} times that "
                f"with it; {tail}" if without > reinforce else f"Without its baseline, REINFORCE's gradient variance "
                f"at the last evaluation was {ratio} times that with it, so here the baseline did not lower it; {tail}")
    for run, name in (("gumbel", "Gumbel-softmax's"), ("straight_through", "Straight-through's")):
        said.append(f"{name} temperature went from {significant(evals[run][0]['tau'], 3)} at the first step to "
                    f"{significant(last[run]['tau'], 3)} at the last.")
    for run, name in (("reinforce", "REINFORCE's"), ("gumbel", "Gumbel-softmax's"),
                      ("straight_through", "straight-through's")):
        same = total = 0
        for soft, hard in zip(last["soft"]["glimpses"], last[run]["glimpses"], strict=True):
            steps = min(len(soft["regions"]), len(hard["regions"]))
            soft_cells = np.argmax(np.array(soft["regions"][:steps]), axis=1)
            hard_cells = np.argmax(np.array(hard["regions"][:steps]), axis=1)
            same += int((soft_cells == hard_cells).sum())
            total += steps
        said.append(f"At the last evaluation, soft attention's largest weight and {name} glimpse fell on the same "
                    f"cell at {same} of {total} decoding steps of the four watched canvases.")
    return said


def jobs_of(url: str) -> dict[str, str]:
    return {run: m.group(1) for run in RUNS if (m := re.search(rf"[?&]{run}=([0-9a-f]{{32}})", url))}


def drawn_cells(page: Page) -> dict:
    return page.evaluate("""() => {
      const layout = document.getElementById('plot-canvas').layout;
      return {
        outlined: layout.shapes.filter((s) => s.type === 'rect' && s.line.width === 4).map((s) => s.name),
        weights: layout.annotations.map((a) => a.text),
      };
    }""")


def test_all_runs_are_drawn_tabled_and_stated_from_their_own_numbers(page: Page, api):
    page.goto(f"/glimpse{SMALL}")
    expect(page.locator("#plot-accuracy-step .main-svg").first).to_be_attached()
    page.locator("#glimpse-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    jobs = jobs_of(page.url)
    assert set(jobs) == set(RUNS)
    runs = {run: read_events(api, job) for run, job in jobs.items()}
    assert all(events[-1][0] == "done" for events in runs.values())
    done = {run: events[-1][1] for run, events in runs.items()}
    evals = {run: [data for name, data in events if name == "eval"] for run, events in runs.items()}
    expect(page.locator('#glimpse-runs li[data-phase="done"]')).to_have_count(5)
    for trace, run in enumerate(RUNS):
        assert [e["step"] for e in evals[run]] == [0, 1, 2]
        assert plot(page, "plot-accuracy-step", "y", trace) == [100 * e["accuracy"] for e in evals[run]]
        assert plot(page, "plot-loss-seconds", "x", trace) == [e["seconds"] for e in evals[run]]
        assert plot(page, "plot-loss-step", "y", trace) == [e["eval_loss"] for e in evals[run]]
        assert plot(page, "plot-entropy-step", "y", trace) == [e["entropy"] for e in evals[run]]
        if run != "soft":  # the log axis: soft attention samples nothing
            assert plot(page, "plot-variance-step", "y", trace - 1) == [e["grad_variance"] for e in evals[run]
                                                                        if e["grad_variance"] > 0]
    assert page.evaluate("document.getElementById('plot-variance-step').data.length") == 4

    # the table holds the `done` numbers, and each sentence says what they say
    for run in RUNS:
        row = f'#glimpse-table tr[data-run="{run}"]'
        for field in ("test_accuracy", "digit_accuracy", "seconds"):
            cell = page.locator(f'{row} td[data-cell="{field}"]')
            assert float(cell.get_attribute("data-value")) == done[run][field]
            expect(cell).to_have_text(f"{done[run][field]:.1f}" if field == "seconds"
                                      else f"{100 * done[run][field]:.1f} %")
        variance = evals[run][-1]["grad_variance"]
        expect(page.locator(f'{row} td[data-cell="grad_variance"]')).to_have_text(
            "0 (nothing sampled)" if run == "soft" else variance_text(variance))
    expect(page.locator("#glimpse-verdict li")).to_have_text(sentences(done, evals))
    expect(page.locator("#status")).to_have_text("All 5 runs trained 2 steps.")

    # the glimpses drawn: a hard run's outlined cell and soft attention's weights, as the last eval event has them
    page.select_option("#glimpse-run", "gumbel")
    page.locator('#glimpse-canvases button[data-canvas="1"]').click()
    watched = evals["gumbel"][-1]["glimpses"][1]
    step = len(watched["regions"]) - 1
    page.locator("#glimpse-step").fill(str(step))
    expect(page.locator("#plot-canvas")).to_have_attribute("data-step", str(step))
    expect(page.locator("#plot-canvas")).to_have_attribute("data-run", "gumbel")
    cell = int(np.argmax(watched["regions"][step]))
    wait_until(page, f"() => document.getElementById('plot-canvas').layout.shapes.some((s) => s.name === 'cell-{cell}')")
    assert drawn_cells(page) == {"outlined": [f"cell-{cell}"], "weights": []}
    wrote = watched["output"][step] if step < len(watched["output"]) else "END"
    expect(page.locator("#glimpse-says")).to_have_text(
        f"Step {step + 1}: it glimpsed only the cell in row {cell // 3 + 1}, column {cell % 3 + 1} and wrote {wrote} "
        f"(after 2 training steps).")
    expect(page.locator("#glimpse-target")).to_have_text(f"On the canvas: {' '.join(map(str, watched['target']))}")
    page.select_option("#glimpse-run", "soft")
    soft = evals["soft"][-1]["glimpses"][1]
    expect(page.locator("#plot-canvas")).to_have_attribute("data-run", "soft")
    expect(page.locator("#plot-canvas")).to_have_attribute("data-step", "0")
    assert drawn_cells(page) == {"outlined": [], "weights": [fixed2(w) for w in soft["regions"][0]]}

    # the same runs in Chinese, replayed from the kept events, then at 390 px
    switch_to_chinese(page)
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    start, end = significant(evals["gumbel"][0]["tau"], 3), significant(evals["gumbel"][-1]["tau"], 3)
    expect(page.locator('#glimpse-verdict li[data-key="glimpse.verdict.tau.gumbel"]')).to_have_text(
        f"Gumbel-softmax 的温度从第一步的 {start} 降到最后一步的 {end}。")
    expect(page.locator("#plot-canvas .main-svg").first).to_be_attached()
    assert english_left(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")


def test_stop_cancels_the_runs_training_and_starts_no_more(page: Page, api):
    page.goto("/glimpse?steps=3000&batch=8")
    expect(page.locator("#plot-accuracy-step .main-svg").first).to_be_attached()
    page.locator("#glimpse-train").click()
    expect(page.locator('#glimpse-runs li[data-phase="running"]')).to_have_count(2, timeout=TRAINING)
    expect(page.locator('#glimpse-runs li[data-phase="queued"]')).to_have_count(2)
    page.locator("#glimpse-stop").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "stopped", timeout=TRAINING)
    jobs = jobs_of(page.url)
    assert set(jobs) == {"soft", "reinforce"}  # the two that were training; the queued ones never started
    for job in jobs.values():
        assert read_events(api, job)[-1][0] == "cancelled"
    expect(page.locator('#glimpse-runs li[data-phase="cancelled"]')).to_have_count(2)
    expect(page.locator('#glimpse-runs li[data-phase="skipped"]')).to_have_count(2)
    expect(page.locator("#status")).to_have_text("Stopped: the runs that finished are in the table.")
    expect(page.locator("#glimpse-train")).to_be_enabled()
    expect(page.locator("#glimpse-table td").first).to_have_text("")  # nothing finished: nothing tabled
