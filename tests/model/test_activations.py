"""The network's taps (model/nets/taps.py) and attnscope.activations.run against transformers' own modules.

Every activation of every layer is read from transformers' BERT, GPT-2 and Llama (RoPE, 4 query heads sharing
2 key-value heads) tiny checkpoints with forward hooks on their modules: q, k, v from the projections, rot_q and
rot_k by transformers' apply_rotary_pos_emb on the cos/sin its attention receives, the scores from those q and
k, the pattern from output_attentions (eager), z from the output projection's input, and so on. The hooks of
the Python API (ablate a head, steer the stream, patch from another run) are checked against the same change
made with hooks on transformers' modules.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from attnscope.activations import Activations, run
from model.checkpoints import LoadedModel, load
from model.errors import InputError
from model.nets.taps import BLOCK_TAPS, FINAL_TAP, LayerTaps, Taps
from model.trace import Trace
from tests.checkpoints import make_checkpoint, make_llama_checkpoint

TOLERANCE = 1e-5
TEXT, OTHER = "The cat sat on the mat.", "The cat is on the mat."  # the same token count in each family


@dataclass
class Family:
    """Our model and transformers' on the same checkpoint, and where each activation is in transformers'."""

    ours: LoadedModel
    hf: torch.nn.Module
    blocks: list[torch.nn.Module]
    parts: Callable[[torch.nn.Module], dict[str, torch.nn.Module]]  # a block -> its modules by role
    final: torch.nn.Module | None  # the final norm
    heads: int
    kv_heads: int
    causal: bool
    rope: bool


def bert_parts(block: torch.nn.Module) -> dict[str, torch.nn.Module]:
    a = block.attention
    return {"q": a.self.query, "k": a.self.key, "v": a.self.value, "o": a.output.dense, "mid": a.output.LayerNorm,
            "mlp": block.output.dense}


def gpt2_parts(block: torch.nn.Module) -> dict[str, torch.nn.Module]:
    return {"qkv": block.attn.c_attn, "o": block.attn.c_proj, "mid": block.ln_2, "mlp": block.mlp}


def llama_parts(block: torch.nn.Module) -> dict[str, torch.nn.Module]:
    a = block.self_attn
    return {"q": a.q_proj, "k": a.k_proj, "v": a.v_proj, "o": a.o_proj, "mid": block.post_attention_layernorm,
            "mlp": block.mlp, "attn": a}


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory) -> Family:
    directory = make_checkpoint("bert", tmp_path_factory.mktemp("activations") / "tiny-bert")
    hf = transformers.BertModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    return Family(load(directory), hf, list(hf.encoder.layer), bert_parts, None, 4, 4, False, False)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory: pytest.TempPathFactory) -> Family:
    directory = make_checkpoint("gpt2", tmp_path_factory.mktemp("activations") / "tiny-gpt2")
    hf = transformers.GPT2LMHeadModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    return Family(load(directory), hf, list(hf.transformer.h), gpt2_parts, hf.transformer.ln_f, 4, 4, True, False)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Family:
    directory = make_llama_checkpoint("llama", tmp_path_factory.mktemp("activations") / "tiny-llama")
    hf = transformers.AutoModelForCausalLM.from_pretrained(str(Path(directory)), attn_implementation="eager",
                                                           dtype=torch.float32).eval()
    return Family(load(directory), hf, list(hf.model.layers), llama_parts, hf.model.norm, 4, 2, True, True)


@pytest.fixture(params=["bert", "gpt2", "llama"])
def family(request: pytest.FixtureRequest) -> Family:
    fam: Family = request.getfixturevalue(request.param)
    return fam


def _input(args: tuple, kwargs: dict) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


def _output(output: object) -> torch.Tensor:
    return output[0] if isinstance(output, tuple) else output


def split(x: torch.Tensor, n: int) -> torch.Tensor:
    """(T, n*Dh) -> (n, T, Dh), as transformers' view(…, n, Dh).transpose(1, 2)."""
    t, width = x.shape
    return x.view(t, n, width // n).transpose(0, 1)


def reference(fam: Family, ids: list[int]) -> tuple[dict[str, torch.Tensor], torch.Tensor | None]:
    """transformers' forward of `ids` with every activation read by hooks on its modules (after any hook
    registered before this call): name.layer -> tensor without the batch axis, and the logits (T, V) or None."""
    got: dict[str, torch.Tensor] = {}

    def take_in(name: str) -> Callable:
        def hook(mod, args, kwargs):
            got[name] = _input(args, kwargs)[0].detach().clone()
            if name.startswith("attn_in.") and "position_embeddings" in kwargs:
                got["cos." + name[8:]], got["sin." + name[8:]] = kwargs["position_embeddings"]
        return hook

    def take_out(name: str) -> Callable:
        def hook(mod, args, kwargs, output):
            got[name] = _output(output)[0].detach().clone()
        return hook

    handles = []
    for layer, block in enumerate(fam.blocks):
        handles.append(block.register_forward_pre_hook(take_in(f"resid_pre.{layer}"), with_kwargs=True))
        handles.append(block.register_forward_hook(take_out(f"resid_post.{layer}"), with_kwargs=True))
        for role, module in fam.parts(block).items():
            if role in ("o", "mid", "attn"):
                handles.append(module.register_forward_pre_hook(take_in(f"{role}_in.{layer}"), with_kwargs=True))
            if role in ("q", "k", "v", "qkv", "o", "mlp"):
                handles.append(module.register_forward_hook(take_out(f"{role}_out.{layer}"), with_kwargs=True))
    if fam.final is not None:
        handles.append(fam.final.register_forward_hook(take_out(FINAL_TAP), with_kwargs=True))
    try:
        with torch.no_grad():
            out = fam.hf(torch.tensor([ids]), output_attentions=True)
    finally:
        for handle in handles:
            handle.remove()
    ref = {key: got[key] for key in got if key.startswith(("resid_", FINAL_TAP))}
    h, g = fam.heads, fam.kv_heads
    for layer in range(len(fam.blocks)):
        if "qkv_out.0" in got:
            q, k, v = got[f"qkv_out.{layer}"].chunk(3, dim=-1)
        else:
            q, k, v = (got[f"{n}_out.{layer}"] for n in "qkv")
        ref[f"q.{layer}"], ref[f"k.{layer}"], ref[f"v.{layer}"] = split(q, h), split(k, g), split(v, g)
        qs, ks = ref[f"q.{layer}"], ref[f"k.{layer}"]
        if fam.rope:
            cos, sin = got[f"cos.{layer}"], got[f"sin.{layer}"]
            rq, rk = apply_rotary_pos_emb(qs[None], ks[None], cos, sin)
            ref[f"rot_q.{layer}"], ref[f"rot_k.{layer}"] = qs, ks = rq[0], rk[0]
        scores = qs @ ks.repeat_interleave(h // g, dim=0).transpose(-1, -2) / math.sqrt(qs.shape[-1])  # (H, T, T)
        if fam.causal:
            scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), float("-inf"))
        ref[f"attn_scores.{layer}"] = scores
        ref[f"pattern.{layer}"] = out.attentions[layer][0]
        ref[f"z.{layer}"] = split(got[f"o_in.{layer}"], h)
        ref[f"attn_out.{layer}"] = got[f"o_out.{layer}"]
        ref[f"resid_mid.{layer}"] = got[f"mid_in.{layer}"]
        ref[f"mlp_out.{layer}"] = got[f"mlp_out.{layer}"]
    logits = out.logits[0] if hasattr(out, "logits") else None
    return ref, logits


def assert_equal(acts: Activations, ref: dict[str, torch.Tensor], logits: torch.Tensor | None) -> None:
    """Every name of ours present in the reference and equal within TOLERANCE (−inf where it is −inf)."""
    assert sorted(acts.names()) == sorted(ref)
    for name in acts.names():
        ours, theirs = torch.from_numpy(acts[name]), ref[name].float()
        assert acts[name].dtype == np.float32 and ours.shape == theirs.shape, name
        hidden = torch.isinf(theirs)
        assert torch.equal(torch.isinf(ours), hidden), name
        assert (ours[~hidden] - theirs[~hidden]).abs().max().item() <= TOLERANCE, name
    assert (acts.logits is None) == (logits is None)
    if logits is not None and acts.logits is not None:
        assert (torch.from_numpy(acts.logits) - logits).abs().max().item() <= TOLERANCE


def test_every_activation_equals_transformers(family: Family) -> None:
    encoded = family.ours.tokenizer.encode(TEXT)
    acts = run(family.ours, encoded)
    ref, logits = reference(family, encoded.ids)
    assert_equal(acts, ref, logits)
    assert acts.ids == encoded.ids and acts.layers == 2
    assert acts.stack("resid_post").shape == (2, len(encoded), family.ours.cfg.d_model)


def test_names_are_pinned(gpt2: Family, llama: Family, bert: Family) -> None:
    assert BLOCK_TAPS == ("resid_pre", "q", "k", "v", "rot_q", "rot_k", "attn_scores", "pattern", "z", "attn_out",
                          "resid_mid", "mlp_out", "resid_post")
    plain = ("resid_pre", "q", "k", "v", "attn_scores", "pattern", "z", "attn_out", "resid_mid", "mlp_out",
             "resid_post")
    layered = tuple(f"{name}.{layer}" for layer in (0, 1) for name in plain)
    assert tuple(run(gpt2.ours, gpt2.ours.tokenizer.encode(TEXT)).names()) == (*layered, "final")
    assert tuple(run(bert.ours, bert.ours.tokenizer.encode(TEXT)).names()) == layered
    names = tuple(run(llama.ours, llama.ours.tokenizer.encode(TEXT)).names())
    assert names == tuple(f"{name}.{layer}" for layer in (0, 1) for name in BLOCK_TAPS) + ("final",)


def zero_head(fam: Family, layer: int, head: int) -> Callable[[], object]:
    """transformers: a forward pre-hook zeroing one head's slice of the output projection's input."""
    def hook(mod, args):
        x = args[0].clone()
        width = x.shape[-1] // fam.heads
        x[..., head * width:(head + 1) * width] = 0
        return (x, *args[1:])
    return fam.parts(fam.blocks[layer])["o"].register_forward_pre_hook(hook).remove


def test_ablating_a_head_equals_transformers_with_its_slice_zeroed(family: Family) -> None:
    encoded = family.ours.tokenizer.encode(TEXT)

    def ablate(z: torch.Tensor, layer: int) -> torch.Tensor:
        assert z.shape == (4, len(encoded), z.shape[-1]) and layer == 0
        out = z.clone()
        out[1] = 0
        return out

    acts = run(family.ours, encoded, hooks={"z.0": ablate})
    remove = zero_head(family, 0, 1)
    try:
        ref, logits = reference(family, encoded.ids)
    finally:
        remove()
    assert_equal(acts, ref, logits)
    assert not acts["z.0"][1].any() and acts["z.1"][1].any()


def test_steering_the_residual_equals_transformers_with_a_vector_added(family: Family) -> None:
    encoded = family.ours.tokenizer.encode(TEXT)
    vector = torch.randn(family.ours.cfg.d_model, generator=torch.Generator().manual_seed(3))

    def add(mod, args, kwargs, output):
        return (output[0] + vector, *output[1:]) if isinstance(output, tuple) else output + vector

    acts = run(family.ours, encoded, hooks={"resid_post.0": lambda x, layer: x + vector.numpy()})
    handle = family.blocks[0].register_forward_hook(add, with_kwargs=True)
    try:
        ref, logits = reference(family, encoded.ids)
    finally:
        handle.remove()
    assert_equal(acts, ref, logits)


def test_patching_z_from_another_run_equals_transformers_with_its_input_copied(family: Family) -> None:
    encoded, other = (family.ours.tokenizer.encode(t) for t in (TEXT, OTHER))
    assert len(encoded) == len(other)
    cache = run(family.ours, other, keep=["z.1"])
    assert cache.names() == ["z.1"]
    acts = run(family.ours, encoded, hooks={"z.1": lambda z, layer: cache["z.1"]})
    source, _ = reference(family, other.ids)
    flat = source["z.1"].transpose(0, 1).reshape(len(other), -1)  # (T, H*Dv): the output projection's input
    handle = family.parts(family.blocks[1])["o"].register_forward_pre_hook(lambda mod, args: (flat[None],))
    try:
        ref, logits = reference(family, encoded.ids)
    finally:
        handle.remove()
    assert_equal(acts, ref, logits)
    plain, _ = reference(family, encoded.ids)
    assert (plain["z.1"] - ref["z.1"]).abs().max().item() > 1e-3  # the patch changed something


def test_blocks_run_one_by_one_with_layer_taps(gpt2: Family) -> None:
    """A LayerTaps as a Block's `record`, the way code that runs the blocks itself passes one."""
    net, encoded = gpt2.ours.net, gpt2.ours.tokenizer.encode(TEXT)
    ids = torch.tensor([encoded.ids])
    masks = net.layer_masks(len(encoded), ids.device)

    def ablate(z: torch.Tensor) -> torch.Tensor:
        out = z.clone()
        out[:, 1] = 0  # (B, H, T, Dv): head 1
        return out

    with torch.inference_mode():
        x = net.embeddings(ids, torch.zeros_like(ids))
        taps = [LayerTaps(0, {"z": ablate}, keep={"z"}), LayerTaps(1, keep={"resid_post"})]
        for layer, block in enumerate(net.blocks):
            x = block(x, mask=masks[layer], record=taps[layer], mask_keeps_a_key=True)
    assert not taps[0].kept["z"][0, 1].any()
    remove = zero_head(gpt2, 0, 1)
    try:
        ref, _ = reference(gpt2, encoded.ids)
    finally:
        remove()
    assert (taps[1].kept["resid_post"][0] - ref["resid_post.1"]).abs().max().item() <= TOLERANCE


def test_a_trace_and_taps_in_one_forward(gpt2: Family) -> None:
    """Both given: the trace records what the network computed with the hooked values; without hooks the forward
    gives exactly the numbers it gives without taps."""
    net, encoded = gpt2.ours.net, gpt2.ours.tokenizer.encode(TEXT)
    ids = torch.tensor([encoded.ids])
    plain = net(ids)
    trace = Trace(steps=("softmax", "weighted_sum"))
    kept = Taps(keep="all")
    assert torch.equal(net(ids, trace=trace, taps=kept), plain)
    assert set(kept.kept) == {f"{n}.{layer}" for layer in (0, 1) for n in BLOCK_TAPS if "rot" not in n} | {"final"}
    ref, _ = reference(gpt2, encoded.ids)
    assert (trace.tensor(1, "softmax")[0] - ref["pattern.1"]).abs().max().item() <= TOLERANCE
    uniform = Taps({"pattern.0": lambda p, layer: torch.full_like(p, 1.0).tril() / torch.arange(1, p.shape[-1] + 1)
                    [:, None]})
    trace = Trace(layers=[0], steps=("softmax",))
    net(ids, trace=trace, taps=uniform)
    assert trace.tensor(0, "softmax")[0, 2, 3, :4].tolist() == pytest.approx([0.25] * 4)


def test_hooks_for_every_layer_chain_with_one_layers(gpt2: Family) -> None:
    encoded = gpt2.ours.tokenizer.encode(TEXT)
    seen: list[tuple[str, int]] = []

    def every(x: torch.Tensor, layer: int) -> torch.Tensor:
        seen.append(("every", layer))
        return x * 2

    def one(x: torch.Tensor, layer: int) -> None:
        seen.append(("one", layer))

    def final(x: torch.Tensor, layer: int) -> None:
        seen.append(("final", layer))

    plain = run(gpt2.ours, encoded, keep=["attn_out"])
    acts = run(gpt2.ours, encoded, hooks={"attn_out": every, "attn_out.1": one, "final": final},
               keep=("attn_out.1", "mlp_out"))
    assert seen == [("every", 0), ("every", 1), ("one", 1), ("final", 2)]
    assert acts.names() == ["mlp_out.0", "attn_out.1", "mlp_out.1"]
    assert acts.hooked == ("attn_out", "attn_out.1", "final")
    assert not np.array_equal(acts["attn_out.1"], plain["attn_out.1"])  # layer 0 doubled changed layer 1's input
    with pytest.raises(KeyError, match="run with keep"):
        acts.stack("attn_out")


@pytest.mark.parametrize(("hooks", "keep", "message"), [
    ({"resid": None}, "all", "there is no tap named 'resid'"),
    ({"z.2": None}, "all", r"layer 2 is out of range: this network has layers 0\.\.1"),
    ({"rot_q": None}, "all", "no RoPE: use q"),
    ({"final.1": None}, "all", "final takes no layer"),
    ({}, ["pattern", "patterns.0"], "no tap named 'patterns'"),
])
def test_names_a_network_has_not_are_refused(gpt2: Family, hooks: dict, keep: object, message: str) -> None:
    encoded = gpt2.ours.tokenizer.encode(TEXT)
    hooks = {key: (lambda x, layer: None) for key in hooks}
    with pytest.raises(InputError, match=message) as error:
        run(gpt2.ours, encoded, hooks=hooks, keep=keep)
    assert "The names are resid_pre, q, k, v, attn_scores, pattern, z, attn_out" in str(error.value)
    assert error.value.loc[0] in ("hooks", "keep")


def test_final_on_a_post_norm_network_and_bad_hook_answers_are_refused(bert: Family, gpt2: Family) -> None:
    encoded = bert.ours.tokenizer.encode(TEXT)
    with pytest.raises(InputError, match="no final norm"):
        run(bert.ours, encoded, hooks={"final": lambda x, layer: None})
    encoded = gpt2.ours.tokenizer.encode(TEXT)
    with pytest.raises(InputError, match=r"returned shape \(7, 31\); return the shape it was given, \(7, 32\)"):
        run(gpt2.ours, encoded, hooks={"resid_post.0": lambda x, layer: x[:, :31]})
    with pytest.raises(InputError, match="returned list"):
        run(gpt2.ours, encoded, hooks={"mlp_out": lambda x, layer: x.tolist()})
    with pytest.raises(InputError, match="not a function"):
        run(gpt2.ours, encoded, hooks={"mlp_out": 3})


def test_saved_npz_reads_back_with_numpy(gpt2: Family, tmp_path: Path) -> None:
    acts = run(gpt2.ours, gpt2.ours.tokenizer.encode(TEXT), keep=["pattern", "final"], text=TEXT)
    path = acts.save(tmp_path / "acts.npz")
    with np.load(path) as saved:
        meta = json.loads(saved["meta.json"].tobytes())["results"][0]
        assert sorted(saved.files) == sorted(["meta.json", "0/pattern.0", "0/pattern.1", "0/final", "0/logits"])
        assert np.array_equal(saved["0/pattern.1"], acts["pattern.1"])
        assert np.array_equal(saved["0/logits"], acts.logits)
    assert meta["kind"] == "activations" and meta["text"] == TEXT and meta["keep"] == ["pattern", "final"]
    assert meta["tokens"] == [t.display for t in acts.tokens] and meta["model"] == acts.model


def test_with_a_kv_cache_the_key_taps_see_the_new_token_only(llama: Family) -> None:
    from model.nets.cache import KVCache

    net, encoded = llama.ours.net, llama.ours.tokenizer.encode(TEXT)
    ids = torch.tensor([encoded.ids])
    cache, taps = KVCache(net.cfg.n_layers), Taps(keep="all")
    net(ids[:, :-1], cache=cache)
    net(ids[:, -1:], cache=cache, taps=taps)
    ref, _ = reference(llama, encoded.ids)
    kept = taps.kept
    assert kept["k.1"].shape == kept["rot_k.1"].shape == (1, 2, 1, 12) and kept["q.1"].shape == (1, 4, 1, 12)
    for name in ("rot_k.1", "v.1", "rot_q.1", "pattern.1", "z.1"):
        assert (kept[name][0] - ref[name][:, -1:]).abs().max().item() <= TOLERANCE, name
