"""Direct logit attribution (model/analysis/logit_attribution.py) against transformers' own modules.

The reference is written here from forward hooks on transformers' GPT-2, Llama and Gemma 2 (the test
checkpoints, float32): each attention's per-head context before its output projection, times that head's slice
of the projection's weight; each MLP's output (Gemma 2: after its post-feedforward norm); the embeddings
(hidden_states[0]); the final norm's input, whose scale is frozen here; the unembedding rows. Gemma 2's
post-attention norm is frozen at its value on the whole projection output, and its logits are compared before the
soft-cap (the LM head's own output) and after it (the model's logits).
"""

from __future__ import annotations

import pytest
import torch
import transformers

from model.analysis.lens import PositionOutOfRange
from model.analysis.logit_attribution import AnswerError, checked_answer, logit_attribution
from model.checkpoints import load
from model.errors import InputError

TEXT = "Hello world, attention is all you need."
PART_TOLERANCE = 1e-5  # each part against the hooks' own, relative to the largest part
SUM_TOLERANCE = 1e-4  # Σ parts against the model's logit, relative


def off(ours: torch.Tensor, reference: torch.Tensor) -> float:
    """max |ours − reference| / max |reference|."""
    ours, reference = ours.double(), reference.double()
    return float((ours - reference).abs().max() / reference.abs().max().clamp_min(1e-12))


def _norm_form(norm: torch.nn.Module, x: torch.Tensor):
    """A norm of transformers' with its scale frozen at x (D,), float64: c -> normed c without any bias."""
    weight = norm.weight.detach().double()
    if isinstance(norm, torch.nn.LayerNorm):
        s = torch.sqrt(x.var(unbiased=False) + norm.eps)
        return lambda c: (c - c.mean(-1, keepdim=True)) / s * weight
    eps = getattr(norm, "variance_epsilon", getattr(norm, "eps", None))
    gain = 1.0 + weight if type(norm).__name__.startswith("Gemma") else weight  # Gemma's RMSNorm: x̂ · (1 + w)
    r = torch.sqrt((x * x).mean() + eps)
    return lambda c: c / r * gain


def _layout(lm):
    """(blocks, the attention output projection of a block, its weight as (H·Dv, D), the final norm, the block's
    module whose output is the MLP's part, the norm after the attention or None)."""
    if isinstance(lm, transformers.GPT2LMHeadModel):
        return (lm.transformer.h, lambda b: b.attn.c_proj, lambda p: p.weight, lm.transformer.ln_f,
                lambda b: b.mlp, lambda b: None)
    gemma = hasattr(lm.model.layers[0], "post_feedforward_layernorm")
    return (lm.model.layers, lambda b: b.self_attn.o_proj, lambda p: p.weight.T, lm.model.norm,
            (lambda b: b.post_feedforward_layernorm) if gemma else (lambda b: b.mlp),
            (lambda b: b.post_attention_layernorm) if gemma else (lambda b: None))


def reference(lm, ids: list[int], position: int, answer: list[int], n_heads: int):
    """The parts, the pre-cap logit and the model's logit, from hooks on transformers' modules."""
    blocks, proj, proj_weight, final, mlp_of, post_of = _layout(lm)
    seen: dict[str, torch.Tensor] = {}
    hooks = []
    for layer, block in enumerate(blocks):
        hooks.append(proj(block).register_forward_pre_hook(
            lambda m, args, layer=layer: seen.__setitem__(f"z{layer}", args[0][0, position].double())))
        hooks.append(proj(block).register_forward_hook(
            lambda m, args, out, layer=layer: seen.__setitem__(f"o{layer}", out[0, position].double())))
        hooks.append(mlp_of(block).register_forward_hook(
            lambda m, args, out, layer=layer: seen.__setitem__(f"m{layer}", out[0, position].double())))
    hooks.append(final.register_forward_pre_hook(lambda m, args: seen.__setitem__("x", args[0][0, position].double())))
    hooks.append(lm.lm_head.register_forward_hook(lambda m, args, out: seen.__setitem__("pre", out[0, position])))
    try:
        with torch.no_grad():
            out = lm(torch.tensor([ids]), output_hidden_states=True)
    finally:
        for hook in hooks:
            hook.remove()
    rows = lm.lm_head.weight.detach().double()[answer]
    u = rows[0] - rows[1] if len(answer) == 2 else rows[0]
    frozen = _norm_form(final, seen["x"])
    heads, biases, mlps = [], [], []
    for layer, block in enumerate(blocks):
        w = proj_weight(proj(block)).detach().double()  # (H·Dv, D)
        dv = w.shape[0] // n_heads
        z = seen[f"z{layer}"]
        written = torch.stack([z[h * dv:(h + 1) * dv] @ w[h * dv:(h + 1) * dv] for h in range(n_heads)])  # (H, D)
        bias = proj(block).bias
        b = None if bias is None else bias.detach().double()
        post = post_of(block)
        if post is not None:
            post_frozen = _norm_form(post, seen[f"o{layer}"])
            written = post_frozen(written)
        heads.append(frozen(written) @ u)
        biases.append(None if b is None else frozen(b) @ u)
        mlps.append(frozen(seen[f"m{layer}"]) @ u)
    embeddings = frozen(out.hidden_states[0][0, position].double()) @ u
    beta = getattr(final, "bias", None)
    norm_bias = None if beta is None else beta.detach().double() @ u

    def pick(logits: torch.Tensor) -> float:
        return float(logits[answer[0]] - logits[answer[1]]) if len(answer) == 2 else float(logits[answer[0]])

    return {"heads": torch.stack(heads), "mlp": torch.stack(mlps), "embeddings": float(embeddings),
            "attention_bias": None if biases[0] is None else torch.stack(biases),
            "norm_bias": None if norm_bias is None else float(norm_bias),
            "pre_cap": pick(seen["pre"].double()), "logit": pick(out.logits[0, position].double())}


# GPT-2 (LayerNorm, biases), Llama (RMSNorm, grouped-query attention, its own LM head), Gemma 2 (the sandwich norms,
# a tied head, the logits soft-capped)
@pytest.fixture(scope="module", params=["gpt2", "llama", "gemma2"])
def pair(request, checkpoint_dirs, llama_dirs):
    """(our model, transformers' causal LM) on one test checkpoint."""
    kind = request.param
    directory = checkpoint_dirs[kind] if kind == "gpt2" else llama_dirs[kind]
    lm = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    return kind, load(directory), lm


@pytest.mark.parametrize("answer", [[5], [9, 4]])
def test_each_part_equals_the_hooks_on_transformers(pair, answer):
    kind, ours, lm = pair
    ids = ours.tokenizer.encode(TEXT).ids
    for position in (len(ids) - 1, 2):
        got = logit_attribution(ours.decoder, ids, position, answer)
        ref = reference(lm, ids, position, answer, ours.cfg.n_heads)
        assert got.heads.shape == (ours.cfg.n_layers, ours.cfg.n_heads)
        assert off(got.heads, ref["heads"]) <= PART_TOLERANCE, kind
        assert off(got.mlp, ref["mlp"]) <= PART_TOLERANCE, kind
        largest = float(ref["heads"].abs().max())
        assert abs(got.embeddings - ref["embeddings"]) <= PART_TOLERANCE * max(largest, abs(ref["embeddings"]))
        if kind == "gpt2":  # GPT-2's output projection and final LayerNorm have biases; the Llama family's none
            assert got.attention_bias is not None and off(got.attention_bias, ref["attention_bias"]) <= PART_TOLERANCE
            assert got.norm_bias is not None and ref["norm_bias"] is not None
            assert abs(got.norm_bias - ref["norm_bias"]) <= PART_TOLERANCE * max(largest, abs(ref["norm_bias"]))
            assert got.norm == "layer"
        else:
            assert got.attention_bias is None and got.norm_bias is None and ref["attention_bias"] is None
            assert got.norm == "rms"
        # Σ parts is the logit before any soft-cap; the model's own logit after it (Gemma 2 caps at 5.0)
        assert abs(got.total - ref["pre_cap"]) <= SUM_TOLERANCE * abs(ref["pre_cap"]), kind
        assert abs(got.logit - ref["pre_cap"]) <= SUM_TOLERANCE * abs(ref["pre_cap"]), kind
        assert abs(got.capped - ref["logit"]) <= SUM_TOLERANCE * abs(ref["logit"]), kind
        if kind == "gemma2":
            assert got.softcap == 5.0 and abs(got.capped - got.logit) > 1e-3  # the cap changes these logits
        else:
            assert got.softcap is None and got.capped == pytest.approx(got.logit, abs=1e-5)


def test_the_parts_of_a_difference_are_the_differences_of_the_parts(pair):
    _, ours, _ = pair
    ids = ours.tokenizer.encode(TEXT).ids
    at = len(ids) - 1
    good, bad = (logit_attribution(ours.decoder, ids, at, [i]) for i in (9, 4))
    both = logit_attribution(ours.decoder, ids, at, [9, 4])
    assert torch.allclose(both.heads, good.heads - bad.heads, rtol=0, atol=1e-9)
    assert torch.allclose(both.mlp, good.mlp - bad.mlp, rtol=0, atol=1e-9)
    assert both.embeddings == pytest.approx(good.embeddings - bad.embeddings, abs=1e-9)
    assert both.total == pytest.approx(good.total - bad.total, abs=1e-9)
    assert both.logit == pytest.approx(good.logit - bad.logit, abs=1e-6)


def test_the_frozen_scale_is_the_final_norms_on_the_whole_stream(pair):
    """s = √(var(x) + ε) (LayerNorm) or r = √(mean(x²) + ε) (RMSNorm) of the stream the final norm reads, which
    the hooks see entering transformers' own final norm."""
    kind, ours, lm = pair
    ids = ours.tokenizer.encode(TEXT).ids
    got = logit_attribution(ours.decoder, ids, len(ids) - 1, [5])
    final = _layout(lm)[3]
    seen = {}
    hook = final.register_forward_pre_hook(lambda m, args: seen.__setitem__("x", args[0][0, -1].double()))
    with torch.no_grad():
        lm(torch.tensor([ids]))
    hook.remove()
    x = seen["x"]
    if kind == "gpt2":
        expected = torch.sqrt(x.var(unbiased=False) + final.eps)
    else:
        expected = torch.sqrt((x * x).mean() + getattr(final, "variance_epsilon", getattr(final, "eps", 0.0)))
    assert got.scale == pytest.approx(float(expected), rel=1e-6)


@pytest.mark.parametrize("answer, rule, loc", [
    ([], "answer_count", ("answer",)), ([1, 2, 3], "answer_count", ("answer",)),
    ([10 ** 6], "answer_out_of_range", ("answer", "0")), ([3, -1], "answer_out_of_range", ("answer", "1")),
    ([7, 7], "answer_same", ("answer",)),
])
def test_answers_that_do_not_fit_are_refused_by_rule(answer, rule, loc):
    with pytest.raises(AnswerError) as caught:
        checked_answer(answer, 1000)
    assert (caught.value.type, caught.value.loc) == (rule, loc)


def test_a_token_id_must_be_an_int():
    for value in (True, "5", 5.0):
        with pytest.raises(InputError, match="not a token id"):
            checked_answer([value], 1000)  # type: ignore[list-item]


def test_a_position_outside_the_input_and_an_encoder_are_refused(gpt2, minilm):
    ids = gpt2.tokenizer.encode(TEXT).ids
    with pytest.raises(PositionOutOfRange):
        logit_attribution(gpt2.decoder, ids, len(ids), [1])
    with pytest.raises(TypeError, match="LM head"):
        logit_attribution(minilm.net, minilm.tokenizer.encode(TEXT).ids, 0, [1])
