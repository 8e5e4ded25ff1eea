"""Small random-weight Hugging Face checkpoints of every supported architecture, made and saved locally.

Saved with transformers' save_pretrained (the hub is never used) for tests that compare against
transformers, serve a local model or run the CLI on one. Two layers x four heads, d_model 32, 64 positions.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

SIZES = {"layers": 2, "heads": 4, "d": 32, "ff": 37}
KINDS = ("bert", "roberta", "distilbert", "electra", "gpt2")


def _libraries():
    """transformers and tokenizers, imported only when a checkpoint is made (they are test dependencies)."""
    import tokenizers
    import transformers
    return transformers, tokenizers


WORDPIECE = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "?", "!", "the", "cat", "sat", "on", "mat", "where",
    "is", "attention", "all", "you", "need", "hello", "world", "model", "##s", "##ing", "look", "a", "dog",
    "注", "意", "力", "机", "制", "让", "模", "型", "关", "输", "入", "中",
]
SENTENCES = [
    "Hello world, attention is all you need.", "The cat sat on the mat.", "Where is the dog?",
    "注意力机制让模型关注输入中最相关的部分。", "Models looking at attention, again and again.",
]


def _bpe(directory: Path, special: list[str]) -> tuple[str, str]:
    _, tokenizers = _libraries()
    bpe = tokenizers.ByteLevelBPETokenizer()
    bpe.train_from_iterator(SENTENCES, vocab_size=400, min_frequency=1, special_tokens=special, show_progress=False)
    bpe.save_model(str(directory))
    return str(directory / "vocab.json"), str(directory / "merges.txt")


def make_tokenizer(kind: str, directory: Path):
    transformers, _ = _libraries()
    directory.mkdir(parents=True, exist_ok=True)
    if kind in ("bert", "distilbert", "electra"):
        vocab = directory / "vocab.txt"
        vocab.write_text("\n".join(WORDPIECE) + "\n", encoding="utf-8")
        cls = {"bert": transformers.BertTokenizerFast, "distilbert": transformers.DistilBertTokenizerFast,
               "electra": transformers.ElectraTokenizerFast}[kind]
        return cls(vocab=str(vocab))
    if kind == "roberta":
        vocab, merges = _bpe(directory, ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        return transformers.RobertaTokenizerFast(vocab=vocab, merges=merges)
    vocab, merges = _bpe(directory, ["<|endoftext|>"])
    return transformers.GPT2TokenizerFast(vocab=vocab, merges=merges)


def _model(kind: str, vocab_size: int):
    transformers, _ = _libraries()
    n, h, d, ff = SIZES["layers"], SIZES["heads"], SIZES["d"], SIZES["ff"]
    # Larger initial weights than training would use, so that the maps are far from uniform.
    if kind == "bert":
        return transformers.BertModel(transformers.BertConfig(
            vocab_size=vocab_size, hidden_size=d, num_hidden_layers=n, num_attention_heads=h, intermediate_size=ff,
            max_position_embeddings=64, initializer_range=0.3))
    if kind == "roberta":
        return transformers.RobertaModel(transformers.RobertaConfig(
            vocab_size=vocab_size, hidden_size=d, num_hidden_layers=n, num_attention_heads=h, intermediate_size=ff,
            max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, initializer_range=0.3))
    if kind == "distilbert":
        return transformers.DistilBertModel(transformers.DistilBertConfig(
            vocab_size=vocab_size, dim=d, n_layers=n, n_heads=h, hidden_dim=ff, max_position_embeddings=64,
            initializer_range=0.3))
    if kind == "electra":  # the discriminator, embedding narrower than the hidden width (as electra-small)
        return transformers.ElectraForPreTraining(transformers.ElectraConfig(
            vocab_size=vocab_size, embedding_size=16, hidden_size=d, num_hidden_layers=n, num_attention_heads=h,
            intermediate_size=ff, max_position_embeddings=64, initializer_range=0.3))
    # With its LM head (tied to the word embeddings), as GPT-2 checkpoints are published: the logit lens needs it.
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=vocab_size, n_embd=d, n_layer=n, n_head=h, n_positions=64, initializer_range=0.3,
        bos_token_id=0, eos_token_id=0))


def make_checkpoint(kind: str, directory: Path) -> Path:
    torch.manual_seed(0)
    tok = make_tokenizer(kind, directory / "vocab-source")
    model = _model(kind, len(tok))
    model.save_pretrained(str(directory))
    tok.save_pretrained(str(directory))  # tokenizer.json and tokenizer_config.json
    for vocabulary in (directory / "vocab-source").iterdir():  # as older checkpoints also have them
        vocabulary.rename(directory / vocabulary.name)
    (directory / "vocab-source").rmdir()
    return directory




def hub_cache(cache: Path, repo: str, source: Path, commit: str, refs: tuple[str, ...] = ("main",)) -> Path:
    """Puts the checkpoint directory `source` into the Hugging Face cache `cache` as the hub lays a downloaded
    repo out: models--ORG--NAME/blobs/<sha256 of the file>, snapshots/<commit>/<file> a relative symlink to
    its blob, refs/<ref> holding the commit. Returns the snapshot directory."""
    import hashlib
    import os

    folder = cache / f"models--{repo.replace('/', '--')}"
    snapshot = folder / "snapshots" / commit
    (folder / "blobs").mkdir(parents=True, exist_ok=True)
    snapshot.mkdir(parents=True)
    for file in sorted(source.iterdir()):
        data = file.read_bytes()
        blob = folder / "blobs" / hashlib.sha256(data).hexdigest()
        blob.write_bytes(data)
        (snapshot / file.name).symlink_to(os.path.relpath(blob, snapshot))
    for ref in refs:
        (folder / "refs" / ref).parent.mkdir(parents=True, exist_ok=True)
        (folder / "refs" / ref).write_text(commit)  # the hub writes the hash without a newline
    return snapshot


# ---- decoders of the Llama family ----
# kind -> (config class, model_type's settings, tokenizer, how it is saved). Each tests a part of the family:
# grouped-query attention with 2 and with 1 key-value heads, both RoPE scalings, Mistral's sliding window
# (shorter than the test inputs), Qwen2's q/k/v biases, Qwen3's q/k norms and wider heads, tied and own LM
# heads, a sharded and a bfloat16 checkpoint, byte-fallback (Llama, Mistral) and byte-level (SmolLM, Qwen)
# tokenizers. Larger initial weights than training would use, so that the maps are far from uniform.
LLAMA_KINDS = ("llama", "smollm", "mistral", "qwen2", "qwen3", "gemma2")
LLAMA_SETTINGS: dict[str, dict] = {
    "llama": {"config": "LlamaConfig", "hidden_size": 48, "num_attention_heads": 4, "num_key_value_heads": 2,
              "tie_word_embeddings": False, "rope_parameters": {
                  "rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                  "high_freq_factor": 4.0, "original_max_position_embeddings": 32}},
    "smollm": {"config": "LlamaConfig", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 1,
               "tie_word_embeddings": True, "rope_parameters": {"rope_type": "linear", "rope_theta": 1000.0,
                                                                "factor": 2.0}},
    "mistral": {"config": "MistralConfig", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                "tie_word_embeddings": False, "sliding_window": 4},
    "qwen2": {"config": "Qwen2Config", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
              "tie_word_embeddings": True, "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}},
    "qwen3": {"config": "Qwen3Config", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 16, "tie_word_embeddings": False},
    # layer 0 local (window 4), layer 1 global; caps small enough that these weights' scores and logits reach them
    "gemma2": {"config": "Gemma2Config", "hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
               "head_dim": 16, "query_pre_attn_scalar": 12, "sliding_window": 4, "attn_logit_softcapping": 3.0,
               "final_logit_softcapping": 5.0, "hidden_activation": "gelu_pytorch_tanh",
               "tie_word_embeddings": True},
}
LLAMA_TOKENIZER = {"llama": "fallback", "mistral": "fallback", "smollm": "gpt2", "qwen2": "qwen", "qwen3": "qwen",
                   "gemma2": "fallback"}
LLAMA_SAVE = {"smollm": "sharded", "qwen2": "bf16"}  # the others: one float32 model.safetensors
FALLBACK_SPECIALS = ["<unk>", "<s>", "</s>"]


def make_fallback_tokenizer(directory: Path):
    """A Llama tokenizer (byte-fallback BPE, "▁" for spaces) whose vocabulary holds the 256 byte tokens, trained
    on SENTENCES: characters it never saw are spelt in bytes."""
    transformers, tokenizers = _libraries()
    raw = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=420, special_tokens=FALLBACK_SPECIALS + byte_tokens,
                                             show_progress=False)
    raw.train_from_iterator(SENTENCES, trainer=trainer)
    import json
    model = json.loads(raw.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return transformers.LlamaTokenizer(vocab=model["vocab"], merges=merges, add_bos_token=True)


def make_llama_tokenizer(kind: str, directory: Path):
    transformers, _ = _libraries()
    directory.mkdir(parents=True, exist_ok=True)
    style = LLAMA_TOKENIZER[kind]
    if style == "fallback":
        return make_fallback_tokenizer(directory)
    if style == "gpt2":
        vocab, merges = _bpe(directory, ["<|endoftext|>"])
        return transformers.GPT2TokenizerFast(vocab=vocab, merges=merges)
    vocab, merges = _bpe(directory, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    return transformers.Qwen2Tokenizer(vocab=vocab, merges=merges)


def make_llama_checkpoint(kind: str, directory: Path) -> Path:
    """A tiny random decoder of the Llama family (LLAMA_SETTINGS[kind]) saved with its tokenizer."""
    transformers, _ = _libraries()
    torch.manual_seed(0)
    tok = make_llama_tokenizer(kind, directory / "vocab-source")
    settings = dict(LLAMA_SETTINGS[kind])
    config_class = getattr(transformers, settings.pop("config"))
    cfg = config_class(vocab_size=len(tok), num_hidden_layers=2, intermediate_size=56, max_position_embeddings=64,
                       initializer_range=0.3, rms_norm_eps=1e-6, bos_token_id=0, eos_token_id=0, pad_token_id=0,
                       **settings)
    model_class = getattr(transformers, config_class.__name__.replace("Config", "ForCausalLM"))
    model = model_class(cfg)
    with torch.no_grad():  # norms and biases away from their initial 1 and 0, so that a misplaced one shows
        for name, param in model.named_parameters():
            if "norm" in name or name.endswith(".bias"):
                param.add_(torch.randn_like(param) * 0.3)
    save = LLAMA_SAVE.get(kind)
    if save == "bf16":
        model = model.to(torch.bfloat16)
    model.save_pretrained(str(directory), max_shard_size="40KB" if save == "sharded" else "5GB")
    tok.save_pretrained(str(directory))
    shutil.rmtree(directory / "vocab-source")
    return directory
