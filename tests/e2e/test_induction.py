"""The induction-head lab's page (/induction) in real Chromium against a real server: a training drawn live,
compared with the same job's event stream read here with httpx; every sentence about the circuit recomputed
here from that stream's numbers; Stop; the form's own checks; 中文; 390 px."""

from __future__ import annotations

import json
import math
import re

import pytest
from playwright.sync_api import Page, expect

from .helpers import english_left, switch_to_chinese, wait_until
from .test_i18n import BUTTONS_WRAPPED
from .test_iris import TERMINAL, TRAINING, plot

SMALL = "?vocab=16&length=12&d_model=16&steps=120&batch=8&seed=5"  # 2 layers of 2 heads (the defaults)
GOAL = 0.6


def read_events(api, job: str, train: str = "/api/v1/labs/induction/train") -> list[tuple[str, dict]]:
    """Every event of a lab job's stream, up to done, cancelled or error."""
    events, name = [], "message"
    with api.stream("GET", f"{train}/{job}/events", timeout=TRAINING / 1000) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.split(":", 1)[1])))
                if name in TERMINAL:
                    break
    return events


def train(page: Page, query: str, phase: str = "done") -> str:
    page.goto(f"/induction{query}")
    expect(page.locator("#plot-loss .main-svg").first).to_be_attached()
    page.locator("#induction-train").click()
    expect(page.locator("#results")).to_have_attribute("data-run", phase, timeout=TRAINING)
    job = page.locator("#results").get_attribute("data-job")
    assert job
    return job


def strongest(scores, layers):
    return max(((s, layer, h) for layer in layers for h, s in enumerate(scores[layer])), key=lambda x: (x[0], -x[1], -x[2]))


def two(x: float) -> str:
    return f"{x:.2f}"


def test_a_training_is_drawn_and_explained_from_its_own_numbers(page: Page, api):
    job = train(page, SMALL)
    expect(page).to_have_url(re.compile(rf"/induction\?{re.escape(SMALL[1:])}&job={job}$"))
    events = read_events(api, job)
    evals = [data for name, data in events if name == "eval"]
    assert events[-1][0] == "done" and [e["step"] for e in evals] == list(range(0, 121, 2))  # eval_every = 120 / 60

    # the curves hold exactly the stream's numbers
    steps = [e["step"] for e in evals]
    assert plot(page, "plot-loss", "x", 0) == steps
    assert plot(page, "plot-loss", "y", 0) == [e["loss_first_half"] for e in evals]
    assert plot(page, "plot-loss", "y", 1) == [e["loss_repeated_half"] for e in evals]
    for element, field in (("plot-previous", "previous_token"), ("plot-induction", "induction")):
        for layer in range(2):
            for h in range(2):
                assert plot(page, element, "y", 2 * layer + h) == [e[field][layer][h] for e in evals]

    # the drop: the first eval whose repeated half's loss is below ln(16) / 2
    threshold = math.log(16) / 2
    drop = next((e for e in evals if e["loss_repeated_half"] < threshold), None)
    if drop is None:
        expect(page.locator("#induction-drop")).to_have_text(
            f"No drop yet: the repeated half’s loss has not been below half of ln(vocab) ({two(threshold)} nats).")
    else:
        expect(page.locator("#induction-drop")).to_contain_text(f"at step {drop['step']} ")

    # the verdict and the evidence, recomputed from the last eval
    last = evals[-1]
    ind_score, ind_layer, ind_head = strongest(last["induction"], [1])
    prev_score, prev_layer, prev_head = strongest(last["previous_token"], [0])
    formed = prev_score >= GOAL and ind_score >= GOAL
    verdict = page.locator("#induction-verdict")
    expect(verdict).to_contain_text("has formed" if formed else "has not formed")
    expect(verdict).to_contain_text(f"previous-token score is {two(prev_score)} and the highest induction score in a "
                                    f"later layer {two(ind_score)}")
    tokens, half = last["tokens"], 6
    q = half + (half - 1) // 2
    j, nxt = q - half, q - half + 1
    assert tokens[q] == tokens[j] and tokens[nxt] == tokens[q + 1]
    w0 = last["maps"][prev_layer][prev_head][nxt][j]
    w1 = last["maps"][ind_layer][ind_head][q][nxt]
    items = page.locator("#induction-evidence li")
    expect(items).to_have_count(4)
    expect(items.nth(0)).to_contain_text(f"L{prev_layer} H{prev_head} has the highest previous-token score: on average "
                                         f"it puts {two(prev_score)}")
    expect(items.nth(1)).to_contain_text(f"L{ind_layer} H{ind_head} has the highest induction score")
    expect(items.nth(2)).to_contain_text(f"position {nxt} holds token {tokens[nxt]}, and token {tokens[j]} came just "
                                         f"before it, at position {j}. L{prev_layer} H{prev_head} at position {nxt} puts "
                                         f"{two(w0)} of its attention on position {j}")
    expect(items.nth(3)).to_contain_text(f"token {tokens[q]} comes again at position {q}. L{ind_layer} H{ind_head} at "
                                         f"position {q} puts {two(w1)} of its attention on position {nxt}")
    row = last["maps"][ind_layer][ind_head][q]
    peak = max(range(len(row)), key=lambda k: (row[k], -k))
    expect(items.nth(3)).to_contain_text("the largest weight of that row" if peak == nxt else f"on position {peak}")

    # the maps: every head small, the induction-score head large with the last eval's weights
    expect(page.locator(".induction-thumb")).to_have_count(4)
    assert plot(page, "plot-map", "z") == last["maps"][ind_layer][ind_head]
    roles = page.locator(".induction-thumb-role").all_text_contents()
    for layer in range(2):
        for h in range(2):
            named = roles[2 * layer + h]
            assert ("previous-token head" in named) == (last["previous_token"][layer][h] >= GOAL)
            assert ("induction head" in named) == (layer > 0 and last["induction"][layer][h] >= GOAL)
    page.locator(".induction-thumb").nth(0).click()  # L0 H0, large
    wait_until(page, "() => document.getElementById('plot-map').layout.title.text === 'L0 H0'")
    assert plot(page, "plot-map", "z") == last["maps"][0][0]
    expect(page.locator("#induction-sequence")).to_have_text(" ".join(map(str, tokens)))
    expect(page.get_by_role("progressbar")).to_have_attribute("aria-valuenow", "120")
    expect(page.locator("#status")).to_contain_text("Trained 120 steps in")

    # the same run in Chinese: replayed from the kept events, nothing left in English
    switch_to_chinese(page)
    expect(page.locator("#results")).to_have_attribute("data-run", "done", timeout=TRAINING)
    expect(page.locator("#induction-verdict")).to_contain_text(f"{two(prev_score)}")
    expect(page.locator("#induction-evidence li").nth(2)).to_contain_text(f"位置 {nxt} 是词元 {tokens[nxt]}")
    assert english_left(page) == []


def test_stop_ends_a_long_training(page: Page, api):
    page.set_viewport_size({"width": 1400, "height": 900})
    job = train(page, SMALL.replace("steps=120", "steps=20000"), phase="running")
    # while it trains, Train is disabled: its label stays whole on one line, in English and in 中文 (the run replays)
    expect(page.locator("#induction-train")).to_be_disabled()
    assert page.evaluate(BUTTONS_WRAPPED) == []
    url = page.url
    for language in ("zh", "en"):  # and back to English for the sentences below
        page.goto(f"{url}&lang={language}")
        expect(page.locator("#results")).to_have_attribute("data-run", "running", timeout=TRAINING)
        expect(page.locator("#induction-train")).to_be_disabled()
        assert page.evaluate(BUTTONS_WRAPPED) == [], language
    wait_until(page, "() => document.getElementById('plot-loss').data[1].y.length >= 3", timeout=TRAINING)
    page.locator("#induction-stop").click()
    expect(page.locator("#results")).to_have_attribute("data-run", "cancelled", timeout=TRAINING)
    events = read_events(api, job)
    name, cancelled = events[-1]
    assert name == "cancelled" and cancelled["step"] < 20000
    expect(page.locator("#status")).to_have_text(f"Stopped at step {cancelled['step']} of 20000.")
    evals = [data for name, data in events if name == "eval"]
    assert plot(page, "plot-loss", "y", 1) == [e["loss_repeated_half"] for e in evals]
    expect(page.locator("#induction-train")).to_be_enabled()


@pytest.mark.parametrize("field, value, words", [
    ("length", "13", "Sequence length: type an even number"),
    ("d_model", "17", "d_model: type a multiple of the heads per layer (2)"),
    ("vocab", "8", "Sequence length: a sequence of 32 tokens repeats 16 different tokens, more than the vocabulary’s 8"),
    ("lr", "0.5", "Learning rate: type a number above 0, at most 0.1"),
])
def test_settings_that_cannot_train_are_said_before_anything_is_sent(page: Page, field, value, words):
    page.goto("/induction")
    expect(page.locator("#plot-loss .main-svg").first).to_be_attached()
    requests = []
    page.on("request", lambda r: requests.append(r.url) if "/labs/" in r.url else None)
    page.locator(f"#induction-{field}").fill(value)
    page.locator("#induction-train").click()
    expect(page.locator("#status")).to_contain_text(words)
    invalid = "length" if field == "vocab" else field
    expect(page.locator(f"#induction-{invalid}")).to_have_attribute("aria-invalid", "true")
    assert requests == [] and page.locator("#results").get_attribute("data-run") is None


def test_the_page_fits_390_px_in_chinese(page: Page):
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto("/induction?lang=zh")
    expect(page.locator("#plot-loss .main-svg").first).to_be_attached()
    expect(page.locator("#status")).to_contain_text("选好设置后按")
    page.wait_for_function("() => document.documentElement.scrollWidth <= innerWidth")
    assert english_left(page) == []
