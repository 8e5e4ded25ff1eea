"""attnscope.Model.run and Model.patch(metric=...) as a researcher calls them, on the tiny GPT-2 checkpoint, against
transformers' own GPT2LMHeadModel read and changed with forward hooks (the network's every tap is held to
transformers in tests/model/test_activations.py; here the methods' checks, wiring and saving)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import transformers

import attnscope

TEXT = "The cat sat on the mat."
OTHER = "The dog sat on the mat."


@pytest.fixture(scope="module")
def hf(checkpoint_dirs):
    return transformers.GPT2LMHeadModel.from_pretrained(checkpoint_dirs["gpt2"], attn_implementation="eager").eval()


def hf_run(hf, ids, head_to_zero=None):
    """transformers' hidden states, attentions and logits; with `head_to_zero` = (layer, head) that head's slice of
    c_proj's input zeroed by a forward pre-hook."""
    handles = []
    if head_to_zero is not None:
        layer, head = head_to_zero
        width = hf.config.n_embd // hf.config.n_head

        def zero(module, args):
            x = args[0].clone()
            x[..., head * width:(head + 1) * width] = 0
            return (x,)

        handles.append(hf.transformer.h[layer].attn.c_proj.register_forward_pre_hook(zero))
    try:
        with torch.no_grad():
            return hf(torch.tensor([ids]), output_hidden_states=True, output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()


def test_run_reads_the_stream_and_the_patterns_that_transformers_computes(gpt2, hf):
    run = gpt2.run(TEXT)
    out = hf_run(hf, run.ids)
    for layer in range(gpt2.info.layers):
        np.testing.assert_allclose(run[f"resid_pre.{layer}"], out.hidden_states[layer][0].numpy(), atol=1e-5)
        np.testing.assert_allclose(run[f"pattern.{layer}"], out.attentions[layer][0].numpy(), atol=1e-6)
    np.testing.assert_allclose(run["final"], out.hidden_states[-1][0].numpy(), atol=1e-5)
    np.testing.assert_allclose(run.logits, out.logits[0].numpy(), atol=1e-4)
    assert run.names()[0] == "resid_pre.0" and run.names()[-1] == "final"
    assert run.stack("resid_post").shape == (gpt2.info.layers, len(run.ids), hf.config.n_embd)


def test_a_hook_that_ablates_a_head_runs_on_as_transformers_does(gpt2, hf):
    def ablate(z, layer):
        z = z.clone()
        z[1] = 0
        return z

    run = gpt2.run(TEXT, hooks={"z.0": ablate})
    assert not run["z.0"][1].any() and run.hooked == ("z.0",)
    out = hf_run(hf, run.ids, head_to_zero=(0, 1))
    np.testing.assert_allclose(run.logits, out.logits[0].numpy(), atol=1e-4)
    plain = hf_run(hf, run.ids)
    assert np.abs(run.logits - plain.logits[0].numpy()).max() > 1e-3  # the ablation changed the answer


def test_run_refuses_what_the_rest_refuses_and_names_the_hooks_it_knows(gpt2):
    with pytest.raises(attnscope.FieldError, match="blank"):
        gpt2.run("   ")
    with pytest.raises(TypeError):
        gpt2.run(123)  # type: ignore[arg-type]
    with pytest.raises(attnscope.InputError, match="resid_pre"):
        gpt2.run(TEXT, hooks={"residual.0": lambda x, layer: None})
    with pytest.raises(attnscope.InputError, match="rot_q"):
        gpt2.run(TEXT, hooks={"rot_q": lambda x, layer: None})  # GPT-2 has no RoPE


def test_a_metric_of_ones_own_scores_the_patches(gpt2, hf):
    good, bad = 20, 30
    diff = lambda logits: float(logits[-1, good] - logits[-1, bad])  # noqa: E731
    found = gpt2.patch(TEXT, OTHER, target="heads", metric=diff)
    assert found.metric_name == "custom"
    clean, corrupted = (hf_run(hf, gpt2.encode(t).ids).logits[0] for t in (TEXT, OTHER))
    assert found.metric_clean == pytest.approx(diff(clean), abs=1e-4)
    assert found.metric_corrupted == pytest.approx(diff(corrupted), abs=1e-4)
    assert found.patched.shape == (gpt2.info.layers, gpt2.info.heads)
    with pytest.raises(ValueError, match="metric"):
        gpt2.patch(TEXT, OTHER, metric=diff, answer=[good, bad])


def test_activations_save_as_npz_and_read_back_with_numpy(gpt2, tmp_path):
    run = gpt2.run(TEXT, keep=["pattern", "resid_post.1"])
    assert set(run) == {"pattern.0", "pattern.1", "resid_post.1"}
    path = tmp_path / "run.npz"
    run.save(path)
    with np.load(path) as saved:
        np.testing.assert_array_equal(saved["0/pattern.1"], run["pattern.1"])
        assert "meta.json" in saved.files


def test_a_continuation_is_attributed_as_the_rest_attributes_it(gpt2, rest):
    found = gpt2.attribute_continuation("The cat sat on the", 3, steps=32)
    body = rest.post("/api/v1/attribution/continuation", json={
        "text": "The cat sat on the", "model": "tiny-gpt2", "continuation": {"new_tokens": 3}, "steps": 32}).json()
    assert [i for i, _ in found.continuation] == [t["id"] for t in body["continuation"]]
    for j, row in enumerate(body["rows"]):
        np.testing.assert_allclose(found.scores[j, :len(row["scores"])], row["scores"], rtol=1e-6, atol=1e-9)
        assert np.isnan(found.scores[j, len(row["scores"]):]).all()
        assert found.completeness[j].ok == row["completeness"]["ok"]
        assert found.output[j] == pytest.approx(row["output"], rel=1e-6)
    with pytest.raises(attnscope.FieldError):
        gpt2.attribute_continuation("The cat", 65)  # more than the 64 tokens the REST takes
