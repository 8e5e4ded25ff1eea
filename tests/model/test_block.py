"""The whole block in a layer's trace (LoadedModel.trace_layer(block=True), model/steps.py BLOCK_STEPS) against
transformers' own modules on the same checkpoint, read with forward hooks: the residual sums, the norms, the MLP
inside and out, the layer's output (hidden_states[layer + 1]) and a pre-norm model's final norm. MiniLM
(post-norm BERT, the packaged files), the test GPT-2 (pre-norm LayerNorm), the Llama family (RMSNorm, a gated
SiLU MLP) and Gemma 2 (a norm after each sublayer too). A hook's input is the module's first positional
argument, its output the module's output (a tuple's first element)."""

from __future__ import annotations

import pytest
import torch
import transformers

from model.checkpoints import load
from model.checkpoints.loaded import LoadedModel
from model.steps import BLOCK_STEPS

from ..checkpoints import LLAMA_KINDS

TOLERANCE = 1e-5
TEXT = "The animal didn't cross the street because it was too tired."

# our step -> (the module under transformers' layer, "in" or "out"); None: the layer itself
BERT = {"block_input": ("attention.self", "in"), "output": ("attention.output.dense", "out"),
        "add_1": ("attention.output.LayerNorm", "in"), "norm_1": ("attention.output.LayerNorm", "out"),
        "mlp_hidden": ("intermediate.dense", "out"), "mlp_act": ("intermediate", "out"),
        "mlp_out": ("output.dense", "out"), "add_2": ("output.LayerNorm", "in"), "norm_2": (None, "out")}
GPT2 = {"block_input": ("ln_1", "in"), "norm_1": ("ln_1", "out"), "output": ("attn.c_proj", "out"),
        "add_1": ("ln_2", "in"), "norm_2": ("ln_2", "out"), "mlp_hidden": ("mlp.c_fc", "out"),
        "mlp_act": ("mlp.act", "out"), "mlp_out": ("mlp.c_proj", "out"), "add_2": (None, "out")}
LLAMA = {"block_input": ("input_layernorm", "in"), "norm_1": ("input_layernorm", "out"),
         "output": ("self_attn.o_proj", "out"), "add_1": ("post_attention_layernorm", "in"),
         "norm_2": ("post_attention_layernorm", "out"), "mlp_gate": ("mlp.gate_proj", "out"),
         "mlp_gate_act": ("mlp.act_fn", "out"), "mlp_hidden": ("mlp.up_proj", "out"),
         "mlp_act": ("mlp.down_proj", "in"), "mlp_out": ("mlp.down_proj", "out"), "add_2": (None, "out")}
GEMMA2 = {**LLAMA, "post_norm_1": ("post_attention_layernorm", "out"), "add_1": ("pre_feedforward_layernorm", "in"),
          "norm_2": ("pre_feedforward_layernorm", "out"), "post_norm_2": ("post_feedforward_layernorm", "out")}


def hooked(layer_module: torch.nn.Module, where: dict[str, tuple[str | None, str]]):
    """Forward hooks that keep, for each of our steps, the input or output of transformers' module."""
    seen: dict[str, torch.Tensor] = {}
    handles = []
    for step, (path, side) in where.items():
        module = layer_module if path is None else layer_module.get_submodule(path)

        def keep(_module, args, output, step=step, side=side):
            value = args[0] if side == "in" else output
            seen[step] = (value[0] if isinstance(value, tuple) else value)[0].detach().clone()  # batch item 0

        handles.append(module.register_forward_hook(keep))
    return seen, handles


def compare(ours: LoadedModel, reference: torch.nn.Module, layers: torch.nn.ModuleList, where, layer: int,
            **inputs) -> dict[str, torch.Tensor]:
    """Our block steps of `layer` beside the hooks' values; returns the hidden states transformers gave."""
    encoded = ours.tokenizer.encode(TEXT)
    traced = ours.trace_layer(encoded, layer, block=True)
    seen, handles = hooked(layers[layer], where)
    try:
        with torch.no_grad():
            out = reference(input_ids=torch.tensor([encoded.ids]), output_hidden_states=True, **inputs)
    finally:
        for handle in handles:
            handle.remove()
    block = [name for name in traced if name in BLOCK_STEPS]
    expected = set(where) - {"output"} | ({"final_norm"} if layer == ours.cfg.n_layers - 1
                                          and ours.cfg.norm_place == "pre" else set())
    assert set(block) == expected  # every step of this family's block, no other
    for step in where:
        assert torch.allclose(traced[step], seen[step], atol=TOLERANCE, rtol=0), (layer, step)
    output = traced[ours.block_parts(layer).order == "pre" and "add_2" or "norm_2"]
    hidden = out.hidden_states
    if "final_norm" in traced:  # transformers' last hidden state is after the final norm
        assert torch.allclose(traced["final_norm"], hidden[layer + 1][0], atol=TOLERANCE, rtol=0)
        assert not torch.allclose(output, hidden[layer + 1][0], atol=1e-3)
    else:
        assert torch.allclose(output, hidden[layer + 1][0], atol=TOLERANCE, rtol=0)
    assert torch.allclose(traced["block_input"], hidden[layer][0], atol=TOLERANCE, rtol=0)
    return traced


@pytest.mark.parametrize("layer", [0, 5])
def test_minilm_post_norm_block_equals_bert(minilm, bert_reference, layer):
    traced = compare(minilm, bert_reference, bert_reference.encoder.layer, BERT, layer)
    assert list(name for name in traced if name in BLOCK_STEPS) == [
        "block_input", "add_1", "norm_1", "mlp_hidden", "mlp_act", "mlp_out", "add_2", "norm_2"]
    parts = minilm.block_parts(layer)
    ln = bert_reference.encoder.layer[layer].attention.output.LayerNorm
    assert torch.equal(parts.params["norm_1"][0], ln.weight) and torch.equal(parts.params["norm_1"][1], ln.bias)
    assert (parts.order, parts.norm, parts.activation, parts.gated, parts.eps) == ("post", "layer", "gelu", False,
                                                                                   ln.eps)


@pytest.mark.parametrize("layer", [0, 1])
def test_gpt2_pre_norm_block_and_final_norm_equal_transformers(gpt2, gpt2_reference, layer):
    model = gpt2_reference.transformer
    traced = compare(gpt2, model, model.h, GPT2, layer)
    assert gpt2.cfg.n_layers == 2  # layer 1 is the last: its trace ends with the final norm (ln_f)
    order = [name for name in traced if name in BLOCK_STEPS]
    assert order[:3] == ["block_input", "norm_1", "add_1"] and order[-1] == ("final_norm" if layer == 1 else "add_2")
    assert list(traced).index("norm_1") < list(traced).index("input")  # the norm comes before the attention


@pytest.fixture(scope="module", params=LLAMA_KINDS)
def llama(request, llama_dirs):
    directory = llama_dirs[request.param]
    reference = transformers.AutoModelForCausalLM.from_pretrained(str(directory), attn_implementation="eager",
                                                                  dtype=torch.float32).eval()
    return request.param, load(directory), reference.model


def test_llama_family_gated_block_equals_transformers(llama):
    kind, ours, model = llama
    for layer in range(ours.cfg.n_layers):
        traced = compare(ours, model, model.layers, GEMMA2 if kind == "gemma2" else LLAMA, layer)
        gate, opened, up = traced["mlp_gate"], traced["mlp_gate_act"], traced["mlp_hidden"]
        assert torch.allclose(traced["mlp_act"], opened * up, atol=1e-6)  # act(gate) ⊙ up, elementwise
        if kind != "gemma2":
            assert torch.allclose(opened, gate * torch.sigmoid(gate), atol=1e-6)  # SiLU
        parts = ours.block_parts(layer)
        assert parts.gated and parts.norm == "rms" and all(bias is None for _, bias in parts.params.values())
        assert set(parts.params) == {"norm_1", "norm_2"} | ({"post_norm_1", "post_norm_2"} if kind == "gemma2"
                                                             else set()) | ({"final_norm"} if layer ==
                                                                            ours.cfg.n_layers - 1 else set())


def test_the_mlp_works_on_each_token_alone(minilm):
    """Permuting the MLP's input rows permutes its output rows, and changing one token's row changes that row of
    its output only; the attention's output changes in every row (it is the block's only exchange between
    tokens). (Within a layer the attention is permutation-equivariant too: positions entered with the
    embeddings, so permuting alone would not tell the two apart.)"""
    encoded = minilm.tokenizer.encode(TEXT)
    traced = minilm.trace_layer(encoded, 2, block=True)
    block = minilm.net.block(2)
    x = traced["norm_1"]  # what the MLP reads (post-norm)
    order = torch.randperm(x.shape[0], generator=torch.Generator().manual_seed(0))
    changed = traced["block_input"].clone()
    changed[3] += 0.5
    with torch.no_grad():
        assert torch.allclose(block.mlp(x[order]), traced["mlp_out"][order], atol=1e-6)
        moved = x.clone()
        moved[3] += 0.5
        differ = (block.mlp(moved) - traced["mlp_out"]).abs().amax(dim=1)  # (T,)
        attended = block.attention(changed[None])[0]
    assert differ[3] > 1e-2 and torch.cat([differ[:3], differ[4:]]).max() == 0
    assert ((attended - traced["output"]).abs().amax(dim=1) > 1e-4).all()
