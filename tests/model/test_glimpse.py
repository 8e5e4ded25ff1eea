"""The glimpse lab (model/lab/glimpse.py, glimpse_net.py, glimpse_data.py): the canvases by their definition, the
REINFORCE estimator against the exact gradient of the expected loss (every choice enumerated), Gumbel-max sampling
against the softmax (χ²), the straight-through gradient against the relaxed sample's, the soft attention against a
numpy computation of the additive scores, the reported gradient variance against the samples' variance computed
here, the settings' limits, and the same numbers for the same seed. Whether the defaults reach their accuracy, and
how fast, is measured by bench/glimpse.py (minutes, not a unit test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from model.errors import LabInputError
from model.lab.glimpse import (
    GRAD_REPEATS,
    Batch,
    CancelledReport,
    EvalReport,
    GlimpseConfig,
    GlimpseDoneReport,
    Training,
    gradient_estimates,
    objective,
    predict,
    temperature,
)
from model.lab.glimpse_data import (
    CELL,
    END,
    GRID,
    IMAGES,
    MAX_DIGITS,
    PAD,
    REGIONS,
    digits,
    draw,
    split,
)
from model.lab.glimpse_net import AdditiveScores, GlimpseNet, attend, gumbel, score_function_loss

TINY = GlimpseConfig(steps=4, batch=8, eval_every=2, channels=2, hidden=8)


# ---------------------------------------------------------------- the data


def test_the_digits_file_holds_1797_images_of_16_grey_levels_and_ten_labels():
    images, labels = digits()
    assert images.shape == (IMAGES, 8, 8) and labels.shape == (IMAGES,)
    assert images.min() == 0 and images.max() == 16
    assert sorted(set(labels.tolist())) == list(range(10))


def test_canvases_put_digits_in_distinct_cells_in_reading_order_with_an_end():
    images, labels = digits()
    pool = split(3).train
    canvases = draw(pool, 400, np.random.default_rng(0))
    targets = canvases.targets()
    assert set(canvases.counts.tolist()) == set(range(1, MAX_DIGITS + 1))
    for i in range(len(canvases)):
        k = int(canvases.counts[i])
        cells = canvases.cells[i, :k].tolist()
        assert len(set(cells)) == k and cells == sorted(cells)  # distinct, ascending = row by row, left to right
        assert canvases.cells[i, k:].tolist() == [-1] * (MAX_DIGITS - k)
        grid = canvases.pixels[i].reshape(GRID, CELL, GRID, CELL).transpose(0, 2, 1, 3)  # (row, col, 8, 8)
        for cell in range(REGIONS):
            block = grid[cell // GRID, cell % GRID]
            if cell in cells:
                slot = cells.index(cell)
                image = int(canvases.images[i, slot])
                assert image in pool and (block == images[image]).all()
                assert canvases.digits[i, slot] == labels[image]
            else:
                assert not block.any()
        assert targets[i].tolist() == [int(labels[canvases.images[i, s]]) for s in range(k)] + [END] + [PAD] * (
            MAX_DIGITS - k)


def test_the_splits_are_disjoint_in_digit_images_and_cover_them():
    parts = split(0)
    train, validation, test = (set(p.tolist()) for p in (parts.train, parts.validation, parts.test))
    assert not train & validation and not train & test and not validation & test
    assert len(train | validation | test) == IMAGES
    assert len(train) == round(0.7 * IMAGES) and len(validation) == round(0.15 * IMAGES)
    training = Training(TINY)
    for canvases, part in ((training.validation, validation), (training.test, test)):
        used = set(canvases.images[canvases.images >= 0].tolist())
        assert used <= part


# ---------------------------------------------------------------- the estimators

def tiny_problem(seed: int = 0):
    """3 regions, a fixed decoder state, a 4-class output read from the glimpsed region: loss ℓ(k)."""
    torch.manual_seed(seed)
    scores = AdditiveScores(state=2, keys=2, width=3)
    annotations = torch.randn(1, 3, 2)  # (B, R, K)
    s = torch.randn(1, 2)  # (B, Ds)
    readout = torch.randn(2, 4)
    target = torch.tensor([1])
    return scores, annotations, s, readout, target


def step_loss(context: torch.Tensor, readout: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(context @ readout, target, reduction="none")  # (B,)


@pytest.mark.parametrize("baseline", [0.0, -1.3])
def test_reinforce_mean_equals_the_exact_gradient_of_the_expected_loss(baseline):
    scores, annotations, s, readout, target = tiny_problem()
    params = list(scores.parameters())
    beta = 0.05
    # The exact gradient: E_k[ℓ(k)] − β H(p), every choice enumerated, by autograd.
    log_p = scores(s, scores.U(annotations))  # (1, 3)
    p = log_p.exp()[0]
    losses = torch.stack([step_loss(annotations[:, k], readout, target)[0] for k in range(3)])
    exact_objective = (p * losses).sum() + beta * (p * log_p[0]).sum()
    exact = torch.cat([g.reshape(-1) for g in torch.autograd.grad(exact_objective, params)])
    # The estimator, sampled N times at the same weights.
    n = 3000
    generator = torch.Generator().manual_seed(1)
    samples = []
    for _ in range(n):
        log_p = scores(s, scores.U(annotations))  # (1, 3)
        glimpse = attend("reinforce", log_p, annotations, sample=True, tau=1.0, noise=gumbel((1, 3), generator))
        loss = step_loss(glimpse.context, readout, target)  # (1,)
        surrogate = loss.mean() + score_function_loss(log_p[:, None], glimpse.choice[:, None], -loss[:, None],
                                                      torch.tensor([baseline]), beta, torch.ones(1, 1, dtype=bool))
        samples.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(surrogate, params)]))
    estimates = torch.stack(samples)  # (N, P)
    mean, error = estimates.mean(0), estimates.std(0) / math.sqrt(n)
    assert exact.abs().max() > 1e-3  # a gradient worth comparing
    assert ((mean - exact).abs() <= 4 * error + 1e-6).all(), (mean, exact, error)
    # A control: without the score-function term the hard glimpse gives W, U, v no gradient at all (zero); the
    # exact gradient is many standard errors away from zero, so the comparison above could fail.
    assert (exact.abs() > 10 * error).any()


def test_gumbel_max_samples_follow_the_softmax():
    log_p = torch.log_softmax(torch.tensor([[1.2, -0.3, 0.4, 2.0, -1.5]]), dim=-1)  # (1, 5)
    n = 20_000
    generator = torch.Generator().manual_seed(7)
    noise = gumbel((n, 5), generator)  # (N, 5)
    glimpse = attend("reinforce", log_p.expand(n, 5), torch.eye(5).expand(n, 5, 5), sample=True, tau=1.0,
                     noise=noise)
    counts = np.bincount(glimpse.choice.numpy(), minlength=5)
    p = np.exp(log_p[0].double().numpy())
    expected = p / p.sum() * n
    assert stats.chisquare(counts, expected).pvalue > 1e-3
    # the one-hot glimpse reads the chosen annotation
    assert torch.equal(glimpse.context.argmax(-1), glimpse.choice)
    # a control: the same χ² rejects uniform samples
    assert stats.chisquare(np.bincount(np.random.default_rng(0).integers(0, 5, n), minlength=5), expected).pvalue < 1e-6


def test_straight_through_gradient_equals_the_relaxed_samples_gradient():
    scores, annotations, s, readout, target = tiny_problem(2)
    tau = 0.7
    noise = gumbel((1, 3), torch.Generator().manual_seed(3))
    logits = torch.log_softmax(torch.randn(1, 3), -1).requires_grad_()
    glimpse = attend("straight_through", logits, annotations, sample=True, tau=tau, noise=noise)
    loss = step_loss(glimpse.context, readout, target).sum()
    (got,) = torch.autograd.grad(loss, logits)
    # forward: one region
    k = int((logits + noise).argmax())
    assert torch.equal(glimpse.weights.detach(), torch.nn.functional.one_hot(torch.tensor([k]), 3).float())
    assert torch.allclose(glimpse.context, annotations[:, k])
    # backward: the loss's gradient at the one-hot weights, carried by y_soft's Jacobian alone
    y_hard = torch.nn.functional.one_hot(torch.tensor([k]), 3).float().requires_grad_()
    (upstream,) = torch.autograd.grad(step_loss(y_hard @ annotations[0], readout, target).sum(), y_hard)
    y_soft = torch.softmax((logits + noise) / tau, dim=-1)
    (want,) = torch.autograd.grad(y_soft, logits, grad_outputs=upstream)
    assert torch.allclose(got, want, atol=1e-6) and want.abs().max() > 1e-4


def test_soft_attention_weights_equal_numpy_additive_scores_from_the_modules_parameters():
    training = Training(TINY)
    net = training.model
    batch = Batch.of(training.validation.take(list(range(6))))
    with torch.no_grad():
        h = net.encoder(batch.pixels).numpy().astype(np.float64)  # (B, R, K)
        decoded = net(batch.pixels, batch.inputs)
    W, U, v = (p.detach().numpy().astype(np.float64) for p in net.attention_parameters())
    s = decoded.states.numpy().astype(np.float64)  # (B, T, hidden)
    scores = np.tanh((s @ W.T)[:, :, None, :] + (h @ U.T)[:, None, :, :]) @ v[0]  # (B, T, R)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    np.testing.assert_allclose(decoded.weights.numpy(), weights, atol=1e-6)
    np.testing.assert_allclose(decoded.log_p.exp().numpy(), weights, atol=1e-6)


def test_the_reported_grad_variance_is_the_sample_variance_of_the_estimates():
    training = Training(GlimpseConfig(method="reinforce", steps=3, batch=8, eval_every=3, channels=2, hidden=8))
    reports = list(training.run())
    last = reports[-2]
    assert isinstance(last, EvalReport) and last.step == 3
    # the same estimates, drawn here in the documented order: one generator seeded from the seed and step
    net, fixed = training.model, training.fixed
    generator = torch.Generator().manual_seed(training.config.seed * 20_000 + 3)
    annotations = net.encoder(fixed.pixels).detach()
    rows = []
    for _ in range(GRAD_REPEATS):
        total = objective(net, annotations, fixed, tau=training.tau, baseline=training.baseline,
                          entropy_bonus=training.config.entropy_bonus, generator=generator).total
        rows.append(np.concatenate([g.numpy().ravel() for g in torch.autograd.grad(total,
                                                                                    net.attention_parameters())]))
    samples = np.array(rows, dtype=np.float64)  # (R, P)
    assert last.grad_variance == pytest.approx(samples.var(axis=0, ddof=1).mean(), rel=1e-4)
    assert last.grad_mean_square == pytest.approx((samples.mean(axis=0) ** 2).mean(), rel=1e-4)
    assert last.grad_variance > 0


def test_soft_attention_has_no_gradient_variance_and_hard_methods_do():
    for method in ("soft", "reinforce", "gumbel", "straight_through"):
        training = Training(GlimpseConfig(method=method, steps=1, channels=2, hidden=8))
        estimates = gradient_estimates(training.model, training.fixed, tau=1.0, baseline=training.baseline,
                                       entropy_bonus=0.01, repeats=4, generator=torch.Generator().manual_seed(0))
        spread, signal = float(estimates.var(0).mean()), float(estimates.mean(0).square().mean())
        assert signal > 0
        assert (spread <= 1e-12 * signal) if method == "soft" else (spread > 1e-2 * signal), (method, spread, signal)


def test_the_temperature_falls_geometrically_from_tau_start_to_tau_end():
    config = GlimpseConfig(method="gumbel", steps=101, tau_start=2.0, tau_end=0.5)
    assert temperature(config, 1) == pytest.approx(2.0) and temperature(config, 101) == pytest.approx(0.5)
    assert temperature(config, 51) == pytest.approx(1.0)


# ---------------------------------------------------------------- training


@pytest.mark.parametrize("method", ["soft", "reinforce", "gumbel", "straight_through"])
def test_the_same_seed_gives_the_same_reports(method):
    config = GlimpseConfig(method=method, steps=2, batch=4, eval_every=1, channels=2, hidden=8)
    first, second = list(Training(config).run()), list(Training(config).run())
    assert len(first) == 4 and isinstance(first[-1], GlimpseDoneReport)
    for a, b in zip(first[:-1], second[:-1], strict=True):
        assert isinstance(a, EvalReport) and isinstance(b, EvalReport)
        assert (a.loss, a.eval_loss, a.accuracy, a.entropy, a.grad_variance) == (
            b.loss, b.eval_loss, b.accuracy, b.entropy, b.grad_variance)
        assert all(torch.equal(x.regions, y.regions) for x, y in zip(a.glimpses, b.glimpses, strict=True))
    report = first[1]
    assert len(report.glimpses) == 4 and report.glimpses[0].pixels.shape == (24, 24)
    for watched in report.glimpses:
        assert watched.regions.shape[1] == REGIONS
        assert torch.allclose(watched.regions.sum(-1), torch.ones(len(watched.regions)))
        if method != "soft":  # the hard methods' greedy glimpse is one cell
            assert set(watched.regions.unique().tolist()) <= {0.0, 1.0}
    assert (report.tau is None) == (method in ("soft", "reinforce"))


def test_a_short_training_lowers_the_loss():
    reports = [r for r in Training(GlimpseConfig(steps=60, eval_every=60, batch=32, channels=4, hidden=16)).run()
               if isinstance(r, EvalReport)]
    assert reports[-1].eval_loss < reports[0].eval_loss - 0.3


def test_run_stops_when_asked_and_predict_reads_a_canvas():
    training = Training(TINY)
    reports = list(training.run(stop=lambda: True))
    assert isinstance(reports[-1], CancelledReport) and reports[-1].step == 0
    prediction = predict(training, training.test.pixels[0])
    assert len(prediction.output) <= MAX_DIGITS and prediction.regions.shape[1] == REGIONS
    with pytest.raises(LabInputError) as error:
        predict(training, np.zeros((8, 8)))
    assert error.value.loc == ("canvas",)
    with pytest.raises(LabInputError):
        predict(training, np.full((24, 24), 17.0))


@pytest.mark.parametrize("field, value", [
    ("method", "hardest"), ("steps", 0), ("steps", 20_001), ("seed", -1), ("batch", 0), ("batch", 257),
    ("lr", 0.0), ("lr", math.nan), ("eval_every", 0), ("channels", 0), ("hidden", 3), ("entropy_bonus", -0.1),
    ("entropy_bonus", 2.0), ("tau_start", 0.0), ("tau_end", 11.0), ("baseline", 1),
])
def test_bad_settings_name_their_field(field, value):
    with pytest.raises(LabInputError) as error:
        GlimpseConfig(**{field: value})
    assert error.value.loc == (field,) and error.value.type == "lab_setting"


def test_an_unknown_method_is_refused_by_the_network_too():
    with pytest.raises(ValueError):
        GlimpseNet("hardest", 2, 8, 8, 8)
