"""The Informer lab's page (/informer) in real Chromium against a real server: both trainings (ProbSparse and full
attention) drawn live and compared with their event streams read here with httpx; the table equal to the `done`
events; each sentence's claim (beat the naive forecast or not, the percentage, which finished first) recomputed here
from those numbers; a test window's active rows as /watch answers them; the sweep's sentence from its file; Stop;
中文; 390 px."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until
from .test_induction import read_events as read_lab_events
from .test_iris import TRAINING, plot

TRAIN = "/api/v1/labs/informer/train"
# sunspots (309 yearly values): a window of 22 and a horizon of 5 give a few dozen windows per part, and 6 steps are
# 7 evaluations of each run (the page evaluates every max(1, steps / 30) steps); bench/informer.py trains the real thing
SMALL = "?series=sunspots&window=22&horizon=5&steps=6&seed=3"
SWEEP = Path(__file__).resolve().parents[2] / "static/data/informer-sweep.json"
# Without bench/informer.py's file the page asks for it and is answered 404 (and says that it is missing)
SWEEP_MISSING = () if SWEEP.exists() else (404,)
pytestmark = pytest.mark.expect_http_errors(*SWEEP_MISSING)


def read_events(api, job):
    return read_lab_events(api, job, train=TRAIN)


def significant(x: float, digits: int = 4) -> str:
    """x with `digits` significant digits, trailing zeros dropped, no grouping (Intl.NumberFormat's
    maximumSignificantDigits with useGrouping false)."""
    return format(Decimal(f"{x:.{digits}g}").normalize(), "f")


def train(page: Page, query: str, phase: str = "done") -> tuple[str, str]:
    page.goto(f"/informer{query}")
    expect(page.locator("#plot-step .main-svg").first).to_be_attached()
    page.locator("#informer-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", phase, timeout=TRAINING)
    job = re.search(r"[?&]job=([0-9a-f]{32})", page.url).group(1)
    full = re.search(r"[?&]full=([0-9a-f]{32})", page.url).group(1)
    return job, full


def sentences(done: dict) -> list[str]:
    """The verdict under the table, recomputed from the two `done` events."""
    said = []
    for kind, name in (("probsparse", "ProbSparse"), ("full", "Full attention")):
        d = done[kind]
        verb = "beat" if d["test_mse"] < d["naive_mse"] else "did not beat"
        said.append(f"{name} {verb} the seasonal-naive forecast: test MSE {significant(d['test_mse'])} against "
                    f"{significant(d['naive_mse'])}.")
    said.append(f"ProbSparse’s test MSE is {100 * done['probsparse']['test_mse'] / done['full']['test_mse']:.1f} % of "
                "full attention’s.")
    a, b = done["probsparse"]["seconds"], done["full"]["seconds"]
    if a < b:
        said.append(f"ProbSparse finished first: {a:.1f} s against {b:.1f} s.")
    elif b < a:
        said.append(f"Full attention finished first: {b:.1f} s against {a:.1f} s for ProbSparse.")
    else:
        said.append(f"Both finished in {a:.1f} s.")
    return said


def test_both_runs_are_drawn_tabled_and_stated_from_their_own_numbers(page: Page, api):
    job, full = train(page, SMALL)
    runs = {kind: read_events(api, j) for kind, j in (("probsparse", job), ("full", full))}
    done = {kind: events[-1][1] for kind, events in runs.items()}
    assert all(events[-1][0] == "done" for events in runs.values())
    for trace, kind in enumerate(("probsparse", "full")):
        evals = [data for name, data in runs[kind] if name == "eval"]
        assert len(evals) == 7
        assert plot(page, "plot-step", "x", trace) == [e["step"] for e in evals]
        assert plot(page, "plot-step", "y", trace) == [e["val_mse"] for e in evals]
        assert plot(page, "plot-seconds", "x", trace) == [e["seconds"] for e in evals]
    # the seasonal-naive test MSE as the reference line, once both are done (the same windows for both runs)
    assert done["probsparse"]["naive_mse"] == done["full"]["naive_mse"]
    assert plot(page, "plot-step", "y", 2) == [done["full"]["naive_mse"]] * 2

    # the table holds the `done` numbers, and each sentence says what they say
    for kind in ("probsparse", "full"):
        for field in ("test_mse", "naive_mse", "linear_mse", "seconds"):
            cell = page.locator(f'#informer-table tr[data-kind="{kind}"] td[data-cell="{field}"]')
            expect(cell).to_have_attribute("data-value", re.compile(".+"))
            assert float(cell.get_attribute("data-value")) == done[kind][field]
            shown = f"{done[kind][field]:.1f}" if field == "seconds" else significant(done[kind][field])
            expect(cell).to_have_text(shown)
    expect(page.locator("#informer-verdict li")).to_have_text(sentences(done))
    expect(page.locator("#status")).to_have_text("Both networks trained 6 steps.")

    # a test window: both forecasts as /watch answers them, ProbSparse's active rows marked in every layer
    wait_until(page, "() => document.getElementById('plot-layer-1')?.data?.length === 2", timeout=TRAINING)
    answers = {kind: api.post("/api/v1/labs/informer/watch", json={"job": j, "index": 0}).json()
               for kind, j in (("probsparse", job), ("full", full))}
    assert plot(page, "plot-forecast", "y", 3) == answers["probsparse"]["forecast"]
    assert plot(page, "plot-forecast", "y", 4) == answers["full"]["forecast"]
    assert plot(page, "plot-forecast", "y", 1) == answers["probsparse"]["truth"]
    for n, layer in enumerate(answers["probsparse"]["layers"]):
        shown = page.locator(f"#plot-layer-{n}")
        expect(shown).to_have_attribute("data-length", str(layer["length"]))
        expect(shown).to_have_attribute("data-active", ",".join(map(str, layer["active"][0])))
        assert plot(page, f"plot-layer-{n}", "y", 1) == layer["active"][0]
        assert plot(page, f"plot-layer-{n}", "z") == layer["weights"][0]
    assert [layer["length"] for layer in answers["probsparse"]["layers"]] == [22, 11]
    expect(page.locator("#informer-layers figcaption").first).to_have_text(
        f"Layer 0: length 22, {len(answers['probsparse']['layers'][0]['active'][0])} active queries")

    # another head of the full-attention network: no rows marked
    page.select_option("#informer-net", "full")
    page.select_option("#informer-head", "2")
    expect(page.locator("#informer-layers")).to_have_attribute("data-attention", "full")
    expect(page.locator("#informer-layers")).to_have_attribute("data-head", "2")
    expect(page.locator("#plot-layer-0")).to_have_attribute("data-active", "")
    assert plot(page, "plot-layer-0", "z") == answers["full"]["layers"][0]["weights"][2]

    # the measured sweep's sentence, from its file
    if SWEEP.exists():
        sweep = json.loads(SWEEP.read_text())
        ps, fa = sweep["probsparse"]["seconds"], sweep["full"]["seconds"]
        crossover = None
        for length, a, b in reversed(list(zip(sweep["lengths"], ps, fa, strict=True))):
            if a >= b:
                break
            crossover = length
        assert crossover == sweep["crossover"]
        top, ms = sweep["lengths"][-1], (significant(1000 * ps[-1], 3), significant(1000 * fa[-1], 3))
        expect(page.locator("#informer-crossover")).to_have_text(
            f"Measured: ProbSparse’s forward is faster than full attention’s from L = {crossover} on; at L = {top} it "
            f"takes {ms[0]} ms against {ms[1]} ms ({fa[-1] / ps[-1]:.1f} times faster)." if crossover is not None else
            f"Measured: ProbSparse’s forward is not faster than full attention’s at the longest length, L = {top}: "
            f"{ms[0]} ms against {ms[1]} ms.")
        runs = sweep["seeds"]
        if runs:
            mean = {kind: sum(run[kind]["test_mse"] for run in runs) / len(runs) for kind in ("probsparse", "full")}
            naive = sum(run["naive_mse"] for run in runs) / len(runs)
            beat = sum(run["probsparse"]["test_mse"] < run["naive_mse"] and run["full"]["test_mse"] < run["naive_mse"]
                       for run in runs)
            name = {"co2": "CO₂ at Mauna Loa, weekly", "sunspots": "Sunspot numbers, yearly"}[runs[0]["series"]]
            expect(page.locator("#informer-seeds")).to_have_text(
                f"The same script trained both networks at the defaults on {name} with seeds "
                f"{', '.join(str(run['seed']) for run in runs)}: a mean test MSE of {significant(mean['probsparse'])} "
                f"with ProbSparse and {significant(mean['full'])} with full attention, against {significant(naive)} "
                f"for the seasonal-naive forecast; both beat it with {beat} of the {len(runs)} seeds.")
    else:
        expect(page.locator("#informer-sweep")).to_have_attribute("data-drawn", "missing")

    # the same runs in Chinese, replayed from the kept events, then at 390 px
    switch_to_chinese(page)
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    percent = f"{100 * done['probsparse']['test_mse'] / done['full']['test_mse']:.1f} %"
    expect(page.locator('#informer-verdict li[data-key="informer.verdict.share"]')).to_have_text(
        f"ProbSparse 的测试 MSE 是完整注意力的 {percent}。")
    wait_until(page, "() => document.getElementById('plot-layer-1')?.data?.length === 2", timeout=TRAINING)
    assert english_left(page) == []
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    wait_until(page, "() => document.getElementById('plot-layer-1')?.data?.length === 2", timeout=TRAINING)
    page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")


def test_stop_ends_both_trainings(page: Page, api):
    # 600 steps: the page evaluates every 20 (steps / 30), so the second point comes within a second, long before the
    # end (about 45 steps a second each here)
    job, full = train(page, "?series=sunspots&window=22&horizon=5&steps=600", phase="running")
    wait_until(page, "() => document.getElementById('plot-step').data[0].x.length >= 2", timeout=TRAINING)
    page.locator("#informer-stop").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "cancelled", timeout=TRAINING)
    for j in (job, full):
        assert read_events(api, j)[-1][0] == "cancelled"
    expect(page.locator("#status")).to_contain_text("Stopped at step")
    expect(page.locator("#informer-train")).to_be_enabled()
    expect(page.locator("#informer-table td").first).to_have_text("")  # nothing finished: nothing tabled


@pytest.mark.expect_http_errors(422, *SWEEP_MISSING)  # the window the series cannot take
def test_a_setting_the_series_cannot_take_is_refused_in_the_pages_words(page: Page):
    page.goto("/informer?series=sunspots&steps=2")
    page.locator("#informer-window").fill("300")
    page.locator("#informer-train").click()
    expect(page.locator("#status")).to_have_text(re.compile(r"^Window L: send 11 to \d+\.$"))
    expect(page.locator("#informer-series-hint")).to_contain_text("do not fit")
