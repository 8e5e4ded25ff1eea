"""Local checkpoints of every supported architecture, loaded into our modules, against transformers.

Each checkpoint is made here with random weights and saved with save_pretrained into tmp_path (the hub
is never used); the reference is transformers with eager attention on the same directory.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest
import torch
import transformers

from model.checkpoints import load
from model.errors import CheckpointError

from ..checkpoints import KINDS, SIZES, make_tokenizer

TOLERANCE = 1e-5


def off(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference in units of the largest magnitude of `want` (at least 1): float32 rounds relative
    to a number's size, and hidden states reach several units (a LayerNorm output has unit variance), so their
    1e-5 is of that scale; attention weights (at most 1) are compared absolutely."""
    return ((got - want).abs().max() / max(1.0, want.abs().max().item())).item()

ENCODER_TEXTS = {
    "english": ("The cat sat on the mat.", None),
    "chinese": ("注意力机制让模型关注输入中", None),
    "unknown": ("Hello zebra, attention is all you need!", None),
    "pair": ("Where is the cat?", "The cat sat on the mat."),
}
DECODER_TEXTS = {
    "english": ("Hello world, attention is all you need.", None),
    "chinese": ("注意力机制让模型关注输入。", None),
    "unseen": ("Zebras quietly jump over 42 fences 🙂", None),
}


@pytest.fixture(scope="module", params=KINDS)
def checkpoint(request, checkpoint_dirs) -> tuple[str, Path]:
    return request.param, checkpoint_dirs[request.param]


@pytest.fixture(scope="module")
def reference(checkpoint):
    kind, directory = checkpoint
    tok = transformers.AutoTokenizer.from_pretrained(str(directory))
    model = transformers.AutoModel.from_pretrained(str(directory), attn_implementation="eager")
    return tok, model.eval()


def hf_forward(reference, text, pair):
    tok, model = reference
    batch = tok(text, pair, return_tensors="pt", truncation=False, padding=False)
    with torch.no_grad():
        out = model(**batch, output_attentions=True)
    return batch["input_ids"][0].tolist(), torch.stack([a[0] for a in out.attentions]), out.last_hidden_state


def ours_forward(model, text, pair):
    encoded = model.tokenizer.encode(text, pair)
    maps = torch.stack(model.attention_maps(encoded).per_layer)  # (L, H, T, T)
    return encoded.ids, maps, model.run(encoded)


def texts(kind: str) -> dict[str, tuple[str, str | None]]:
    return DECODER_TEXTS if kind == "gpt2" else ENCODER_TEXTS


def test_maps_hidden_state_and_ids_equal_transformers(checkpoint, reference):
    kind, directory = checkpoint
    model = load(directory)
    for case, (text, pair) in texts(kind).items():
        ref_ids, ref_maps, ref_hidden = hf_forward(reference, text, pair)
        ids, maps, hidden = ours_forward(model, text, pair)
        assert ids == ref_ids, case
        assert maps.shape == ref_maps.shape == (SIZES["layers"], SIZES["heads"], len(ids), len(ids))
        assert (maps - ref_maps).abs().max().item() <= TOLERANCE, case
        assert off(hidden, ref_hidden) <= TOLERANCE, case
        assert ref_maps.max().item() > 0.5, case  # the maps are far from uniform: the comparison means something


@pytest.mark.parametrize("kind", ["bert", "distilbert", "electra"])
def test_chinese_characters_are_wordpiece_tokens_not_unknown(kind, checkpoint_dirs):
    model = load(checkpoint_dirs[kind])
    encoded = model.tokenizer.encode("注意力机制")
    assert [t.text for t in encoded.tokens if not t.special] == list("注意力机制")
    assert not any(t.unknown for t in encoded.tokens)


def test_model_list_facts(checkpoint):
    kind, directory = checkpoint
    model = load(directory)
    assert model.architecture == kind
    assert model.causal == (kind == "gpt2")
    assert model.pairs == (kind != "gpt2")
    assert model.net.cfg.norm_place == ("pre" if kind == "gpt2" else "post")
    assert (model.cfg.n_layers, model.cfg.n_heads, model.cfg.d_model) == (2, 4, 32)
    assert model.tokenizer.max_tokens == 64  # RoBERTa's 66 positions less padding_idx + 1


def test_a_perturbed_weight_breaks_the_comparison(checkpoint, reference):
    """Control: the comparison above is able to fail."""
    kind, directory = checkpoint
    model = load(directory)
    with torch.no_grad():
        model.net.block(1).attention.key.weight[0, 0] += 0.5
    text, pair = texts(kind)["english"]
    _, ref_maps, ref_hidden = hf_forward(reference, text, pair)
    _, maps, hidden = ours_forward(model, text, pair)
    assert (maps[0] - ref_maps[0]).abs().max().item() <= TOLERANCE  # the layer before the change still agrees
    assert (maps[1] - ref_maps[1]).abs().max().item() > TOLERANCE
    assert off(hidden, ref_hidden) > TOLERANCE


def test_tokenizer_from_vocabulary_files_alone(checkpoint, reference, tmp_path):
    """Without tokenizer.json the tokenizer is built from vocab.txt or vocab.json + merges.txt."""
    kind, directory = checkpoint
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    (copy / "tokenizer.json").unlink()
    if kind in ("roberta", "gpt2"):
        assert (copy / "vocab.json").is_file() and (copy / "merges.txt").is_file()
    else:
        assert (copy / "vocab.txt").is_file()
    model = load(copy)
    tok, _ = reference
    for text, pair in texts(kind).values():
        assert model.tokenizer.encode(text, pair).ids == tok(text, pair)["input_ids"]


def test_weights_from_pytorch_model_bin(checkpoint, reference, tmp_path):
    kind, directory = checkpoint
    copy = tmp_path / "bin"
    shutil.copytree(directory, copy)
    from safetensors.torch import load_file
    torch.save(load_file(str(copy / "model.safetensors")), copy / "pytorch_model.bin")
    (copy / "model.safetensors").unlink()
    text, pair = texts(kind)["english"]
    _, ref_maps, ref_hidden = hf_forward(reference, text, pair)
    _, maps, hidden = ours_forward(load(copy), text, pair)
    assert (maps - ref_maps).abs().max().item() <= TOLERANCE
    assert off(hidden, ref_hidden) <= TOLERANCE


def test_gpt2_maps_are_lower_triangular_and_the_mask_step_hides_the_upper_triangle(checkpoint_dirs):
    model = load(checkpoint_dirs["gpt2"])
    encoded = model.tokenizer.encode(DECODER_TEXTS["english"][0])
    n = len(encoded)
    upper = torch.ones(n, n, dtype=torch.bool).triu(diagonal=1)
    for block in model.attention_maps(encoded).per_layer:  # (H, T, T)
        assert (block[:, upper] == 0).all()
        assert (block[:, ~upper] > 0).all()
        torch.testing.assert_close(block.sum(-1), torch.ones(block.shape[:2]))
    for block in model.attention_maps(encoded, compact=True).per_layer:  # uint16, as the API sends them
        assert (block[:, upper] == 0).all()
    steps = model.trace_layer(encoded, 1)
    mask = steps["mask"]
    assert isinstance(mask, torch.Tensor)
    assert torch.isneginf(mask[:, upper]).all() and torch.isfinite(mask[:, ~upper]).all()


def test_gpt2_lm_head_checkpoint_and_logits(tmp_path):
    """A GPT2LMHeadModel directory ("transformer." prefix, tied lm_head) loads; unembed is its LM head."""
    torch.manual_seed(1)
    directory = tmp_path / "lm"
    tok = make_tokenizer("gpt2", tmp_path / "vocab")
    lm = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=len(tok), n_embd=32, n_layer=2, n_head=4, n_positions=64, initializer_range=0.3,
        bos_token_id=0, eos_token_id=0))
    lm.save_pretrained(str(directory))
    tok.save_pretrained(str(directory))
    model = load(directory)
    assert model.lm_head
    text = DECODER_TEXTS["english"][0]
    batch = tok(text, return_tensors="pt")
    ref = transformers.GPT2LMHeadModel.from_pretrained(str(directory), attn_implementation="eager").eval()
    with torch.no_grad():
        out = ref(**batch, output_hidden_states=True)
        middle = out.hidden_states[1]  # the residual stream after block 0
        ref_lens = ref.lm_head(ref.transformer.ln_f(middle))
    encoded = model.tokenizer.encode(text)
    hidden = model.run(encoded)
    assert off(hidden, out.hidden_states[-1]) <= TOLERANCE
    with torch.inference_mode():
        assert (model.decoder.unembed(middle) - ref_lens).abs().max().item() <= 1e-4
        last = hidden @ model.decoder.embeddings.word.weight.T
    assert (last - out.logits).abs().max().item() <= 1e-4


def test_roberta_positions_start_after_the_padding_index(checkpoint_dirs):
    model = load(checkpoint_dirs["roberta"])
    embeddings = model.net.embeddings
    ids = torch.tensor([[0, 5, 6, 2]])
    assert embeddings.positions(ids).tolist() == [[2, 3, 4, 5]]  # padding_idx 1: the first token is at 2


def test_no_socket_is_opened_while_loading(monkeypatch, checkpoint_dirs):
    directories = [checkpoint_dirs[kind] for kind in ("bert", "gpt2")]

    def refuse(self, address):
        raise AssertionError(f"network connection attempted to {address}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    for directory in directories:
        load(directory).tokenizer.encode("hello world")


# ---- refusals: each names the file, the problem and the supported architectures ----

@pytest.fixture(scope="module")
def bert_dir(checkpoint_dirs) -> Path:
    return checkpoint_dirs["bert"]  # the tests break copies of it (broken_copy)


def broken_copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / "broken"
    shutil.copytree(source, target)
    return target


def assert_refused(directory: Path, file: str, problem: str) -> None:
    with pytest.raises(CheckpointError) as info:
        load(directory)
    message = str(info.value)
    assert str(directory / file) in message
    assert problem in message
    assert "supported architectures: bert, roberta, distilbert, electra, gpt2" in message


def test_missing_config_is_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    (directory / "config.json").unlink()
    assert_refused(directory, "config.json", "missing file")


def test_unknown_model_type_is_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["model_type"] = "t5"
    (directory / "config.json").write_text(json.dumps(config))
    assert_refused(directory, "config.json", "model_type 't5' is not supported")


def test_missing_weights_are_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    (directory / "model.safetensors").unlink()
    assert_refused(directory, "model.safetensors", "missing file")


def test_a_shape_that_does_not_fit_the_config_is_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["intermediate_size"] = 40
    (directory / "config.json").write_text(json.dumps(config))
    assert_refused(directory, "model.safetensors", "encoder.layer.0.intermediate.dense.weight has shape (37, 32)")


def test_a_gpt2_shape_that_does_not_fit_is_refused(checkpoint_dirs, tmp_path):
    directory = broken_copy(checkpoint_dirs["gpt2"], tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["n_positions"] = 128
    (directory / "config.json").write_text(json.dumps(config))
    assert_refused(directory, "model.safetensors", "wpe.weight has shape (64, 32)")


def test_missing_tokenizer_files_are_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    (directory / "tokenizer.json").unlink()
    (directory / "vocab.txt").unlink()
    assert_refused(directory, "tokenizer.json", "no vocab.txt")


def test_an_unsupported_activation_is_refused(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    config = json.loads((directory / "config.json").read_text())
    config["hidden_act"] = "relu"
    (directory / "config.json").write_text(json.dumps(config))
    assert_refused(directory, "config.json", "activation 'relu' is not supported")


def test_a_tensor_the_model_would_not_use_is_refused(bert_dir, tmp_path):
    from safetensors.torch import load_file, save_file
    directory = broken_copy(bert_dir, tmp_path)
    state = load_file(str(directory / "model.safetensors"))
    state["encoder.layer.0.attention.self.extra.weight"] = torch.zeros(2, 2)
    save_file(state, str(directory / "model.safetensors"))
    assert_refused(directory, "model.safetensors", "tensors this model does not use")


def test_a_pickle_with_code_is_refused_not_run(bert_dir, tmp_path):
    directory = broken_copy(bert_dir, tmp_path)
    (directory / "model.safetensors").unlink()

    class Exploit:
        def __reduce__(self):
            return (print, ("code ran",))

    torch.save({"embeddings.word_embeddings.weight": Exploit()}, directory / "pytorch_model.bin")
    assert_refused(directory, "pytorch_model.bin", "cannot read weights")


def test_sharded_safetensors_and_a_task_model_prefix(tmp_path, bert_dir):
    """model.safetensors.index.json with two shards, tensors named as BertForMaskedLM saves them ("bert.")."""
    from safetensors.torch import load_file, save_file
    directory = broken_copy(bert_dir, tmp_path)
    state = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    weight_map = {}
    for shard, keys in shards.items():
        save_file({f"bert.{k}": state[k] for k in keys}, str(directory / shard))
        weight_map.update({f"bert.{k}": shard for k in keys})
    save_file({"cls.predictions.bias": torch.zeros(3)}, str(directory / "model-head.safetensors"))
    weight_map["cls.predictions.bias"] = "model-head.safetensors"
    (directory / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    sharded, whole = load(directory), load(bert_dir)
    encoded = whole.tokenizer.encode(*ENCODER_TEXTS["pair"])
    assert torch.equal(sharded.run(encoded), whole.run(encoded))


def test_gpt2_what_if_edits_follow_the_encoder_rules(checkpoint_dirs):
    """An edit that changes nothing leaves every map as it is; ablating layer 0 changes layer 1 only."""
    from model.nets.edit import Edit
    model = load(checkpoint_dirs["gpt2"])
    encoded = model.tokenizer.encode(DECODER_TEXTS["english"][0])
    plain = model.attention_maps(encoded).per_layer
    same = model.attention_maps(encoded, edit=Edit(layer=0)).per_layer
    assert all(torch.equal(a, b) for a, b in zip(plain, same, strict=True))
    ablated = model.attention_maps(encoded, edit=Edit(layer=0, heads=(1,), ablate=True)).per_layer
    assert torch.equal(ablated[0], plain[0]) and not torch.equal(ablated[1], plain[1])
