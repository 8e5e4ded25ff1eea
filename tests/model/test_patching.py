"""Activation patching (model/analysis/patching.py) against references written here with forward pre-hooks on
transformers' own modules: BertModel on the packaged MiniLM files (metric: the cosine similarity of the mean-pooled
last hidden state to the clean text's) and GPT2LMHeadModel on a test GPT-2 (metric: logit[good] − logit[bad] at the
last position). A head's output is the input of the attention's output projection (BertSelfOutput.dense,
GPT2Attention.c_proj), the residual stream entering layer l the hidden state a BertLayer / GPT2Block is called
with. The reference patches one cell per forward, over the whole network."""

from __future__ import annotations

import copy
import threading

import pytest
import torch

from model.analysis import patching
from model.analysis.patching import PatchError
from model.errors import Stopped

CLEAN, CORRUPTED = "The cat sat on the mat because it was warm.", "The dog sat on the rug because it was cold."
GPT2_CLEAN, GPT2_CORRUPTED = "The cat sat on the mat.", "The dog sat on the mat."  # they differ at position 1
GPT2_ANSWER = (328, 326)  # " mat", " cat"
TOLERANCE = 1e-5


def bert_parts(reference):
    """(run(ids) -> last hidden state, the output projections' modules, the layers' modules, n_heads)."""
    layers = list(reference.encoder.layer)
    projections = [la.attention.output.dense for la in layers]
    return ((lambda ids: reference(torch.tensor([ids])).last_hidden_state), projections, layers,
            reference.config.num_attention_heads)


def gpt2_parts(reference):
    blocks = list(reference.transformer.h)
    return ((lambda ids: reference(torch.tensor([ids])).logits), [b.attn.c_proj for b in blocks], blocks,
            reference.config.n_head)


def recorded(modules, run, ids) -> list[torch.Tensor]:
    """Each module's first input during run(ids), in layer order."""
    seen: list[torch.Tensor] = []
    handles = [m.register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach().clone())) for m in modules]
    try:
        with torch.no_grad():
            run(ids)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def run_changed(module, change, run, ids):
    """run(ids) with `module`'s first input replaced by change(input)."""
    handle = module.register_forward_pre_hook(lambda _m, args: (change(args[0].clone()), *args[1:]))
    try:
        with torch.no_grad():
            return run(ids)
    finally:
        handle.remove()


def reference_grid(parts, metric, clean_ids, corrupted_ids, target, head_shift=0, only=None) -> torch.Tensor:
    """The metric after each patch, one forward per cell. `head_shift`: copy head h's slice from clean head
    h + shift instead (a control that must fail). `only`: the cells of that one layer (the others are NaN)."""
    run, projections, layers, n_heads = parts
    modules = projections if target == "heads" else layers
    clean = recorded(modules, run, clean_ids)
    cells = n_heads if target == "heads" else len(clean_ids)
    grid = torch.full((len(modules), cells), float("nan"))
    for layer, module in enumerate(modules):
        if only is not None and layer != only:
            continue
        source = clean[layer]  # (1, T, H·Dh) or (1, T, D)
        for cell in range(cells):
            def change(x, cell=cell, source=source):
                if target == "residual":
                    x[:, cell] = source[:, cell]
                    return x
                width = x.shape[-1] // n_heads
                src = (cell + head_shift) % n_heads
                x[..., cell * width:(cell + 1) * width] = source[..., src * width:(src + 1) * width]
                return x
            grid[layer, cell] = metric(run_changed(module, change, run, corrupted_ids))
    return grid


def bert_metric(parts, clean_ids):
    with torch.no_grad():
        pooled = parts[0](clean_ids)[0].mean(dim=0)  # (D,)
    return lambda hidden: float(torch.nn.functional.cosine_similarity(hidden[0].mean(dim=0), pooled, dim=0))


def gpt2_metric(answer):
    return lambda logits: float(logits[0, -1, answer[0]] - logits[0, -1, answer[1]])


@pytest.mark.parametrize("target", ["heads", "residual"])
def test_minilm_equals_hooks_on_bert_model(minilm, bert_reference, target):
    clean, corrupted = minilm.tokenizer.encode(CLEAN), minilm.tokenizer.encode(CORRUPTED)
    ours = patching.patch(minilm, clean, corrupted, target)
    parts = bert_parts(bert_reference)
    metric = bert_metric(parts, clean.ids)
    expected = reference_grid(parts, metric, clean.ids, corrupted.ids, target)
    assert ours.metric_name == "cosine_similarity" and ours.answer is None
    assert ours.clean == pytest.approx(1.0, abs=1e-6)
    with torch.no_grad():
        assert ours.corrupted == pytest.approx(metric(parts[0](corrupted.ids)), abs=TOLERANCE)
    assert ours.patched.shape == expected.shape == (6, 12 if target == "heads" else len(clean))
    assert (ours.patched - expected).abs().max() <= TOLERANCE
    normalised = (expected - ours.corrupted) / (ours.clean - ours.corrupted)
    assert (ours.grid - normalised).abs().max() <= 1e-4  # divided by the gap (0.38 here)
    # controls that must fail: the wrong head's slice, and a perturbed weight
    if target == "heads":
        shifted = reference_grid(parts, metric, clean.ids, corrupted.ids, target, head_shift=1, only=5)
        assert (ours.patched[5] - shifted[5]).abs().max() > 100 * TOLERANCE
    perturbed = copy.deepcopy(bert_reference)
    with torch.no_grad():
        perturbed.encoder.layer[4].attention.output.dense.weight.mul_(1.25)
    wrong = reference_grid(bert_parts(perturbed), metric, clean.ids, corrupted.ids, target, only=5)
    assert (ours.patched[5] - wrong[5]).abs().max() > 100 * TOLERANCE


@pytest.mark.parametrize("target", ["heads", "residual"])
def test_gpt2_equals_hooks_on_gpt2_lm_head_model(gpt2, gpt2_reference, target):
    clean, corrupted = gpt2.tokenizer.encode(GPT2_CLEAN), gpt2.tokenizer.encode(GPT2_CORRUPTED)
    ours = patching.patch(gpt2, clean, corrupted, target, list(GPT2_ANSWER))
    parts = gpt2_parts(gpt2_reference)
    metric = gpt2_metric(GPT2_ANSWER)
    expected = reference_grid(parts, metric, clean.ids, corrupted.ids, target)
    assert ours.metric_name == "logit_difference" and ours.answer == GPT2_ANSWER
    with torch.no_grad():
        assert ours.clean == pytest.approx(metric(parts[0](clean.ids)), abs=TOLERANCE)
        assert ours.corrupted == pytest.approx(metric(parts[0](corrupted.ids)), abs=TOLERANCE)
    assert ours.patched.shape == expected.shape == (2, 4 if target == "heads" else len(clean))
    assert (ours.patched - expected).abs().max() <= TOLERANCE
    if target == "heads":
        shifted = reference_grid(parts, metric, clean.ids, corrupted.ids, target, head_shift=1, only=1)
        assert (ours.patched[1] - shifted[1]).abs().max() > 100 * TOLERANCE
    perturbed = copy.deepcopy(gpt2_reference)
    with torch.no_grad():
        perturbed.transformer.h[1].attn.c_proj.weight.mul_(1.01)
    wrong = reference_grid(gpt2_parts(perturbed), metric, clean.ids, corrupted.ids, target, only=1)
    assert (ours.patched[1] - wrong[1]).abs().max() > 100 * TOLERANCE


def test_one_changed_token_restored_at_layer_0(minilm, gpt2):
    """Texts that differ in one token p: the residual patch at layer 0, position p, makes the clean run (grid 1);
    at any other position of layer 0 it copies what is there already (grid 0). In the causal GPT-2 no position
    before p sees p: those columns are 0 at every layer."""
    for model, clean_text, corrupted_text, answer in (
        (minilm, "The cat sat on the mat.", "The dog sat on the mat.", None),
        (gpt2, GPT2_CLEAN, GPT2_CORRUPTED, list(GPT2_ANSWER)),
    ):
        clean, corrupted = model.tokenizer.encode(clean_text), model.tokenizer.encode(corrupted_text)
        changed = [i for i, (a, b) in enumerate(zip(clean.ids, corrupted.ids, strict=True)) if a != b]
        assert len(changed) == 1
        p = changed[0]  # 2 after MiniLM's [CLS], 1 in GPT-2
        grid = patching.patch(model, clean, corrupted, "residual", answer).grid
        assert grid[0, p] == pytest.approx(1.0, abs=1e-5)
        assert torch.cat([grid[0, :p], grid[0, p + 1:]]).abs().max() <= 1e-5
        if model.causal:
            assert grid[:, :p].abs().max() <= 1e-5


def test_refusals(minilm, gpt2):
    clean = minilm.tokenizer.encode(CLEAN)
    with pytest.raises(PatchError) as counts:
        patching.patch(minilm, clean, minilm.tokenizer.encode("A short one."), "heads")
    assert counts.value.type == "token_counts_differ" and counts.value.ctx == {"clean": 13, "corrupted": 6}
    assert "13" in counts.value.message and "6" in counts.value.message
    with pytest.raises(PatchError) as same:
        patching.patch(minilm, clean, clean, "residual")
    assert same.value.type == "metric_unchanged"
    with pytest.raises(PatchError, match="remove answer") as encoder_answer:
        patching.patch(minilm, clean, minilm.tokenizer.encode(CORRUPTED), "heads", [1, 2])
    assert encoder_answer.value.type == "answer_not_allowed"
    g_clean, g_corrupted = gpt2.tokenizer.encode(GPT2_CLEAN), gpt2.tokenizer.encode(GPT2_CORRUPTED)
    cases = {
        "answer_missing": None,
        "answer_out_of_range": [328, gpt2.cfg.vocab_size],
        "answer_not_single_token": [" mat", "world"],  # "world" without its space is two tokens here
        "answer_same": [" mat", 328],
    }
    for kind, answer in cases.items():
        with pytest.raises(PatchError) as refused:
            patching.patch(gpt2, g_clean, g_corrupted, "heads", answer)
        assert refused.value.type == kind
    # an answer as text is the id it tokenizes to
    by_text = patching.patch(gpt2, g_clean, g_corrupted, "heads", [" mat", " cat"])
    assert by_text.answer == GPT2_ANSWER
    with pytest.raises(ValueError, match="target"):
        patching.patch(minilm, clean, minilm.tokenizer.encode(CORRUPTED), "neurons")


def test_a_stop_that_turns_true_ends_the_grid_between_batches(minilm):
    clean, corrupted = minilm.tokenizer.encode(CLEAN), minilm.tokenizer.encode(CORRUPTED)
    asked = []

    def stop() -> bool:  # true from the third batch on
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Stopped):
        patching.patch(minilm, clean, corrupted, "residual", stop=stop)
    assert len(asked) == 3
    assert patching.patch(minilm, clean, corrupted, "heads", stop=lambda: False).grid.shape == (6, 12)


def test_a_patch_hook_acts_only_on_its_own_threads_forwards():
    """A server runs a grid on one thread while other forwards run on another: the grid's hooks must not touch them."""
    layer = torch.nn.Linear(3, 3)
    x = torch.ones(1, 3)
    plain = layer(x)
    handle = layer.register_forward_pre_hook(patching.on_this_thread(lambda _m, args: (args[0] * 0,)))
    try:
        seen = {}
        other = threading.Thread(target=lambda: seen.setdefault("other", layer(x)))
        other.start()
        other.join()
        assert torch.equal(seen["other"], plain)  # another thread's forward: untouched
        assert torch.equal(layer(x), layer.bias.detach()[None])  # this thread's: patched (its input zeroed)
    finally:
        handle.remove()
