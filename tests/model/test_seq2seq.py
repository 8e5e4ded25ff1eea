"""The encoder-decoder lab (model/lab/seq2seq.py, seq2seq_data.py): the tasks' data by their definitions (dates
parsed back with datetime), the encoder, the additive attention and the decoder against numpy references written
here from the module's own parameters, the metrics, the settings' limits, and the same numbers for the same seed.
Whether the defaults learn to align, and how fast, is measured by bench/seq2seq.py (minutes, not a unit test)."""

from __future__ import annotations

import datetime
import random
import re

import numpy as np
import pytest
import torch

from model.errors import LabInputError
from model.lab.seq2seq import (
    AdditiveAttention,
    CancelledReport,
    DoneReport,
    EvalReport,
    Seq2Seq,
    Seq2SeqConfig,
    Training,
    alignment_share,
    predict,
)
from model.lab.seq2seq_data import END, FORMS, PAD, START, TASKS, Example, date_example, source_ids, target_ids

TINY = Seq2SeqConfig(task="dates", hidden=8, steps=4, batch=4, eval_every=2)

# Each form as datetime.strptime reads it, and as a pattern: where a form has no leading zeros, none appear.
STRPTIME = {
    "day_mon_year": ("%d %b %Y", r"[1-9]\d? [A-Z][a-z]{2} \d{4}"),
    "day_month_year": ("%d %B %Y", r"[1-9]\d? [A-Z][a-z]+ \d{4}"),
    "month_day_year": ("%B %d, %Y", r"[A-Z][a-z]+ [1-9]\d?, \d{4}"),
    "mon_day_year": ("%b %d, %Y", r"[A-Z][a-z]{2} [1-9]\d?, \d{4}"),
    "chinese": ("%Y年%m月%d日", r"\d{4}年[1-9]\d?月[1-9]\d?日"),
    "dd_mm_yy": ("%d/%m/%y", r"\d\d/\d\d/\d\d"),
    "yyyy_mm_dd": ("%Y/%m/%d", r"\d{4}/\d\d/\d\d"),
    "dotted": ("%d.%m.%Y", r"[1-9]\d?\.[1-9]\d?\.\d{4}"),
}


def test_reverse_examples_are_their_letters_backwards_aligned_to_n_minus_1_minus_t():
    examples = TASKS["reverse"].draw_many(2000, random.Random(0))
    lengths = set()
    for e in examples:
        n = len(e.source)
        assert re.fullmatch("[a-z]{4,30}", e.source) and e.target == "".join(reversed(e.source))
        assert e.right == tuple((n - 1 - t,) for t in range(n))
        lengths.add(n)
    assert lengths == set(range(4, 31))


def test_every_date_form_parses_back_to_its_iso_date_and_its_spans_hold_the_parts():
    examples = TASKS["dates"].draw_many(3000, random.Random(1))
    assert {e.form for e in examples} == set(STRPTIME) == set(FORMS)
    assert any("年" in e.source and "月" in e.source and e.source.endswith("日") for e in examples)
    for e in examples:
        fmt, pattern = STRPTIME[e.form]
        date = datetime.datetime.strptime(e.source, fmt).date()
        assert re.fullmatch(pattern, e.source), e.source
        assert e.target == f"{date.year:04d}-{date.month:02d}-{date.day:02d}"
        assert datetime.date(1969, 1, 1) <= date <= datetime.date(2068, 12, 31)
        year, month, day = ("".join(e.source[i] for i in e.right[k]) for k in (0, 5, 8))
        assert e.right[:4] == (e.right[0],) * 4 and e.right[5] == e.right[6] and e.right[8] == e.right[9]
        assert e.right[4] == e.right[7] == ()  # the "-" have no source
        assert year == (e.target[2:4] if e.form == "dd_mm_yy" else e.target[:4])
        assert int(day) == date.day
        assert (int(month) if month.isdigit() else datetime.datetime.strptime(month[:3], "%b").month) == date.month


def test_two_digit_years_pivot_as_strptime_does():
    assert date_example(datetime.date(1969, 3, 4), "dd_mm_yy").source == "04/03/69"
    assert date_example(datetime.date(2068, 3, 4), "dd_mm_yy").source == "04/03/68"
    assert date_example(datetime.date(2026, 12, 1), "chinese").source == "2026年12月1日"
    assert date_example(datetime.date(2026, 12, 1), "month_day_year").source == "December 1, 2026"


def test_ids_follow_their_definitions():
    task = TASKS["reverse"]
    ids, lengths = source_ids(task, ["abc", "ba"])
    assert ids.tolist() == [[1, 2, 3], [2, 1, PAD]] and lengths.tolist() == [3, 2]
    inputs, outputs = target_ids(task, ["cba", "a"])
    assert inputs.tolist() == [[START, 5, 4, 3], [START, 3, PAD, PAD]]
    assert outputs.tolist() == [[5, 4, 3, END], [3, END, PAD, PAD]]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def gru_cell(x: np.ndarray, h: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray,
             b_hh: np.ndarray) -> np.ndarray:
    """PyTorch's GRU equations: gates r, z, n in that order of the weights' rows."""
    gi, gh = w_ih @ x + b_ih, w_hh @ h + b_hh
    k = len(h)
    r, z = sigmoid(gi[:k] + gh[:k]), sigmoid(gi[k: 2 * k] + gh[k: 2 * k])
    n = np.tanh(gi[2 * k:] + r * gh[2 * k:])
    return (1 - z) * n + z * h


def params(module: torch.nn.Module) -> dict[str, np.ndarray]:
    return {name: p.detach().double().numpy() for name, p in module.named_parameters()}


def additive_reference(p: dict[str, np.ndarray], s: np.ndarray, h: np.ndarray) -> np.ndarray:
    """softmax_i vᵀ tanh(W s + U h_i) over the rows of h (S, K)."""
    scores = np.array([p["v.weight"][0] @ np.tanh(p["W.weight"] @ s + p["U.weight"] @ hi) for hi in h])
    e = np.exp(scores - scores.max())
    return e / e.sum()


def test_additive_attention_weights_equal_the_reference_and_skip_padding():
    torch.manual_seed(0)
    attention = AdditiveAttention(state=6, keys=10, width=5)
    s, h = torch.randn(3, 6), torch.randn(3, 7, 10)  # (B, Ds), (B, S, K)
    lengths = [7, 4, 1]
    mask = torch.arange(7)[None, :] < torch.tensor(lengths)[:, None]  # (B, S)
    with torch.no_grad():
        weights = attention(s, attention.project(h), mask)  # (B, S)
    p = params(attention)
    for b, n in enumerate(lengths):
        want = additive_reference(p, s[b].double().numpy(), h[b, :n].double().numpy())
        assert np.abs(weights[b, :n].double().numpy() - want).max() <= 1e-6
        assert torch.all(weights[b, n:] == 0) and abs(float(weights[b].sum()) - 1) <= 1e-6


def encoder_reference(p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The GRU read right to left over embeddings x (S, E): h_i after x_{S-1} .. x_i, (S, H); and h_0, final."""
    weights = [p[f"encoder.{w}_l0"] for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    h = np.zeros(weights[1].shape[1])
    states = []
    for row in x[::-1]:
        h = gru_cell(row, h, *weights)
        states.append(h)
    return np.stack(states[::-1]), states[-1]


@pytest.mark.parametrize("attention", [True, False])
def test_the_decoder_follows_bahdanau_and_without_attention_reads_the_final_state(attention):
    torch.manual_seed(3)
    task = TASKS["reverse"]
    model = Seq2Seq(task, hidden=6, attention=attention).double()
    p = params(model)
    att = {k.removeprefix("attention."): v for k, v in p.items() if k.startswith("attention.")}
    sources, targets = ["abcdefg", "zyx"], ["gfedcba", "xyz"]
    ids, lengths = source_ids(task, sources)
    inputs, _ = target_ids(task, targets)
    with torch.no_grad():
        decoded = model.decode(ids, lengths, inputs)
    for b, text in enumerate(sources):
        states, final = encoder_reference(p, p["source_embed.weight"][ids[b, : len(text)].numpy()])
        assert np.abs(decoded.encoded[b, : len(text)].numpy() - states).max() <= 1e-10
        assert np.abs(decoded.final[b].numpy() - final).max() <= 1e-10
        s = np.tanh(p["bridge.weight"] @ final + p["bridge.bias"])
        for t, y in enumerate(inputs[b].tolist()):
            if attention:
                a = additive_reference(att, s, states)
                c = a @ states
                assert np.abs(decoded.weights[b, t, : len(text)].numpy() - a).max() <= 1e-10
            else:
                c = final  # the bottleneck: the final state at every step
            assert np.abs(decoded.states[b, t].numpy() - s).max() <= 1e-10
            assert np.abs(decoded.contexts[b, t].numpy() - c).max() <= 1e-10
            e = p["target_embed.weight"][y]
            s = gru_cell(np.concatenate([e, c]), s, p["cell.weight_ih"], p["cell.weight_hh"], p["cell.bias_ih"],
                         p["cell.bias_hh"])
            logits = p["out.weight"] @ np.concatenate([s, c, e]) + p["out.bias"]
            assert np.abs(decoded.logits[b, t].numpy() - logits).max() <= 1e-10
    assert (decoded.weights is None) == (not attention)


def test_alignment_share_is_the_mean_mass_on_the_right_positions_of_characters_with_a_source():
    examples = [Example("ab", "ba", ((1,), (0,)), "reverse"), Example("xyz", "q-r", ((0, 1), (), (2,)), "dates")]
    weights = torch.zeros(2, 4, 3)  # (B, T, S)
    weights[0, 0] = torch.tensor([0.25, 0.75, 0])
    weights[0, 1] = torch.tensor([0.5, 0.5, 0])
    weights[1, 0] = torch.tensor([0.1, 0.2, 0.7])
    weights[1, 1] = torch.tensor([1.0, 0, 0])  # "-": left out
    weights[1, 2] = torch.tensor([0.6, 0, 0.4])
    assert alignment_share(weights, examples) == pytest.approx((0.75 + 0.5 + 0.3 + 0.4) / 4)


def test_accuracy_counts_exact_matches_overall_and_by_source_length():
    training = Training(TINY)
    right = {e.source for e in training.evaluation[::3]}
    table = {e.source: e.target for e in training.evaluation}
    training.model.greedy = lambda sources: ([table[s] if s in right else "x" for s in sources], None)  # type: ignore
    report = training.evaluate(0, None)
    assert report.accuracy == pytest.approx(sum(e.source in right for e in training.evaluation) / 500)
    for n, acc in report.accuracy_by_length.items():
        group = [e.source in right for e in training.evaluation if len(e.source) == n]
        assert acc == pytest.approx(sum(group) / len(group))
    assert sorted(report.accuracy_by_length) == sorted({len(e.source) for e in training.evaluation})


def test_a_seed_gives_the_same_run_and_another_seed_another():
    def evals(config):
        return [r for r in Training(config).run() if isinstance(r, EvalReport)]
    first, again = evals(TINY), evals(TINY)
    assert [r.step for r in first] == [0, 2, 4] and first[0].train_loss is None
    for a, b in zip(first, again, strict=True):
        assert (a.loss, a.train_loss, a.accuracy, a.accuracy_by_length, a.alignment_share) == \
            (b.loss, b.train_loss, b.accuracy, b.accuracy_by_length, b.alignment_share)
        assert a.alignment.source == b.alignment.source and a.alignment.target == b.alignment.target
        assert a.alignment.weights is not None and b.alignment.weights is not None
        assert torch.equal(a.alignment.weights, b.alignment.weights)
        assert a.alignment.weights.shape == (len(a.alignment.target), len(a.alignment.source))
    other = evals(Seq2SeqConfig(**{**TINY.__dict__, "seed": 1}))
    assert other[-1].loss != first[-1].loss


def test_without_attention_the_report_has_no_weights_and_no_share():
    report = next(iter(Training(Seq2SeqConfig(**{**TINY.__dict__, "attention": False})).run()))
    assert isinstance(report, EvalReport) and report.alignment.weights is None and report.alignment_share is None


def test_a_run_ends_with_done_or_with_cancelled_when_stop_says_so():
    reports = list(Training(TINY).run())
    assert isinstance(reports[-1], DoneReport) and reports[-1].steps == 4
    calls = []
    stopped = list(Training(TINY).run(stop=lambda: calls.append(1) or len(calls) > 3))
    assert isinstance(stopped[-1], CancelledReport) and stopped[-1].step == 3
    assert [r.step for r in stopped if isinstance(r, EvalReport)] == [0, 2]


def test_predict_gives_the_output_and_one_weight_row_per_output_character():
    training = Training(Seq2SeqConfig(hidden=8))
    got = predict(training, "hello")
    assert got.alignment.source == list("hello") and got.alignment.target == list(got.output)
    assert got.alignment.weights is not None and got.alignment.weights.shape == (len(got.output), 5)
    assert torch.allclose(got.alignment.weights.sum(dim=1), torch.ones(len(got.output)))


@pytest.mark.parametrize(("task", "text", "words"), [
    ("reverse", "abc", "text has 3 characters; send 4 to 30"),
    ("reverse", "a" * 31, "text has 31 characters; send 4 to 30"),
    ("reverse", "Hello", "text has characters outside the reverse task's alphabet ('H')"),
    ("dates", "2026-12-01", "text has characters outside the dates task's alphabet ('-')"),
    ("dates", "1.1.26", "text has 6 characters; send 8 to 18"),
])
def test_predict_refuses_text_the_task_cannot_read(task, text, words):
    model = Seq2Seq(TASKS[task], hidden=4, attention=True)
    with pytest.raises(LabInputError, match=re.escape(words)) as caught:
        predict(model, text)
    assert caught.value.loc == ("text",) and caught.value.type == "lab_setting"


@pytest.mark.parametrize(("field", "value", "words"), [
    ("task", "sort", "task is 'sort'; send one of reverse, dates"),
    ("attention", 1, "attention is 1; send true or false"),
    ("steps", 0, "steps is 0; send 1 to 20000"),
    ("batch", 257, "batch is 257; send 1 to 256"),
    ("hidden", 2, "hidden is 2; send 4 to 256"),
    ("seed", -1, "seed is -1; send 0 to 2147483647"),
    ("eval_every", 0, "eval_every is 0; send 1 to 20000"),
    ("lr", 0.5, "lr is 0.5; send above 0, at most 0.1"),
    ("lr", float("nan"), "lr is nan; send above 0, at most 0.1"),
])
def test_settings_outside_their_limits_are_refused(field, value, words):
    with pytest.raises(LabInputError, match=re.escape(words)) as caught:
        Seq2SeqConfig(**{field: value})
    assert caught.value.loc == (field,) and caught.value.type == "lab_setting"
