"""The Iris transformer: its data and split, every layer's backward against torch autograd in float64,
the optimizers against updates computed by hand, reproducibility and the accuracy it reaches."""

import csv
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from model.errors import IrisInputError
from model.lab import iris, layers

TOLERANCE = 1e-10  # relative: max |ours - autograd| / max |autograd|


def relative(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours - reference).abs().max() / reference.abs().max())


def rand(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---- the data -------------------------------------------------------------------------------------


def test_the_csv_is_fishers_iris_with_a_header():
    with iris.DATA_FILE.open(newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["sepal_length", "sepal_width", "petal_length", "petal_width", "species"]
    body = rows[1:]
    assert len(body) == 150
    assert [sum(r[4] == name for r in body) for name in ("setosa", "versicolor", "virginica")] == [50, 50, 50]
    assert body[0] == ["5.1", "3.5", "1.4", "0.2", "setosa"]
    assert body[149] == ["5.9", "3.0", "5.1", "1.8", "virginica"]
    # the whole data set's means, as published: 5.843, 3.057, 3.758, 1.199 cm
    means = np.array([[float(x) for x in r[:4]] for r in body]).mean(axis=0)
    assert np.round(means, 3).tolist() == [5.843, 3.057, 3.758, 1.199]


def test_the_split_is_stratified_and_fixed():
    data = iris.load()
    train, test = data.train.tolist(), data.test.tolist()
    assert len(train) == 120 and len(test) == 30
    assert sorted(train + test) == list(range(150))
    assert train == sorted(train) and test == sorted(test)
    labels = data.labels.tolist()
    assert [sum(labels[i] == c for i in test) for c in range(3)] == [10, 10, 10]
    assert [sum(labels[i] == c for i in train) for c in range(3)] == [40, 40, 40]
    # fixed: the same rows every time (torch.randperm with SPLIT_SEED 0, see model/lab/iris.py)
    assert test == [6, 7, 10, 17, 21, 29, 33, 37, 39, 44, 53, 59, 62, 69, 71, 76, 81, 83, 95, 99, 105, 107, 108,
                    114, 127, 130, 135, 140, 143, 144]


def test_standardisation_uses_the_training_split_only():
    data = iris.load()
    raw = np.genfromtxt(iris.DATA_FILE, delimiter=",", skip_header=1, usecols=(0, 1, 2, 3))  # (150, 4)
    train = raw[np.array(data.train.tolist())]
    mean, std = train.mean(axis=0), train.std(axis=0)  # population std, as documented
    np.testing.assert_allclose(data.mean.numpy(), mean, rtol=1e-13)
    np.testing.assert_allclose(data.std.numpy(), std, rtol=1e-13)
    assert not np.allclose(mean, raw.mean(axis=0))  # the whole data set's mean would differ
    training = iris.Training(iris.TrainConfig(epochs=1))
    np.testing.assert_allclose(training.x.numpy(), (raw - mean) / std, rtol=1e-12, atol=1e-12)


# ---- each layer's backward against autograd -------------------------------------------------------------


def test_dense_backward_matches_autograd():
    x, w, b, up = rand(5, 4, seed=1), rand(4, 6, seed=2), rand(6, seed=3), rand(5, 6, seed=4)
    d_x, d_w, d_b = layers.dense_backward(x, w, up)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    (xr @ wr + br).backward(up)
    for ours, ref in ((d_x, xr.grad), (d_w, wr.grad), (d_b, br.grad)):
        assert relative(ours, ref) <= TOLERANCE
    torch.testing.assert_close(layers.dense(x, w, b), x @ w + b, rtol=0, atol=0)


def test_relu_backward_matches_autograd():
    x, up = rand(6, 32, seed=5), rand(6, 32, seed=6)
    xr = x.clone().requires_grad_()
    torch.relu(xr).backward(up)
    assert relative(layers.relu_backward(x, up), xr.grad) <= TOLERANCE
    assert torch.equal(layers.relu(x), torch.relu(x))
    assert (layers.relu_backward(x, up)[x < 0] == 0).all()


def test_mean_pool_backward_matches_autograd():
    x, up = rand(3, 4, 8, seed=7), rand(3, 8, seed=8)
    xr = x.clone().requires_grad_()
    xr.mean(dim=1).backward(up)
    assert relative(layers.mean_tokens_backward(up, 4), xr.grad) <= TOLERANCE
    torch.testing.assert_close(layers.mean_tokens(x), x.mean(dim=1))


def test_softmax_cross_entropy_and_its_backward_match_torch():
    logits, labels = rand(7, 3, seed=9) * 3, torch.tensor([0, 2, 1, 1, 0, 2, 2])
    loss, probabilities = layers.softmax_cross_entropy(logits, labels)
    lr = logits.clone().requires_grad_()
    reference = F.cross_entropy(lr, labels)  # mean over the batch
    reference.backward()
    assert abs(float(loss) - reference.item()) <= TOLERANCE * abs(reference.item())
    assert relative(layers.softmax_cross_entropy_backward(probabilities, labels), lr.grad) <= TOLERANCE
    big = torch.tensor([[1000.0, 0.0, -1000.0]], dtype=torch.float64)  # no overflow with large logits
    loss_big, _ = layers.softmax_cross_entropy(big, torch.tensor([1]))
    assert float(loss_big) == pytest.approx(1000.0)


def reference_network(net: iris.IrisTransformer, x: torch.Tensor, labels: torch.Tensor):
    """The same network written with torch ops (SDPA for the attention) on leaf copies of its parameters."""
    params = {name: p.clone().requires_grad_() for name, p in net.parameters().items()}
    hidden = torch.relu(x @ params["embed.weight"] + params["embed.bias"]).reshape(-1, 4, 8)  # (B, 4, 8)

    def heads(name: str) -> torch.Tensor:
        y = F.linear(hidden, params[f"attention.{name}.weight"], params[f"attention.{name}.bias"])  # (B, 4, 8)
        return y.reshape(-1, 4, 2, 4).transpose(1, 2)  # (B, 2, 4, 4)

    mixed = F.scaled_dot_product_attention(heads("query"), heads("key"), heads("value"))  # (B, 2, 4, 4)
    joined = mixed.transpose(1, 2).reshape(-1, 4, 8)  # (B, 4, 8)
    out = F.linear(joined, params["attention.output.weight"], params["attention.output.bias"])
    logits = out.mean(dim=1) @ params["classifier.weight"] + params["classifier.bias"]  # (B, 3)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    return loss, {name: p.grad for name, p in params.items()}


def our_gradients(net: iris.IrisTransformer, x: torch.Tensor, labels: torch.Tensor):
    logits, cache = net.forward(x)
    loss, probabilities = layers.softmax_cross_entropy(logits, labels)
    return loss, net.backward(cache, layers.softmax_cross_entropy_backward(probabilities, labels))


@pytest.mark.parametrize("seed", [0, 3, 11])
def test_the_whole_networks_gradients_match_autograd(seed):
    net = iris.IrisTransformer(seed)
    data = iris.load()
    rows = data.train[torch.randperm(120, generator=torch.Generator().manual_seed(seed))[:16]]
    x, labels = data.standardise(data.rows[rows]), data.labels[rows]
    loss, ours = our_gradients(net, x, labels)
    ref_loss, reference = reference_network(net, x, labels)
    assert abs(float(loss) - ref_loss.item()) <= TOLERANCE * ref_loss.item()
    assert set(ours) == set(reference) == set(net.parameters())
    # b_k adds q_i . b_k to every score of row i, which softmax ignores: its gradient is 0 (up to rounding)
    zero = "attention.key.bias"
    assert float(reference[zero].abs().max()) < 1e-15 and float(ours[zero].abs().max()) < 1e-15
    deviations = {name: relative(ours[name], reference[name]) for name in reference if name != zero}
    assert max(deviations.values()) <= TOLERANCE, deviations
    for name, g in ours.items():
        assert g.shape == net.parameters()[name].shape


def test_the_gradient_comparison_can_fail():
    """Control: the reference sees one weight changed by 1e-3 and the comparison fails."""
    net = iris.IrisTransformer(0)
    data = iris.load()
    x, labels = data.standardise(data.rows[data.train[:16]]), data.labels[data.train[:16]]
    _, ours = our_gradients(net, x, labels)
    net.attention.key.weight.data[0, 0] += 1e-3
    _, reference = reference_network(net, x, labels)
    assert max(relative(ours[name], reference[name]) for name in reference if name != "attention.key.bias") > 1e-6


# ---- the optimizers against updates computed by hand ---------------------------------------------------------


def test_sgd_step_by_hand():
    p = torch.tensor([1.0, -2.0], dtype=torch.float64)
    layers.SGD(lr=0.1).step({"p": p}, {"p": torch.tensor([0.5, 0.1], dtype=torch.float64)})
    assert p.tolist() == pytest.approx([1.0 - 0.05, -2.0 - 0.01], abs=1e-15)


def test_adam_two_steps_by_hand():
    p = torch.tensor([1.0, -2.0], dtype=torch.float64)
    adam = layers.Adam(lr=0.01)
    adam.step({"p": p}, {"p": torch.tensor([0.5, 0.1], dtype=torch.float64)})
    # step 1: m = 0.1 g, v = 0.001 g^2; m / (1 - 0.9) = g and v / (1 - 0.999) = g^2, so p -= 0.01 g / (|g| + 1e-8)
    step1 = [1.0 - 0.01 * 0.5 / (0.5 + 1e-8), -2.0 - 0.01 * 0.1 / (0.1 + 1e-8)]
    assert p.tolist() == pytest.approx(step1, abs=1e-15)
    adam.step({"p": p}, {"p": torch.tensor([-0.25, 0.3], dtype=torch.float64)})
    # step 2, first entry: m = 0.9 * 0.05 + 0.1 * -0.25 = 0.02; v = 0.999 * 0.00025 + 0.001 * 0.0625 = 0.00031225
    m_hat = 0.02 / (1 - 0.9**2)
    v_hat = 0.00031225 / (1 - 0.999**2)
    # second entry: m = 0.9 * 0.01 + 0.1 * 0.3 = 0.039; v = 0.999 * 0.00001 + 0.001 * 0.09 = 0.00009999
    m_hat2 = 0.039 / (1 - 0.9**2)
    v_hat2 = 0.00009999 / (1 - 0.999**2)
    step2 = [step1[0] - 0.01 * m_hat / (math.sqrt(v_hat) + 1e-8), step1[1] - 0.01 * m_hat2 / (math.sqrt(v_hat2) + 1e-8)]
    assert p.tolist() == pytest.approx(step2, abs=1e-14)


# ---- training -------------------------------------------------------------------------------------------


@pytest.fixture
def one_thread():
    """Training's tensors are tiny: with two intra-op threads every product pays a fork and join (the server's
    job threads use one, app/jobs/threads.py). Restored afterwards for the other tests."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def numbers(reports):
    return [(r.epoch, r.loss, r.train_accuracy, r.test_accuracy, r.attention.tolist()) for r in reports[:-1]]


def test_training_is_reproducible_for_a_seed(one_thread):
    config = iris.TrainConfig(epochs=6, seed=5, batch=10)
    first, second = iris.train(config), iris.train(config)
    assert numbers(first) == numbers(second)
    assert first[-1].confusion.tolist() == second[-1].confusion.tolist()
    other = iris.train(iris.TrainConfig(epochs=6, seed=6, batch=10))
    assert numbers(other) != numbers(first)


def test_the_reports_epoch_by_epoch(one_thread):
    reports = iris.train(iris.TrainConfig(epochs=4, watch=29, optimizer="sgd", lr=0.1, batch=120))
    epochs, done = reports[:-1], reports[-1]
    assert [r.epoch for r in epochs] == [0, 1, 2, 3, 4]
    assert isinstance(done, iris.DoneReport)
    for r in epochs:
        assert r.attention.shape == (2, 4, 4)
        torch.testing.assert_close(r.attention.sum(dim=-1), torch.ones(2, 4, dtype=torch.float64))
    assert epochs[4].loss < epochs[0].loss  # batch 120: one gradient step per epoch, on the whole split
    assert int(done.confusion.sum()) == 30
    assert done.confusion.diagonal().sum() / 30 == pytest.approx(done.test_accuracy)
    assert done.confusion.sum(dim=1).tolist() == [10, 10, 10]  # rows: the true class


def test_a_stopped_run_reports_the_last_finished_epoch(one_thread):
    batches = iter(range(10_000))
    stopped_after = 2 * 8 + 3  # two whole epochs of 8 batches (120 / 16), then 3 batches of the third
    reports = list(iris.Training(iris.TrainConfig(epochs=50)).run(lambda: next(batches) >= stopped_after))
    assert [r.epoch for r in reports[:-1]] == [0, 1, 2]
    assert isinstance(reports[-1], iris.CancelledReport) and reports[-1].epoch == 2


def test_default_training_reaches_93_percent_on_seed_0(one_thread):
    done = iris.train()[-1]  # epochs 300, lr 0.01, adam, batch 16, seed 0
    assert isinstance(done, iris.DoneReport)
    assert done.test_accuracy >= 28 / 30


def test_predict_and_trace():
    training = iris.Training(iris.TrainConfig(epochs=1))
    prediction = iris.predict(training.latest, [5.1, 3.5, 1.4, 0.2])
    assert float(prediction.probabilities.sum()) == pytest.approx(1.0, abs=1e-12)
    assert prediction.epoch == 0
    trace = prediction.trace
    tokens = trace["steps"]["input"]["q"]
    assert tokens.shape == (4, 8) and (tokens >= 0).all()  # after ReLU
    assert trace["scale"] == 0.5 and trace["n_heads"] == 2 and trace["d_model"] == 8
    assert set(trace["weights"]) == set(trace["biases"]) == {"q", "k", "v", "o"}


@pytest.mark.parametrize(
    "kwargs, loc, message",
    [
        ({"epochs": 0}, ("epochs",), "epochs is 0; send 1 to 2000"),
        ({"batch": 121}, ("batch",), "batch is 121; send 1 to 120"),
        ({"watch": 30}, ("watch",), "watch is 30; send 0 to 29"),
        ({"lr": 0.0}, ("lr",), "lr is 0.0; send a number above 0, at most 1"),
        ({"lr": math.inf}, ("lr",), "lr is inf"),
        ({"optimizer": "rmsprop"}, ("optimizer",), "optimizer 'rmsprop' is unknown; use one of sgd, adam"),
    ],
)
def test_settings_name_the_bad_numbers(kwargs, loc, message):
    with pytest.raises(IrisInputError, match=message) as err:
        iris.TrainConfig(**kwargs)
    assert err.value.loc == loc and isinstance(err.value, ValueError)


def test_features_name_the_bad_measurement():
    with pytest.raises(IrisInputError, match="features holds 3 numbers") as err:
        iris.check_features([1.0, 2.0, 3.0])
    assert err.value.type == "iris_features" and err.value.ctx == {"count": 3}
    with pytest.raises(IrisInputError, match="petal_length is nan") as err:
        iris.check_features([1.0, 2.0, math.nan, 1.0])
    assert err.value.loc == ("features", "2") and err.value.type == "iris_feature_range"
