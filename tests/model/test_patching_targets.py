"""The finer patching targets (model/analysis/patching.py: head_position, pattern, mlp), a metric of one's own and
the tiny gap, against references written here with hooks on transformers' own modules: GPT2LMHeadModel on the
test GPT-2 (4 heads) and LlamaForCausalLM on the test Llama (4 query heads sharing 2 key-value heads), both in
eager attention. Where the references copy:
* a head's output at one position: the head's slice of the output projection's input (GPT2Attention.c_proj,
  LlamaAttention.o_proj) at that position, by a forward pre-hook;
* a head's attention weights: the same pre-hook recomputes the head's slice as clean weights (the clean run's
  `output_attentions`) times this forward's own values (the value projection's output seen by a forward hook in
  the same forward; under grouped-query attention query head h reads key-value head h // (H / G));
* an MLP's output at one position: the MLP module's output (GPT2MLP, LlamaMLP), by a forward hook.
Every cell of every layer is computed one forward per cell, over the whole network."""

from __future__ import annotations

import pytest
import torch
import transformers

from model.analysis import patching
from model.analysis.patching import PatchError
from model.checkpoints import load
from tests.checkpoints import make_llama_checkpoint

GPT2_CLEAN, GPT2_CORRUPTED = "The cat sat on the mat.", "The dog sat on the mat."
LLAMA_CLEAN, LLAMA_CORRUPTED = "The cat sat on the mat.", "The the sat on the mat."
GPT2_ANSWER, LLAMA_ANSWER = (328, 326), (7, 11)
TOLERANCE = 1e-5  # relative to the largest |m| of the grid (at least 1)


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    directory = make_llama_checkpoint("llama", tmp_path_factory.mktemp("patch-llama") / "tiny-llama")
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                                  dtype=torch.float32).eval()
    return load(directory), reference


class Parts:
    """Where a reference network's modules are: per layer the attention, its output and value projections and
    the MLP; how its value projection's output becomes (1, G, T, Dh) key-value heads."""

    def __init__(self, reference) -> None:
        self.reference = reference
        if hasattr(reference, "transformer"):  # GPT-2: c_attn makes q, k and v side by side
            blocks = list(reference.transformer.h)
            self.outputs = [b.attn.c_proj for b in blocks]
            self.values = [b.attn.c_attn for b in blocks]
            self.mlps = [b.mlp for b in blocks]
            self.n_heads = self.n_kv = reference.config.n_head
            width = reference.config.n_embd
            self.value_part = lambda out: out[..., 2 * width:]
        else:
            layers = list(reference.model.layers)
            self.outputs = [la.self_attn.o_proj for la in layers]
            self.values = [la.self_attn.v_proj for la in layers]
            self.mlps = [la.mlp for la in layers]
            self.n_heads, self.n_kv = reference.config.num_attention_heads, reference.config.num_key_value_heads
            self.value_part = lambda out: out

    def logits(self, ids, **kwargs):
        with torch.no_grad():
            return self.reference(torch.tensor([ids]), **kwargs)

    def value_heads(self, out: torch.Tensor) -> torch.Tensor:
        v = self.value_part(out)  # (1, T, G·Dh)
        return v.view(v.shape[0], v.shape[1], self.n_kv, -1).transpose(1, 2)  # (1, G, T, Dh)


def run_hooked(parts: Parts, ids, pre=(), post=()):
    """The logits (1, T, V) of one forward with forward pre-hooks and forward hooks [(module, fn)]."""
    handles = [m.register_forward_pre_hook(fn) for m, fn in pre] + [m.register_forward_hook(fn) for m, fn in post]
    try:
        return parts.logits(ids).logits
    finally:
        for handle in handles:
            handle.remove()


def recorded(parts: Parts, ids) -> dict:
    """The clean run's head outputs (inputs of the output projections), MLP outputs and attention weights."""
    seen: dict = {"heads": [], "mlp": []}
    pre = [(m, lambda _m, args: seen["heads"].append(args[0].clone())) for m in parts.outputs]
    post = [(m, lambda _m, _a, out: seen["mlp"].append(out.clone())) for m in parts.mlps]
    run_hooked(parts, ids, pre, post)
    seen["pattern"] = [a.clone() for a in parts.logits(ids, output_attentions=True).attentions]  # (1, H, T, T)
    return seen


def reference_cell(parts: Parts, clean: dict, corrupted_ids, target: str, layer: int, head: int, position: int,
                   share=lambda h, size: h // size):
    """The logits after patching one cell. `share(h, H / G)`: the key-value head that query head h reads (a wrong
    one is a control that must fail)."""
    width = clean["heads"][layer].shape[-1] // parts.n_heads
    cut = slice(head * width, (head + 1) * width)
    if target == "mlp":
        def mlp(_m, _a, out):
            out = out.clone()
            out[:, position] = clean["mlp"][layer][:, position]
            return out
        return run_hooked(parts, corrupted_ids, post=[(parts.mlps[layer], mlp)])
    if target == "head_position":
        def head_at(_m, args):
            x = args[0].clone()
            x[:, position, cut] = clean["heads"][layer][:, position, cut]
            return (x, *args[1:])
        return run_hooked(parts, corrupted_ids, pre=[(parts.outputs[layer], head_at)])
    values: list[torch.Tensor] = []

    def keep_v(_m, _a, out):
        values.append(parts.value_heads(out))

    def weighted(_m, args):
        x = args[0].clone()
        v = values[-1][:, share(head, parts.n_heads // parts.n_kv)]  # (1, T, Dh)
        x[..., cut] = clean["pattern"][layer][:, head] @ v  # (1, T, Dh)
        return (x, *args[1:])
    return run_hooked(parts, corrupted_ids, pre=[(parts.outputs[layer], weighted)],
                      post=[(parts.values[layer], keep_v)])


def reference_grid(parts: Parts, clean_ids, corrupted_ids, target: str, metric, **kwargs) -> torch.Tensor:
    clean = recorded(parts, clean_ids)
    n_layers, t = len(parts.outputs), len(clean_ids)
    shape = {"mlp": (n_layers, t), "pattern": (n_layers, parts.n_heads)}.get(target, (n_layers, parts.n_heads, t))
    grid = torch.empty(shape)
    for cell in torch.cartesian_prod(*(torch.arange(n) for n in shape)).tolist():
        layer, rest = cell[0], cell[1:]
        head, position = (0, rest[0]) if target == "mlp" else (rest[0], rest[-1])
        grid[tuple(cell)] = metric(reference_cell(parts, clean, corrupted_ids, target, layer, head, position, **kwargs))
    return grid


def logit_difference(answer):
    return lambda logits: float(logits[0, -1, answer[0]] - logits[0, -1, answer[1]])


def assert_close(ours: torch.Tensor, expected: torch.Tensor) -> None:
    assert ours.shape == expected.shape
    assert (ours - expected).abs().max() <= TOLERANCE * max(1.0, float(expected.abs().max()))


@pytest.mark.parametrize("target", ["head_position", "pattern", "mlp"])
def test_gpt2_and_grouped_llama_equal_hooks_on_transformers(gpt2, gpt2_reference, llama, target):
    for model, reference, (clean_text, corrupted_text), answer in (
        (gpt2, gpt2_reference, (GPT2_CLEAN, GPT2_CORRUPTED), GPT2_ANSWER),
        (*llama, (LLAMA_CLEAN, LLAMA_CORRUPTED), LLAMA_ANSWER),
    ):
        clean, corrupted = model.tokenizer.encode(clean_text), model.tokenizer.encode(corrupted_text)
        ours = patching.patch(model, clean, corrupted, target, list(answer))
        parts = Parts(reference)
        expected = reference_grid(parts, clean.ids, corrupted.ids, target, logit_difference(answer))
        assert ours.axes == {"mlp": ("layer", "position"), "pattern": ("layer", "head")}.get(
            target, ("layer", "head", "position"))
        assert_close(ours.patched, expected)
        assert ours.normalised and ours.grid is not None
        assert_close(ours.grid, (expected - ours.corrupted) / (ours.clean - ours.corrupted))
        assert (ours.patched - ours.corrupted).abs().max() > 1e-3  # the patches do move the metric
        if target == "pattern" and parts.n_kv < parts.n_heads:  # control: the wrong key-value head's values
            wrong = reference_grid(parts, clean.ids, corrupted.ids, target, logit_difference(answer),
                                   share=lambda h, size, g=parts.n_kv: h % g)
            assert (ours.patched - wrong).abs().max() > 100 * TOLERANCE


def test_a_metric_of_ones_own_sees_one_runs_logits_or_hidden_state(gpt2, gpt2_reference, minilm):
    clean, corrupted = gpt2.tokenizer.encode(GPT2_CLEAN), gpt2.tokenizer.encode(GPT2_CORRUPTED)
    shapes = set()

    def log_prob(logits: torch.Tensor) -> float:  # log p(" mat") after the last token
        shapes.add(tuple(logits.shape))
        return float(logits[-1].log_softmax(-1)[328])

    ours = patching.patch(gpt2, clean, corrupted, "mlp", metric=log_prob)
    assert shapes == {(len(clean), gpt2.cfg.vocab_size)} and ours.metric_name == "custom" and ours.answer is None
    expected = reference_grid(Parts(gpt2_reference), clean.ids, corrupted.ids, "mlp",
                              lambda logits: float(logits[0, -1].log_softmax(-1)[328]))
    assert_close(ours.patched, expected)
    m_clean, m_corrupted = (float(Parts(gpt2_reference).logits(ids).logits[0, -1].log_softmax(-1)[328])
                            for ids in (clean.ids, corrupted.ids))
    assert (ours.clean, ours.corrupted) == (pytest.approx(m_clean, abs=1e-5), pytest.approx(m_corrupted, abs=1e-5))
    # an encoder's metric sees the last hidden state (T, D)
    seen = set()

    def first_norm(hidden: torch.Tensor) -> float:
        seen.add(tuple(hidden.shape))
        return float(hidden[0].norm())

    enc_clean, enc_corrupted = minilm.tokenizer.encode("The cat sat."), minilm.tokenizer.encode("The dog sat.")
    assert patching.patch(minilm, enc_clean, enc_corrupted, "heads", metric=first_norm).patched.shape == (6, 12)
    assert seen == {(len(enc_clean), 384)}
    with pytest.raises(ValueError, match="answer"):
        patching.patch(gpt2, clean, corrupted, "heads", list(GPT2_ANSWER), metric=log_prob)
    with pytest.raises(PatchError) as same:  # a metric that no text changes: nothing to restore
        patching.patch(gpt2, clean, corrupted, "heads", metric=lambda logits: 1.0)
    assert same.value.type == "metric_unchanged"


def test_a_tiny_gap_leaves_the_grid_unnormalised_and_says_its_scale(minilm, gpt2, gpt2_reference):
    """MiniLM: "the" → "a" moves the cosine similarity by about 0.005, below 5 % of its scale 1. GPT-2: the
    logit difference's scale is the larger standard deviation of the two runs' last logits, recomputed here."""
    tiny = patching.patch(minilm, minilm.tokenizer.encode("The cat sat on the mat."),
                          minilm.tokenizer.encode("The cat sat on a mat."), "heads")
    assert 0 < tiny.clean - tiny.corrupted < 0.05 and not tiny.normalised and tiny.grid is None
    assert tiny.min_gap == pytest.approx(0.05) and tiny.patched.shape == (6, 12)
    clean, corrupted = gpt2.tokenizer.encode(GPT2_CLEAN), gpt2.tokenizer.encode(GPT2_CORRUPTED)
    found = patching.patch(gpt2, clean, corrupted, "pattern", list(GPT2_ANSWER))
    last = [Parts(gpt2_reference).logits(ids).logits[0, -1] for ids in (clean.ids, corrupted.ids)]
    scale = max(abs(found.clean), abs(found.corrupted), *(float(v.std()) for v in last))
    assert found.min_gap == pytest.approx(0.05 * scale, rel=1e-5)
    assert found.normalised == (abs(found.clean - found.corrupted) >= found.min_gap)


def test_work_counts_each_targets_runs(gpt2):
    net, t = gpt2.net, 10
    heads = patching.work(net, "heads", t)
    assert patching.work(net, "pattern", t) == heads
    assert patching.work(net, "head_position", t) == heads * t
    assert patching.work(net, "mlp", t) == patching.work(net, "residual", t) == heads * t / net.cfg.n_heads
    with pytest.raises(PatchError) as large:
        patching.check_work(net, "head_position", 40, max_work=patching.work(net, "head_position", 30))
    assert large.value.ctx == {"tokens": 40, "max_tokens": 30} and "or target heads" in large.value.message
