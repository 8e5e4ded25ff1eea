"""The ProbSparse what-if edit on real models, against transformers' own models with that layer's attention
replaced in a forward hook by ProbSparse written here in numpy (from the module's own q, k and v): MiniLM
(an encoder: lazy rows take the mean of V) and the test GPT-2 (causal: the cumulative sum of V, as Informer's
source does); and what model/analysis/edit_effect.py reports (the active queries, each row's change, the final
hidden state's and the next token's) recomputed here from transformers' numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.analysis.edit_effect import edit_effect
from model.nets.edit import Edit, EditError

TOLERANCE = 1e-5
TEXT = "The cat sat on the mat because it was tired, and the dog watched it from the door all afternoon."


def sampled_keys(queries: int, keys: int, factor: int, seed: int) -> np.ndarray:
    """The documented sample: torch.randint(S, (L, U)) from torch.Generator().manual_seed(seed + 8)."""
    u = min(factor * math.ceil(math.log(keys)), keys)
    return torch.randint(keys, (queries, u), generator=torch.Generator().manual_seed(seed + 8)).numpy()


def probsparse_heads(q, k, v, factor, seed, causal, scale):
    """Per head (numpy, float64): M on the sampled keys, the top-u queries' softmax rows (stable order: the
    earlier query first among equals), every other row the mean of V or (causal) its cumulative sum.
    q, k, v: (H, N, Dh). Returns the context (H, N, Dh) and the active queries per head."""
    h, n, _ = q.shape
    sample = sampled_keys(n, n, factor, seed)  # (N, U)
    u = min(factor * math.ceil(math.log(n)), n)
    context, active = np.empty_like(v), []
    for head in range(h):
        scores = q[head] @ k[head].T  # (N, N) unscaled
        picked = np.take_along_axis(scores, sample, axis=1)  # (N, U)
        measure = picked.max(axis=1) - picked.sum(axis=1) / n
        top = np.sort(np.argsort(-measure, kind="stable")[:u])
        active.append(top)
        lazy = np.cumsum(v[head], axis=0) if causal else np.repeat(v[head].mean(axis=0, keepdims=True), n, axis=0)
        scaled = scores * scale
        if causal:
            scaled = np.where(np.tril(np.ones((n, n), dtype=bool)), scaled, -np.inf)
        rows = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        rows /= rows.sum(axis=1, keepdims=True)
        context[head] = lazy
        context[head][top] = rows[top] @ v[head]
    return context, active


def heads_of(x: torch.Tensor, h: int) -> np.ndarray:
    n, d = x.shape[-2:]
    return x.reshape(n, h, d // h).transpose(0, 1).double().numpy()  # (H, N, Dh)


def bert_with_probsparse(hf, layer: int, factor: int, seed: int, found: dict):
    """transformers' BertModel with ProbSparse on every head of layer `layer` (a hook on its self-attention)."""
    module = hf.encoder.layer[layer].attention.self
    h = hf.config.num_attention_heads

    def hook(mod, args, kwargs, output):
        x = (args[0] if args else kwargs["hidden_states"])[0]  # (N, D)
        q, k, v = (heads_of(lin(x).detach(), h) for lin in (mod.query, mod.key, mod.value))
        context, found["active"] = probsparse_heads(q, k, v, factor, seed, False, 1 / math.sqrt(q.shape[-1]))
        merged = torch.from_numpy(context).transpose(0, 1).reshape(1, x.shape[0], -1).float()
        return (merged, *output[1:])

    return module.register_forward_hook(hook, with_kwargs=True)


def gpt2_with_probsparse(hf, layer: int, factor: int, seed: int, found: dict):
    module = hf.transformer.h[layer].attn
    h = hf.config.n_head

    def hook(mod, args, kwargs, output):
        x = (args[0] if args else kwargs["hidden_states"])[0]  # (N, D)
        q, k, v = (heads_of(t.detach(), h) for t in mod.c_attn(x).split(mod.split_size, dim=-1))
        context, found["active"] = probsparse_heads(q, k, v, factor, seed, True, 1 / math.sqrt(q.shape[-1]))
        merged = torch.from_numpy(context).transpose(0, 1).reshape(1, x.shape[0], -1).float()
        return (mod.c_proj(merged), *output[1:])

    return module.register_forward_hook(hook, with_kwargs=True)


@pytest.mark.parametrize("factor", [1, 2])
def test_minilm_edit_equals_transformers_with_probsparse_hooked_in(minilm, bert_reference, factor):
    encoded = minilm.tokenizer.encode(TEXT)
    ids = torch.tensor([encoded.ids])
    found: dict = {}
    handle = bert_with_probsparse(bert_reference, 2, factor, 7, found)
    try:
        with torch.no_grad():
            reference = bert_reference(ids, output_attentions=True).last_hidden_state[0]  # (N, D)
    finally:
        handle.remove()
    edit = Edit(layer=2, probsparse=factor, seed=7)
    ours = minilm.run(encoded, edit=edit)[0]
    assert (ours - reference).abs().max().item() <= TOLERANCE
    effect = edit_effect(minilm, encoded, edit)
    assert effect.probsparse is not None and effect.probsparse.heads == list(range(12))
    assert [a.tolist() for a in effect.probsparse.active] == [a.tolist() for a in found["active"]]
    with torch.no_grad():
        plain = bert_reference(ids).last_hidden_state[0].double()
    difference = (reference.double() - plain).numpy()
    assert effect.hidden_relative == pytest.approx(np.linalg.norm(difference) / np.linalg.norm(plain.numpy()),
                                                   rel=1e-4)
    assert effect.next_token is None  # MiniLM has no LM head
    assert effect.layers == [2, 3, 4, 5]


def test_minilm_edited_layer_rows_change_by_their_distance_from_uniform(minilm, bert_reference):
    """The edited layer's row change: 0 on the active rows, and on a lazy row ½ Σ_j |a_ij − 1/N| of transformers'
    own weights."""
    encoded = minilm.tokenizer.encode(TEXT)
    with torch.no_grad():
        maps = bert_reference(torch.tensor([encoded.ids]), output_attentions=True).attentions[1][0].double().numpy()
    effect = edit_effect(minilm, encoded, Edit(layer=1, heads=(3, 5), probsparse=1))
    n = len(encoded)
    change = 0.5 * np.abs(maps - 1 / n).sum(axis=-1)  # (H, N)
    for row, head in enumerate((3, 5)):
        active = effect.probsparse.active[row].numpy()
        change[head][active] = 0
        assert effect.row_change_mean[0, head].item() == pytest.approx(change[head].mean(), abs=1e-5)
        assert effect.row_change_max[0, head].item() == pytest.approx(change[head].max(), abs=1e-5)
    assert effect.row_change_max[0, [0, 1, 2, 4]].abs().max().item() <= 1e-6  # unedited heads of that layer


def test_gpt2_edit_equals_transformers_and_the_next_token_is_measured(gpt2, gpt2_reference):
    encoded = gpt2.tokenizer.encode("The cat sat on the mat. Where is the dog? Hello world, attention.")
    ids = torch.tensor([encoded.ids])
    found: dict = {}
    with torch.no_grad():
        plain = gpt2_reference(ids).logits[0, -1].double()
    handle = gpt2_with_probsparse(gpt2_reference, 0, 1, 0, found)
    try:
        with torch.no_grad():
            edited = gpt2_reference(ids).logits[0, -1].double()
    finally:
        handle.remove()
    edit = Edit(layer=0, probsparse=1)
    hidden = gpt2.run(encoded, edit=edit)
    with torch.inference_mode():
        logits = gpt2.net.logits(hidden)[0, -1].double()
    assert (logits - edited).abs().max().item() <= 1e-4  # logits over the vocabulary, from a 1e-5 hidden state
    effect = edit_effect(gpt2, encoded, edit)
    assert [a.tolist() for a in effect.probsparse.active] == [a.tolist() for a in found["active"]]
    p, q = torch.softmax(plain, -1).numpy(), torch.softmax(edited, -1).numpy()
    nt = effect.next_token
    assert nt.kl == pytest.approx(float((p * (np.log(p) - np.log(q))).sum()), rel=1e-3, abs=1e-6)
    assert (nt.before, nt.after) == (int(p.argmax()), int(q.argmax()))
    assert nt.before_probability_after == pytest.approx(float(q[p.argmax()]), rel=1e-4)


def test_every_query_active_is_the_unedited_model(minilm):
    """c·⌈ln N⌉ ≥ N: every query keeps its softmax row, so nothing changes."""
    encoded = minilm.tokenizer.encode("a cat")  # 4 tokens: 5·⌈ln 4⌉ = 10 ≥ 4
    effect = edit_effect(minilm, encoded, Edit(layer=0, probsparse=5))
    assert effect.hidden_relative == 0.0
    assert effect.row_change_max.abs().max().item() == 0.0
    assert effect.probsparse.active.shape == (12, 4)


def test_probsparse_edit_rules():
    with pytest.raises(EditError) as error:
        Edit(layer=0, probsparse=0)
    assert error.value.type == "edit_factor"
    with pytest.raises(EditError) as error:
        Edit(layer=0, probsparse=2, ablate=True)
    assert error.value.type == "edit_probsparse_alone" and error.value.loc == ("edit", "ablate")
    with pytest.raises(EditError) as error:
        Edit(layer=0, probsparse=2).check(6, 12, 1)
    assert error.value.type == "edit_probsparse_short"
    assert not Edit(layer=0, probsparse=2).changes_nothing


def test_llama_edit_measures_the_rotated_q_and_k_of_shared_kv_heads(llama_dirs):
    """A Llama checkpoint (RoPE, two key-value heads for four query heads): M is measured on the rotated q and k,
    each query head on its group's key head, against transformers' LlamaAttention with ProbSparse hooked in."""
    import transformers
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    from model.checkpoints import load

    directory = llama_dirs["llama"]
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                                  dtype=torch.float32).eval()
    ours = load(directory)
    text = "the cat sat on the mat and the dog sat on the rug"
    ids = tok(text, return_tensors="pt")["input_ids"]
    encoded = ours.tokenizer.encode(text)
    assert encoded.ids == ids[0].tolist()
    found: dict = {}
    module = reference.model.layers[1].self_attn
    h, g = reference.config.num_attention_heads, reference.config.num_key_value_heads

    def hook(mod, args, kwargs, output):
        x = kwargs["hidden_states"] if "hidden_states" in kwargs else args[0]
        cos, sin = kwargs["position_embeddings"]
        n, dh = x.shape[1], mod.head_dim
        q = mod.q_proj(x).view(1, n, h, dh).transpose(1, 2)
        k = mod.k_proj(x).view(1, n, g, dh).transpose(1, 2)
        v = mod.v_proj(x).view(1, n, g, dh).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        k, v = (t.repeat_interleave(h // g, dim=1) for t in (k, v))
        context, found["active"] = probsparse_heads(*(t[0].detach().double().numpy() for t in (q, k, v)), 1, 3, True,
                                                    mod.scaling)
        merged = torch.from_numpy(context).transpose(0, 1).reshape(1, n, -1).float()
        return (mod.o_proj(merged), *output[1:])

    handle = module.register_forward_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            expected = reference(ids, output_hidden_states=True).hidden_states[-1][0]  # after the final norm
    finally:
        handle.remove()
    edit = Edit(layer=1, probsparse=1, seed=3)
    assert (ours.run(encoded, edit=edit)[0] - expected).abs().max().item() <= TOLERANCE
    effect = edit_effect(ours, encoded, edit)
    assert [a.tolist() for a in effect.probsparse.active] == [a.tolist() for a in found["active"]]
