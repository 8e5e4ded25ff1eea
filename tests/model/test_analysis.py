"""model/analysis/ against numpy references written here, and the encoder's edit against a torch reference."""

import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from model.analysis import aggregate, heads
from model.analysis.contributions import contributions
from model.errors import IndexOutOfRange
from model.nets.edit import Edit, EditError
from model.trace import Trace

SHORT = ("The cat sat on the mat, and then it slept. Did it dream? Nobody knows; cats keep secrets, "
         "and the dog, who sleeps all day, never asks.")
LONG = " ".join(["word", "."] * 255)  # 510 words and dots + [CLS] + [SEP] = 512 tokens, the model's limit
TEXTS = {"short": SHORT, "512": LONG}


@pytest.fixture(scope="module", params=list(TEXTS))
def case(request, minilm):
    encoded = minilm.tokenizer.encode(TEXTS[request.param])
    maps = minilm.attention_maps(encoded)
    return encoded, [m.numpy().astype(np.float64) for m in maps.per_layer], maps


def test_the_inputs_have_the_sizes_the_tests_claim(minilm):
    assert 32 <= len(minilm.tokenizer.encode(SHORT)) < 64
    assert len(minilm.tokenizer.encode(LONG)) == 512


# ---- numpy references ----

def np_mean(maps):
    return np.stack([m.mean(axis=0) for m in maps])


def np_rollout(maps, residual, renormalise="rows"):
    """Abnar & Zuidema's rollout; `renormalise` "none" and "no_keepdims" are the vit-explain #16 bugs."""
    out, product = [], None
    for m in maps:
        n = m.shape[-1]
        a = residual * np.eye(n) + (1 - residual) * m.mean(axis=0)
        if renormalise == "rows":
            a = a / a.sum(axis=-1, keepdims=True)  # row i divided by row i's sum
        elif renormalise == "no_keepdims":
            a = a / a.sum(axis=-1)  # broadcasts over the last axis: column j divided by row j's sum
        product = a if product is None else a @ product
        out.append(product)
    return np.stack(out)


def np_metrics(maps, cls, sep, punct):
    n = maps[0].shape[-1]
    i, j = np.indices((n, n))
    out = {name: np.zeros((len(maps), maps[0].shape[0])) for name in heads.METRICS}
    for layer, stack in enumerate(maps):
        for head, a in enumerate(stack):
            logs = np.where(a > 0, np.log(np.where(a > 0, a, 1.0)), 0.0)
            out["entropy"][layer, head] = np.mean(-(a * logs).sum(axis=1))
            out["distance"][layer, head] = np.mean((a * np.abs(i - j)).sum(axis=1))
            out["to_cls"][layer, head] = np.mean(a[:, cls].sum(axis=1))
            out["to_sep"][layer, head] = np.mean(a[:, sep].sum(axis=1))
            out["to_punctuation"][layer, head] = np.mean(a[:, punct].sum(axis=1))
            out["to_self"][layer, head] = np.mean([a[q, q] for q in range(n)])
            out["to_previous"][layer, head] = np.mean([a[q, q - 1] for q in range(1, n)])
            out["to_next"][layer, head] = np.mean([a[q, q + 1] for q in range(n - 1)])
            out["to_first"][layer, head] = np.mean([a[q, 0] for q in range(1, n)])
    return out


# ---- aggregates ----

def test_mean_over_heads_equals_numpy(case):
    _, ref_maps, maps = case
    ours = aggregate.mean_over_heads(maps.per_layer)
    assert ours.dtype == torch.float32 and ours.shape == (6, *ref_maps[0].shape[1:])
    np.testing.assert_allclose(ours.numpy(), np_mean(ref_maps), atol=1e-6, rtol=0)


@pytest.mark.parametrize("residual", [0.0, 0.5, 0.9, 1.0])
def test_rollout_equals_numpy_on_the_models_maps(case, residual):
    _, ref_maps, maps = case
    ours = aggregate.rollout(maps.per_layer, residual)
    ref = np_rollout(ref_maps, residual)
    np.testing.assert_allclose(ours.numpy(), ref, atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours.numpy().sum(axis=-1), 1.0, atol=1e-5)  # every R_l stays row-stochastic
    if residual == 1.0:
        assert np.array_equal(ours.numpy(), np.broadcast_to(np.eye(ref.shape[-1]), ref.shape))


def test_rollout_renormalises_rows_keeping_dims_the_vit_explain_16_case():
    """Maps whose rows do not sum to 1 (e.g. special tokens dropped, weights thresholded): forgetting
    to renormalise, or dividing without keepdims (column j by row j's sum), gives other answers, and
    ours equals only the correct reference."""
    rng = np.random.default_rng(16)
    maps = [rng.uniform(0.0, 1.0, size=(4, 7, 7)) * rng.uniform(0.2, 3.0, size=(4, 7, 1)) for _ in range(3)]
    ours = aggregate.rollout([torch.tensor(m, dtype=torch.float32) for m in maps], 0.5).numpy()
    correct = np_rollout(maps, 0.5, "rows")
    forgot = np_rollout(maps, 0.5, "none")
    no_keepdims = np_rollout(maps, 0.5, "no_keepdims")
    np.testing.assert_allclose(ours, correct, atol=1e-5, rtol=0)
    assert np.abs(ours - forgot).max() > 0.1
    assert np.abs(ours - no_keepdims).max() > 0.01
    assert np.abs(correct - no_keepdims).max() > 0.01 and np.abs(correct - forgot).max() > 0.1


def test_rollout_keeps_a_row_without_weight_at_zero():
    m = torch.zeros(1, 3, 3)
    m[0, 0, 1] = 1.0  # rows 1 and 2 hold no weight
    out = aggregate.rollout([m], 0.0)
    assert torch.isfinite(out).all()
    assert out[0].tolist() == [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]


@pytest.mark.parametrize("residual", [-0.1, 1.5, math.nan, math.inf])
def test_rollout_refuses_a_residual_outside_0_to_1(residual):
    with pytest.raises(ValueError, match="residual"):
        aggregate.rollout([torch.eye(2)[None]], residual)


def test_aggregates_refuse_maps_that_are_not_square_stacks():
    with pytest.raises(ValueError, match="layer 0"):
        aggregate.mean_over_heads([torch.zeros(2, 3, 4)])
    with pytest.raises(ValueError, match="no layers"):
        aggregate.rollout([])


# ---- head metrics and labels ----

def test_token_kinds_of_a_pair(minilm):
    encoded = minilm.tokenizer.encode("Hello, world!", "Fine... thanks")
    texts = [t.text for t in encoded.tokens]
    kinds = heads.token_kinds(encoded.tokens)
    assert [texts[i] for i in kinds.cls.nonzero().flatten()] == ["[CLS]"]
    assert [texts[i] for i in kinds.sep.nonzero().flatten()] == ["[SEP]", "[SEP]"]
    assert [texts[i] for i in kinds.punctuation.nonzero().flatten()] == [",", "!", ".", ".", "."]


def test_is_punctuation():
    assert heads.is_punctuation("、") and heads.is_punctuation("##.") and heads.is_punctuation("?!")
    assert not heads.is_punctuation("a.") and not heads.is_punctuation("+") and not heads.is_punctuation("")
    assert heads.is_punctuation(" ,") and not heads.is_punctuation(" ")  # byte-level displays


def test_byte_level_punctuation_is_found_by_its_characters(tmp_path):
    """GPT-2's "Ġ," (a space and a comma in one token) and a full-width "，" split over byte tokens."""
    import json

    from model.checkpoints import load
    from tests.checkpoints import make_checkpoint
    directory = make_checkpoint("gpt2", tmp_path / "gpt2")
    tokenizer = json.loads((directory / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    vocab["Ġ,"] = len(vocab)  # a merged space-comma token, as GPT-2's own vocabulary has
    tokenizer["model"]["merges"].append("Ġ ," if isinstance(tokenizer["model"]["merges"][0], str) else ["Ġ", ","])
    (directory / "tokenizer.json").write_text(json.dumps(tokenizer))
    model = load(directory)
    encoded = model.tokenizer.encode("cat , dog，")
    kinds = heads.token_kinds(encoded.tokens)
    marked = [t.display for t, p in zip(encoded.tokens, kinds.punctuation.tolist(), strict=True) if p]
    assert "Ġ," in [t.text for t in encoded.tokens]
    assert marked == [" ,", "，"]


def test_head_metrics_equal_numpy(case):
    encoded, ref_maps, maps = case
    kinds = heads.token_kinds(encoded.tokens)
    ours = heads.head_metrics(maps.per_layer, kinds)
    ref = np_metrics(ref_maps, kinds.cls.numpy(), kinds.sep.numpy(), kinds.punctuation.numpy())
    assert set(ours) == set(heads.METRICS)
    for name in heads.METRICS:
        assert ours[name].shape == (6, 12), name
        np.testing.assert_allclose(ours[name].numpy(), ref[name], atol=1e-5, rtol=1e-6, err_msg=name)
    assert kinds.punctuation.any() and kinds.sep.any()


def test_head_metrics_of_known_maps():
    n = 5
    previous = torch.zeros(1, n, n)
    previous[0, 0, 0] = 1.0
    for i in range(1, n):
        previous[0, i, i - 1] = 1.0
    uniform = torch.full((1, n, n), 1.0 / n)
    kinds = heads.TokenKinds(torch.tensor([True, False, False, False, False]),
                                torch.tensor([False, False, False, False, True]), torch.zeros(n, dtype=torch.bool))
    m = heads.head_metrics([torch.cat([previous, uniform])], kinds)
    assert m["to_previous"][0].tolist() == [1.0, pytest.approx(0.2)]
    assert m["entropy"][0].tolist() == [0.0, pytest.approx(math.log(n))]
    assert m["distance"][0, 0].item() == pytest.approx(4 / 5)  # rows 1..4 look one back, row 0 at itself
    labels = heads.head_labels(m, n)
    assert labels == [[["previous"], ["broad"]]]


def test_head_labels_follow_the_stated_thresholds(case):
    encoded, _, maps = case
    n = len(encoded)
    m = heads.head_metrics(maps.per_layer, heads.token_kinds(encoded.tokens))
    labels = heads.head_labels(m, n)
    rules = {"broad": ("entropy", 0.8 * math.log(n)), "previous": ("to_previous", 0.5), "next": ("to_next", 0.5),
             "cls": ("to_cls", 0.5), "sep": ("to_sep", 0.5), "self": ("to_self", 0.5), "sink": ("to_first", 0.5)}
    thresholds = heads.label_thresholds(n)
    assert set(thresholds) == set(rules)
    for label, (metric, value) in rules.items():
        assert thresholds[label][0] == metric and thresholds[label][1] == pytest.approx(value)
    for layer in range(6):
        for head in range(12):
            want = [label for label, (metric, value) in rules.items() if m[metric][layer, head].item() >= value]
            assert labels[layer][head] == want
    assert any(labels[layer][head] for layer in range(6) for head in range(12))
    assert "Clark" in heads.LABEL_SOURCE and "1906.04341" in heads.LABEL_SOURCE


# ---- contributions ----

def np_contributions(weights, v_full, w_o, n_heads):
    """Per head a_hij ||f_h(x_j)||, and ||Σ_h a_hij f_h(x_j)|| summed as D-vectors (chunked over queries)."""
    n, d = v_full.shape
    dv = d // n_heads
    f = np.stack([v_full[:, h * dv:(h + 1) * dv] @ w_o[h * dv:(h + 1) * dv, :] for h in range(n_heads)])  # (H, N, D)
    per_head = weights * np.linalg.norm(f, axis=-1)[:, None, :]
    total = np.zeros((n, n))
    for start in range(0, n, 64):
        rows = slice(start, start + 64)
        acc = np.zeros((min(64, n - start), n, d))
        for h in range(n_heads):
            acc += weights[h, rows, :, None] * f[h][None, :, :]
        total[rows] = np.linalg.norm(acc, axis=-1)
    return per_head, total, f


@pytest.mark.parametrize("layer", [0, 3])
def test_contributions_equal_numpy_from_the_trace(case, minilm, layer):
    encoded = case[0]
    if len(encoded) == 512 and layer == 0:
        pytest.skip("one layer is enough at 512 tokens")
    trace = Trace(layers=[layer], steps=("project", "split", "softmax", "concat", "output"))
    minilm.run(encoded, trace)
    weights = trace.tensor(layer, "softmax")[0].double().numpy()  # (H, N, N)
    v_full = trace[layer]["project"]["v"][0].double().numpy()  # (N, D): x W_v + b_v
    output = minilm.net.block(layer).attention.output
    w_o = output.weight.detach().double().numpy().T  # (H·Dv, D), acting as x W_o
    per_head_ref, total_ref, f = np_contributions(weights, v_full, w_o, 12)

    split_v = trace[layer]["split"]["v"][0]  # (H, N, Dv)
    per_head, total = contributions(trace.tensor(layer, "softmax")[0], split_v,
                                             output.weight.detach().T)
    np.testing.assert_allclose(per_head.numpy(), per_head_ref, atol=2e-5, rtol=1e-5)
    np.testing.assert_allclose(total.numpy(), total_ref, atol=2e-5, rtol=1e-5)
    chosen, _ = contributions(trace.tensor(layer, "softmax")[0], split_v, output.weight.detach().T, [5, 1])
    np.testing.assert_allclose(chosen.numpy(), per_head_ref[[5, 1]], atol=2e-5, rtol=1e-5)

    # f_h is what the layer really adds: Σ_j Σ_h a_hij f_h(x_j) + b_o is the traced output
    mixed = np.einsum("hij,hjd->id", weights, f) + output.bias.detach().double().numpy()
    np.testing.assert_allclose(mixed, trace.tensor(layer, "output")[0].double().numpy(), atol=1e-4)


def test_contributions_refuse_shapes_that_do_not_fit():
    with pytest.raises(ValueError, match="weights have shape"):
        contributions(torch.zeros(2, 3, 4), torch.zeros(2, 3, 5), torch.zeros(10, 8))
    with pytest.raises(ValueError, match="w_o has shape"):
        contributions(torch.zeros(2, 3, 3), torch.zeros(2, 3, 5), torch.zeros(9, 8))


# ---- edits ----

ALL_STEPS = ("input", "scale", "mask", "softmax", "weighted_sum", "output")


def forward(minilm, encoded, edit=None):
    trace = Trace(steps=ALL_STEPS)
    ids, segments = torch.tensor([encoded.ids]), torch.tensor([encoded.segments])
    hidden = minilm.net(ids, segments, trace=trace, edit=edit)
    return trace, hidden


@pytest.fixture(scope="module")
def unedited(case, minilm):
    return forward(minilm, case[0])


@pytest.mark.parametrize("edit", [Edit(2), Edit(0, heads=(3, 7)), Edit(5, heads=None, temperature=1, hidden_keys=())])
def test_an_edit_that_changes_nothing_equals_the_unedited_forward_exactly(case, minilm, unedited, edit):
    trace, hidden = forward(minilm, case[0], edit)
    ref_trace, ref_hidden = unedited
    assert edit.changes_nothing
    assert torch.equal(hidden, ref_hidden)
    for layer in range(6):
        for step in ALL_STEPS:
            assert torch.equal(trace.tensor(layer, step), ref_trace.tensor(layer, step)), (layer, step)


EDITS = {
    "temperature": Edit(2, heads=(5,), temperature=3.0),
    "hidden_keys": Edit(2, heads=(0, 5), hidden_keys=(1, 3)),
    "ablate": Edit(2, heads=(5,), ablate=True),
    "all_together": Edit(2, heads=None, temperature=0.5, hidden_keys=(0,), ablate=False),
}


def reference_layer(minilm, x, layer, edit):
    """One layer with the edit, written with torch.nn.functional from the block's weights."""
    block = minilm.net.block(layer)
    att = block.attention
    n_heads, d = att.n_heads, x.shape[-1]
    dh = d // n_heads
    heads = list(range(n_heads)) if edit.heads is None else list(edit.heads)

    def per_head(lin):
        return F.linear(x, lin.weight, lin.bias).view(-1, n_heads, dh).transpose(0, 1)  # (H, N, Dh)

    q, k, v = per_head(att.query), per_head(att.key), per_head(att.value)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)
    for h in heads:
        scores[h] = scores[h] / edit.temperature
        for key in edit.hidden_keys:
            scores[h, :, key] = float("-inf")
    weights = torch.softmax(scores, dim=-1)
    context = weights @ v
    if edit.ablate:
        context[heads] = 0.0
    out = F.linear(context.transpose(0, 1).reshape(-1, d), att.output.weight, att.output.bias)
    h1 = F.layer_norm(x + out, (d,), block.attention_norm.weight, block.attention_norm.bias,
                      block.attention_norm.eps)
    ff = F.linear(F.gelu(F.linear(h1, block.ff_in.weight, block.ff_in.bias)), block.ff_out.weight, block.ff_out.bias)
    after = F.layer_norm(h1 + ff, (d,), block.ff_norm.weight, block.ff_norm.bias, block.ff_norm.eps)
    return weights, out, after


@pytest.mark.parametrize("name", list(EDITS))
def test_an_edit_changes_its_layer_as_the_reference_and_every_later_layer(case, minilm, unedited, name):
    edit = EDITS[name]
    encoded = case[0]
    trace, hidden = forward(minilm, encoded, edit)
    ref_trace, ref_hidden = unedited
    for layer in range(edit.layer):  # before the edited layer: exactly the unedited numbers
        for step in ALL_STEPS:
            assert torch.equal(trace.tensor(layer, step), ref_trace.tensor(layer, step)), (layer, step)
    assert torch.equal(trace.tensor(edit.layer, "input"), ref_trace.tensor(edit.layer, "input"))

    with torch.inference_mode():
        weights, out, after = reference_layer(minilm, trace.tensor(edit.layer, "input")[0], edit.layer, edit)
    assert (trace.tensor(edit.layer, "softmax")[0] - weights).abs().max().item() <= 1e-5
    assert (trace.tensor(edit.layer, "output")[0] - out).abs().max().item() <= 1e-4
    assert (trace.tensor(edit.layer + 1, "input")[0] - after).abs().max().item() <= 1e-4
    untouched = [h for h in range(12) if edit.heads is not None and h not in edit.heads]
    if untouched:  # the other heads of the edited layer see the same input: the same weights
        assert torch.equal(trace.tensor(edit.layer, "softmax")[0, untouched],
                           ref_trace.tensor(edit.layer, "softmax")[0, untouched])
    if edit.ablate:
        assert not trace.tensor(edit.layer, "weighted_sum")[0, list(edit.heads)].any()
        assert torch.equal(trace.tensor(edit.layer, "softmax"), ref_trace.tensor(edit.layer, "softmax"))
    for layer in range(edit.layer + 1, 6):  # every later layer runs on the edited hidden state
        diff = (trace.tensor(layer, "softmax") - ref_trace.tensor(layer, "softmax")).abs().max().item()
        assert diff > 1e-4, (layer, diff)
    assert (hidden - ref_hidden).abs().max().item() > 1e-4


def test_hiding_every_key_gives_rows_of_zeros(minilm):
    encoded = minilm.tokenizer.encode("a b c")
    edit = Edit(1, heads=(2,), hidden_keys=tuple(range(len(encoded))))
    trace, hidden = forward(minilm, encoded, edit)
    assert not trace.tensor(1, "softmax")[0, 2].any()
    assert torch.isfinite(hidden).all()


@pytest.mark.parametrize("temperature", [0, -1, 0.001, 101, math.nan, math.inf, True])
def test_an_edit_refuses_a_temperature_outside_its_range(temperature):
    with pytest.raises(ValueError) as info:
        Edit(0, temperature=temperature)
    if not isinstance(temperature, bool):
        assert isinstance(info.value, EditError) and info.value.type == "edit_temperature"
        assert info.value.ctx == {"min": 0.01, "max": 100.0} and info.value.loc == ("edit", "temperature")


def test_an_edit_refuses_duplicates_and_negative_indices():
    with pytest.raises(EditError, match="twice") as info:
        Edit(0, heads=(1, 1))
    assert info.value.loc == ("edit", "heads")
    with pytest.raises(EditError, match="twice"):
        Edit(0, hidden_keys=(2, 2))
    for bad in ({"layer": -1}, {"layer": 0, "heads": (-1,)}, {"layer": 0, "hidden_keys": (-2,)},
                {"layer": 0, "heads": ()}, {"layer": True}):
        with pytest.raises(ValueError):
            Edit(**bad)


def test_the_forward_checks_an_edits_indices_against_the_model_and_input(minilm):
    encoded = minilm.tokenizer.encode("a b c")  # 5 tokens
    with pytest.raises(IndexOutOfRange, match=r"layers \[6\] out of range; this model has layers 0..5") as info:
        forward(minilm, encoded, Edit(6))
    assert info.value.loc == ("edit", "layer")
    with pytest.raises(IndexOutOfRange, match=r"heads \[12\] out of range") as info:
        forward(minilm, encoded, Edit(0, heads=(1, 12)))
    assert info.value.loc == ("edit", "heads", "1")
    with pytest.raises(EditError, match="tokens 0..4") as info:
        forward(minilm, encoded, Edit(0, hidden_keys=(0, 5)))
    assert info.value.loc == ("edit", "hidden_keys", "1") and info.value.ctx == {"key": 5, "tokens": 5}
