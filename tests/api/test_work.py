"""The work budget (model/analysis/work.py, ATTNSCOPE_WORK_BUDGET): each operation's estimate against torch's own
count of a real forward, and each route's refusal naming the largest input that fits, which is then accepted while
one more is refused.

A test's budget is set on the running app (its settings object swapped for a copy with another work_budget) to the
estimate of a chosen size, so that the accepted requests stay small and fast.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from app.settings import Settings
from model.analysis import attribution, patching, study, work

DEFAULT = Settings.model_fields["work_budget"].default


@contextmanager
def budget(client, flops: float) -> Iterator[None]:
    """The app's budget set to `flops` (a hair above, so that an estimate of exactly `flops` fits)."""
    kept = client.app.state.settings
    client.app.state.settings = kept.model_copy(update={"work_budget": flops / work.GIGA * (1 + 1e-9)})
    try:
        yield
    finally:
        client.app.state.settings = kept


def minilm(client):
    return client.app.state.hub.get("minilm")[1]


def words(n: int) -> str:
    """A MiniLM text of exactly n tokens: [CLS], n − 2 words, [SEP]."""
    return " ".join(["word"] * (n - 2))


def text_of(model, n: int) -> str:
    """A text that the model's tokenizer makes exactly n tokens."""
    pieces: list[str] = []
    while len(model.tokenizer.encode(" ".join(pieces))) < n:
        pieces.append("cat")
    text = " ".join(pieces)
    assert len(model.tokenizer.encode(text)) == n
    return text


def refused(r, field: str) -> dict:
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert error["type"] == "work_too_large" and error["loc"] == ["body", field], error
    assert set(error["ctx"]) == {"gflop", "budget_gflop", "largest"}
    assert error["ctx"]["gflop"] >= error["ctx"]["budget_gflop"] * 0.9999  # 6 significant digits
    assert "GFLOP" in error["msg"] and "ATTNSCOPE_WORK_BUDGET" in error["msg"]
    return error


def named_size_fits(client, path: str, body: dict, make, sent: int, want: int, field: str = "text") -> None:
    """A request of size `sent` is refused naming `want`; `want` is accepted, want + 1 refused naming want again."""
    over = refused(client.post(path, json={**body, field: make(sent)}), field)
    assert over["ctx"]["largest"] == want and f"at most {want}" in over["msg"], over
    ok = client.post(path, json={**body, field: make(want)})
    assert ok.status_code == 200, ok.text
    again = refused(client.post(path, json={**body, field: make(want + 1)}), field)
    assert again["ctx"]["largest"] == want


def test_forward_estimate_equals_torchs_count(client):
    """work.forward against FlopCounterMode on MiniLM's real forward (every matrix product counted): within 0.5 %."""
    model = minilm(client)
    for n in (2, 40, 512):
        ids = torch.tensor([model.tokenizer.encode(words(n)).ids])  # (1, n)
        with FlopCounterMode(display=False) as counter, torch.inference_mode():
            model.net(ids, torch.zeros_like(ids))
        assert work.forward(model.cfg, n) == pytest.approx(counter.get_total_flops(), rel=5e-3)


@pytest.mark.parametrize("method", attribution.METHODS)
def test_attribution_estimate_equals_torchs_count(client, method):
    """work.attribution against FlopCounterMode on a real attribution (its passes, backwards, the target's forward
    and the compared scores), at 10 tokens: within 2 %."""
    model = minilm(client)
    # texts of this test only, so that no cached map stands in for a forward
    text, target = f"counted flops of {method} here", f"the target of {method}"
    encoded = model.tokenizer.encode(text)
    with FlopCounterMode(display=False) as counter:
        attribution.attribute(model, encoded, target, method, attribution.MIN_STEPS)
    estimate = work.attribution(model.cfg, len(encoded), method, attribution.MIN_STEPS,
                                len(model.tokenizer.encode(target)))
    assert estimate == pytest.approx(counter.get_total_flops(), rel=2e-2)


def test_contributions_and_metrics_estimates_are_upper_bounds_of_torchs_count(client):
    model = minilm(client)
    encoded = model.tokenizer.encode(words(64))
    with FlopCounterMode(display=False) as counter:
        study.contributions(model, encoded, [0, 1, 2], [0])
    assert work.contributions(model.cfg, 64, 3) == pytest.approx(counter.get_total_flops(), rel=2e-2)
    with FlopCounterMode(display=False) as counter:
        study.head_metrics(model, encoded)
    assert counter.get_total_flops() <= work.metrics(model.cfg, 64) * 1.01  # R R's maps may come from the cache


def test_the_default_budget_takes_every_view_at_512_tokens_and_refuses_long_attributions(client):
    cfg = minilm(client).cfg
    for estimate in (work.attention(cfg, 512, "rollout"), work.trace(cfg, 512, 5), work.metrics(cfg, 512),
                     work.contributions(cfg, 512, cfg.n_layers), work.lens(cfg, 512)):
        assert estimate <= DEFAULT * work.GIGA
    r = client.post("/api/v1/attribution", json={"text": "word " * 500, "model": "minilm", "target": "hi",
                                                 "steps": 64})
    error = refused(r, "steps")
    most = error["ctx"]["largest"]
    assert attribution.MIN_STEPS <= most < 64 and f"at most {most} at this length" in error["msg"]
    assert client.post("/api/v1/attention", json={"text": words(512), "layers": [0], "heads": [0]}).status_code == 200


VIEWS = [
    ("/api/v1/attention", {"layers": [0], "heads": [0]}, lambda cfg, n: work.attention(cfg, n)),
    ("/api/v1/attention/summary", {"layers": [0], "heads": [0]}, lambda cfg, n: work.attention(cfg, n)),
    ("/api/v1/aggregate", {"kind": "rollout"}, lambda cfg, n: work.attention(cfg, n, "rollout")),
    ("/api/v1/trace", {"layer": 2, "head": 0}, lambda cfg, n: work.trace(cfg, n, 2)),
    ("/api/v1/metrics", {}, work.metrics),
    ("/api/v1/contributions", {"layers": [0, 1], "heads": [0]}, lambda cfg, n: work.contributions(cfg, n, 2)),
]


@pytest.mark.parametrize(("path", "body", "estimate"), VIEWS, ids=[path for path, _, _ in VIEWS])
def test_a_view_names_the_most_tokens_that_fit(client, path, body, estimate):
    with budget(client, estimate(minilm(client).cfg, 60)):
        named_size_fits(client, path, body, words, 300, 60)


def test_integrated_gradients_names_the_most_steps_then_the_most_tokens(client):
    cfg, path = minilm(client).cfg, "/api/v1/attribution"
    body = {"model": "minilm", "target": "hi", "method": "integrated_gradients"}
    with budget(client, work.attribution(cfg, 12, "integrated_gradients", 40, 3)):  # "hi": [CLS] hi [SEP]
        named_size_fits(client, path, {**body, "text": words(12)}, int, 64, 40, field="steps")
        at_32 = work.largest(lambda n: work.attribution(cfg, n, "integrated_gradients", 32, 3),
                             client.app.state.settings.work_budget * work.GIGA, 1, 100)
        assert at_32 > 12
        named_size_fits(client, path, {**body, "steps": 32}, words, at_32 + 5, at_32)


def test_gradient_x_input_names_the_most_tokens(client):
    cfg = minilm(client).cfg
    body = {"model": "minilm", "target": "hi", "method": "gradient_x_input"}
    with budget(client, work.attribution(cfg, 30, "gradient_x_input", 0, 3)):
        named_size_fits(client, "/api/v1/attribution", body, words, 100, 30)


def test_patching_names_the_most_tokens_under_the_same_budget(client):
    net = minilm(client).net
    with budget(client, 2 * patching.work(net, "heads", 20)):
        def pair(n: int) -> dict:
            return {"clean": words(n - 1) + " cat", "corrupted": words(n - 1) + " dog", "target": "heads"}
        for n, status in ((20, 200), (21, 422)):
            r = client.post("/api/v1/patch", json=pair(n))
            assert r.status_code == status, r.text
        error = r.json()["errors"][0]
        assert error["type"] == "patch_too_large" and error["ctx"] == {"tokens": 21, "max_tokens": 20}


def test_lens_and_generate_name_what_fits(local_client):
    model = local_client.app.state.hub.get("tiny-gpt2")[1]
    cfg = model.cfg
    with budget(local_client, work.lens(cfg, 20)):
        named_size_fits(local_client, "/api/v1/lens", {"model": "tiny-gpt2"}, lambda n: text_of(model, n), 40, 20)
    prompt = text_of(model, 10)
    with budget(local_client, work.generate(cfg, 10, 12)):
        over = refused(local_client.post("/api/v1/generate", json={"model": "tiny-gpt2", "text": prompt,
                                                                   "max_new_tokens": 40}), "max_new_tokens")
        assert over["ctx"]["largest"] == 12 and "at most 12" in over["msg"]
        for n, status in ((12, 200), (13, 422)):
            r = local_client.post("/api/v1/generate", json={"model": "tiny-gpt2", "text": prompt, "max_new_tokens": n})
            assert r.status_code == status, r.text
    with budget(local_client, work.generate(cfg, 10, 1)):  # not one new token after 30: the most prompt tokens
        named_size_fits(local_client, "/api/v1/generate", {"model": "tiny-gpt2", "max_new_tokens": 1},
                        lambda n: text_of(model, n), 30, 10)


def test_largest_inverts_an_increasing_cost():
    assert work.largest(lambda n: n * n, 50, 1, 100) == 7
    assert work.largest(lambda n: n * n, 0, 1, 100) == 0
    assert work.largest(lambda n: n, 1e9, 1, 100) == 100


def small(flops_of_steps, steps: int) -> float:
    """A job budget (GFLOP, per request) under which exactly `steps` steps fit: JOB_SHARE budgets."""
    return flops_of_steps(steps) / work.JOB_SHARE


LABS = [
    ("/api/v1/labs/induction/train", {"vocab": 8, "length": 8, "layers": 1, "heads": 1, "d_model": 8, "batch": 2,
                                      "eval_every": 100}, "steps",
     lambda n: work.induction(8, 8, 1, 8, 2, n)),
    ("/api/v1/labs/seq2seq/train", {"task": "dates", "hidden": 4, "batch": 2, "eval_every": 100}, "steps",
     lambda n: work.seq2seq(4, 32, 18, 10, 11, True, 2, n)),
    ("/api/v1/iris/train", {"batch": 120}, "epochs", lambda n: work.iris(n, 120, 4, 4, 8, 3)),
]


@pytest.mark.parametrize(("path", "body", "field", "estimate"), LABS, ids=[path for path, _, _, _ in LABS])
def test_a_training_job_names_the_most_steps_that_fit(client, path, body, field, estimate):
    with budget(client, small(estimate, 3)):
        over = refused(client.post(path, json={**body, field: 50}), field)
        assert over["ctx"]["largest"] == 3 and f"lower {field} to at most 3" in over["msg"], over
        started = client.post(path, json={**body, field: 3})
        assert started.status_code == 202 or started.status_code == 200, started.text
        assert client.delete(f"{path}/{started.json()['job']}").status_code == 204
        again = refused(client.post(path, json={**body, field: 4}), field)
        assert again["ctx"]["largest"] == 3


def test_the_labs_defaults_fit_the_default_budget_and_their_largest_settings_do_not():
    jobs = DEFAULT * work.JOB_SHARE * work.GIGA
    assert work.induction(64, 32, 2, 128, 64, 2000) < jobs < work.induction(512, 128, 4, 256, 256, 20_000)
    largest = work.seq2seq(256, 32, 30, 30, 26, True, 256, 20_000)
    assert work.seq2seq(96, 32, 30, 30, 26, True, 64, 1500) < jobs < largest
