"""The Informer lab (model/lab/informer.py, informer_net.py, informer_data.py) on statsmodels' real CO₂ and sunspot
files: the batched ProbSparse and full attentions, the distilling layer and the baselines against references
written here (numpy, torch.nn.functional), the split in time and the training-only scaling, the runs' reports, watch
and the settings' limits. Whether the defaults meet the lab's targets is measured by bench/informer.py."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import math
from importlib import resources

import numpy as np
import pytest
import torch

from model.errors import LabInputError
from model.lab import informer_data as data
from model.lab.informer import EvalReport, InformerConfig, InformerDone, Training, watch
from model.lab.informer import test_window_count as window_count  # a name pytest does not collect
from model.lab.informer_net import Distil, EncoderLayer, LayerAttention, draw_keys, full_attention, probsparse_attention

SMALL = InformerConfig(window=64, horizon=8, layers=3, heads=2, d_model=8, factor=2, steps=24, batch=8,
                       eval_every=8, seed=3)


def read_csv(folder: str, file: str) -> list[list[str]]:
    text = (resources.files("statsmodels") / "datasets" / folder / file).read_text()
    return list(csv.reader(text.splitlines()))[1:]


def co2_reference() -> np.ndarray:
    """The weekly CO₂ values, gaps filled linearly between the neighbouring measurements (written out here)."""
    raw = [float(row[1]) if row[1] else None for row in read_csv("co2", "co2.csv")]
    filled = []
    for i, value in enumerate(raw):
        if value is not None:
            filled.append(value)
            continue
        before = max(j for j in range(i) if raw[j] is not None)
        after = min(j for j in range(i + 1, len(raw)) if raw[j] is not None)
        share = (i - before) / (after - before)
        filled.append(raw[before] * (1 - share) + raw[after] * share)  # type: ignore[operator]
    return np.array(filled)


def test_the_series_are_statsmodels_files_with_the_gaps_filled():
    co2 = data.load_series("co2")
    assert np.allclose(co2.values, co2_reference(), rtol=0, atol=1e-9)
    assert (co2.name, co2.unit, co2.season, co2.step_label) == ("co2", "ppm", 52, "week")
    first = datetime.date(1958, 3, 29)
    assert co2.times[0] == pytest.approx(1958 + (first - datetime.date(1958, 1, 1)).days / 365)
    assert np.all(np.diff(co2.times) > 0) and len(co2.times) == len(co2.values) == 2284
    sunspots = data.load_series("sunspots")
    rows = read_csv("sunspots", "sunspots.csv")
    assert sunspots.values.tolist() == [float(r[1]) for r in rows] and sunspots.times.tolist() == list(
        range(1700, 2009))
    assert (sunspots.season, sunspots.step_label) == (11, "year")
    assert sorted(data.SERIES) == ["co2", "sunspots"] and data.SERIES["co2"] is co2


def numpy_probsparse(q, k, v, scale, factor, sampled):
    """Per batch item and head: M from the sampled keys, the top-u queries, softmax rows for them, mean of V else."""
    b, h, length, _ = q.shape
    u = min(factor * math.ceil(math.log(length)), length)
    out = np.zeros(v.shape)
    measures = np.zeros((b, h, length))
    actives = np.zeros((b, h, u), dtype=np.int64)
    for i in range(b):
        for j in range(h):
            for row in range(length):
                on_sample = np.array([q[i, j, row] @ k[i, j, key] for key in sampled[row]])
                measures[i, j, row] = on_sample.max() - on_sample.sum() / length
            top = np.sort(np.argsort(-measures[i, j], kind="stable")[:u])
            actives[i, j] = top
            out[i, j] = v[i, j].mean(axis=0)
            for row in top:
                scores = (k[i, j] @ q[i, j, row]) * scale
                weights = np.exp(scores - scores.max())
                out[i, j, row] = (weights / weights.sum()) @ v[i, j]
    return out, measures, actives


@pytest.mark.parametrize("length", [12, 37])
def test_batched_probsparse_equals_a_numpy_reference(length):
    g = torch.Generator().manual_seed(length)
    q, k, v = (torch.randn(2, 3, length, 4, generator=g) for _ in range(3))
    sampled = draw_keys(length, length, 2, torch.Generator().manual_seed(5))
    assert sampled.shape == (length, min(2 * math.ceil(math.log(length)), length))
    out, measure, active, _ = probsparse_attention(q, k, v, 0.5, 2, sampled)
    want, want_measure, want_active = numpy_probsparse(q.double().numpy(), k.double().numpy(), v.double().numpy(),
                                                       0.5, 2, sampled.numpy())
    assert active.tolist() == want_active.tolist()
    assert np.abs(measure.numpy() - want_measure).max() <= 1e-5
    assert np.abs(out.numpy() - want).max() <= 1e-6


def test_full_attention_equals_torch_scaled_dot_product_attention():
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 20, 8, generator=g, dtype=torch.float64) for _ in range(3))
    out, weights = full_attention(q, k, v, 1 / math.sqrt(8))
    assert torch.allclose(out, torch.nn.functional.scaled_dot_product_attention(q, k, v), atol=1e-12)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 3, 20, dtype=torch.float64))


def test_probsparse_with_every_query_active_is_full_attention():
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(1, 2, 9, 4, generator=g, dtype=torch.float64) for _ in range(3))
    factor = 5  # u = 5·⌈ln 9⌉ = 15 ≥ 9
    out, _, active, _ = probsparse_attention(q, k, v, 0.5, factor, draw_keys(9, 9, factor, torch.Generator()))
    assert active.tolist() == [[list(range(9))] * 2]
    assert torch.allclose(out, full_attention(q, k, v, 0.5)[0], atol=1e-12)


@pytest.mark.parametrize("attention", ["probsparse", "full"])
def test_an_encoder_layers_traced_weights_are_the_weights_its_output_uses(attention):
    torch.manual_seed(1)
    layer = EncoderLayer(8, 2, attention, 2)
    x = torch.randn(2, 30, 8)
    trace: list[LayerAttention] = []
    with torch.no_grad():
        out = layer.attend(x, torch.Generator().manual_seed(0), trace)[0].numpy()
    (seen,) = trace
    a = layer.attention
    w = {name: (getattr(a, name).weight.detach().numpy(), getattr(a, name).bias.detach().numpy())
         for name in ("query", "key", "value", "output")}
    x0 = x[0].numpy()
    v = x0 @ w["value"][0].T + w["value"][1]  # (L, D): heads side by side, 4 wide each
    mixed = np.concatenate([seen.weights[h].numpy() @ v[:, 4 * h: 4 * h + 4] for h in range(2)], axis=1)
    assert np.abs(mixed @ w["output"][0].T + w["output"][1] - out).max() <= 1e-5
    if attention == "probsparse":  # the active rows: the softmax of their scaled scores
        q, k = (x0 @ w[n][0].T + w[n][1] for n in ("query", "key"))
        for h in range(2):
            for row in seen.active[h].tolist():  # type: ignore[union-attr]
                scores = k[:, 4 * h: 4 * h + 4] @ q[row, 4 * h: 4 * h + 4] / 2.0
                softmax = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
                assert np.abs(seen.weights[h, row].numpy() - softmax).max() <= 1e-6


@pytest.mark.parametrize("length", [15, 16])
@pytest.mark.parametrize("training", [True, False])
def test_the_distilling_layer_halves_the_length_as_functional_calls_do(length, training):
    f = torch.nn.functional
    torch.manual_seed(0)
    layer = Distil(6)
    layer.norm.running_mean.uniform_(-1, 1)
    layer.norm.running_var.uniform_(0.5, 2)
    layer.train(training)
    x = torch.randn(3, length, 6, dtype=torch.float32)
    got = layer(x)
    y = f.conv1d(f.pad(x.transpose(1, 2), (1, 1), mode="circular"), layer.conv.weight, layer.conv.bias)
    if training:
        mean, var = y.mean(dim=(0, 2), keepdim=True), y.var(dim=(0, 2), unbiased=False, keepdim=True)
    else:
        mean, var = layer.norm.running_mean[None, :, None], layer.norm.running_var[None, :, None]
    norm = layer.norm
    y = (y - mean) / torch.sqrt(var + norm.eps) * norm.weight[None, :, None] + norm.bias[None, :, None]
    want = f.max_pool1d(f.elu(y), 3, stride=2, padding=1).transpose(1, 2)
    assert got.shape == (3, math.ceil(length / 2), 6)
    assert torch.allclose(got, want, atol=1e-5)


def reference_baselines(config: InformerConfig) -> tuple[float, float]:
    """The test windows' seasonal-naive and ridge-linear MSE, from the CSV's values, written out here."""
    values = co2_reference() if config.series == "co2" else np.array(
        [float(r[1]) for r in read_csv("sunspots", "sunspots.csv")])
    season = 52 if config.series == "co2" else 11
    n, L, H = len(values), config.window, config.horizon
    train_end, validation_end = int(n * 0.7), int(n * 0.8)
    mean, std = values[:train_end].mean(), values[:train_end].std()
    train = [s for s in range(n) if s + L + H <= train_end]
    test = [s for s in range(n) if s + L >= validation_end and s + L + H <= n]
    naive_errors = []
    for s in test:
        for j in range(H):
            t = s + L + j
            back = season * (j // season + 1)  # the last whole season before the forecast, repeated
            naive_errors.append((values[t - back] - values[t]) ** 2)
    x = np.array([np.append((values[s: s + L] - mean) / std, 1.0) for s in train])
    y = np.array([(values[s + L: s + L + H] - mean) / std for s in train])
    penalty = np.eye(L + 1) * data.RIDGE
    penalty[L, L] = 0.0  # no penalty on the constant
    weights = np.linalg.solve(x.T @ x + penalty, x.T @ y)
    errors = [((np.append((values[s: s + L] - mean) / std, 1.0) @ weights) * std + mean - values[s + L: s + L + H])
              ** 2 for s in test]
    return float(np.mean(naive_errors)), float(np.mean(errors))


@pytest.mark.parametrize("config", [SMALL, InformerConfig(series="sunspots", window=40, horizon=15)])
def test_the_baselines_equal_references_on_the_test_windows(config):
    naive, linear = Training(config).baselines()
    want_naive, want_linear = reference_baselines(config)
    assert naive == pytest.approx(want_naive, rel=1e-12)
    assert linear == pytest.approx(want_linear, rel=1e-6)


def test_the_scaling_is_fitted_on_the_training_part_only():
    values = data.load_series("co2").values.copy()
    before = data.fit_scaling(values)
    train_end, validation_end = data.part_bounds(len(values))
    values[validation_end + 5] += 1000.0  # a test-part value
    values[train_end + 3] -= 1000.0  # a validation-part value
    assert data.fit_scaling(values) == before
    values[train_end - 1] += 1.0  # the training part's last value
    assert data.fit_scaling(values) != before
    assert before.mean == pytest.approx(values[:train_end].mean() - 1 / train_end)


def test_the_split_is_in_time_and_no_window_reaches_into_a_later_part():
    n = len(data.load_series("co2").values)
    train_end, validation_end = data.part_bounds(n)
    assert (train_end, validation_end) == (int(n * 0.7), int(n * 0.8))
    window, horizon = 96, 24
    bounds = {"train": (0, train_end), "validation": (train_end, validation_end), "test": (validation_end, n)}
    for part, (first, end) in bounds.items():
        starts = data.part_starts(n, window, horizon, part)
        assert len(starts) == end - max(first, window) - horizon + 1
        assert starts.min() >= 0 and np.all(np.diff(starts) == 1)
        assert np.all(starts + window + horizon <= end) and np.all(starts + window >= first)
    assert window_count(InformerConfig()) == len(data.part_starts(n, window, horizon, "test"))


def strip_seconds(reports):
    return [dataclasses.replace(r, seconds=0.0) for r in reports]


@pytest.mark.parametrize("attention", ["probsparse", "full"])
def test_a_seed_gives_the_same_reports_and_training_lowers_the_validation_mse(attention):
    config = dataclasses.replace(SMALL, attention=attention)
    first = list(Training(config).run())
    assert strip_seconds(first) == strip_seconds(list(Training(config).run()))
    evals = [r for r in first if isinstance(r, EvalReport)]
    assert [r.step for r in evals] == [0, 8, 16, 24] and evals[0].train_mse is None
    assert all(r.train_mse is not None and r.train_mse > 0 for r in evals[1:])
    assert evals[-1].val_mse < 0.5 * evals[0].val_mse
    done = first[-1]
    assert isinstance(done, InformerDone) and done.steps == 24 and done.test_mse > 0
    assert strip_seconds(list(Training(dataclasses.replace(config, seed=4)).run())) != strip_seconds(first)


def test_a_cancelled_run_ends_with_its_last_step():
    reports = list(Training(SMALL).run(stop=lambda: True))
    assert reports[-1].step == 0 and len(reports) == 2  # type: ignore[union-attr]


@pytest.mark.parametrize("attention", ["probsparse", "full"])
def test_watch_shows_each_layers_attention_on_a_halving_length(attention):
    config = dataclasses.replace(SMALL, attention=attention)
    training = Training(config)
    for _ in training.run():
        pass
    watched = watch(training.model, config, 7)
    assert [layer.length for layer in watched.layers] == [64, 32, 16]
    values = data.load_series("co2").values
    start = int(data.part_starts(len(values), 64, 8, "test")[7])
    assert watched.start == start and watched.history == values[start: start + 64].tolist()
    assert watched.truth == values[start + 64: start + 72].tolist()
    assert watched.naive == values[start + 64 - 52: start + 72 - 52].tolist()
    assert len(watched.times) == 72 and len(watched.forecast) == 8
    for layer in watched.layers:
        assert layer.weights.shape == (2, layer.length, layer.length)
        assert torch.allclose(layer.weights.sum(-1), torch.ones(2, layer.length), atol=1e-5)
        if attention == "full":
            assert layer.measure is None and layer.active is None
            continue
        assert layer.measure is not None and layer.active is not None
        u = min(2 * math.ceil(math.log(layer.length)), layer.length)
        assert layer.active.shape == (2, u) and layer.measure.shape == (2, layer.length)
        assert int(layer.active.min()) >= 0 and int(layer.active.max()) < layer.length
        assert torch.all(layer.active.diff(dim=-1) > 0)
        lazy = torch.ones(2, layer.length, dtype=torch.bool).scatter_(1, layer.active, False)
        assert torch.allclose(layer.weights[lazy], torch.full_like(layer.weights[lazy], 1 / layer.length))
    again = watch(training.model, config, 7)
    assert again.forecast == watched.forecast and training.model.training  # the same sample; the mode restored
    with pytest.raises(LabInputError) as caught:
        watch(training.model, config, window_count(config))
    assert caught.value.loc == ("index",) and caught.value.ctx == {"min": 0, "max": window_count(config) - 1}


@pytest.mark.parametrize(("settings", "field"), [
    ({"series": "nile"}, "series"), ({"attention": "linear"}, "attention"), ({"window": 4}, "window"),
    ({"window": 40}, "window"), ({"window": 1590}, "window"), ({"series": "sunspots", "window": 9}, "window"),
    ({"series": "sunspots", "window": 200}, "window"), ({"series": "sunspots", "horizon": 40}, "horizon"),
    ({"horizon": 0}, "horizon"), ({"layers": 5}, "layers"), ({"heads": 0}, "heads"), ({"d_model": 30}, "d_model"),
    ({"factor": 0}, "factor"), ({"steps": 0}, "steps"), ({"batch": 300}, "batch"), ({"lr": 0.0}, "lr"),
    ({"lr": math.nan}, "lr"), ({"seed": -1}, "seed"), ({"eval_every": 0}, "eval_every"),
])
def test_bad_settings_name_their_field(settings, field):
    with pytest.raises(LabInputError) as caught:
        InformerConfig(**settings)
    assert caught.value.type == "lab_setting" and caught.value.loc == (field,)
    assert set(caught.value.ctx or {}) == {"min", "max"}
