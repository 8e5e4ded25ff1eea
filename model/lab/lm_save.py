"""A trained small GPT (model/lab/lm.py) as a GPT-2-shaped Hugging Face checkpoint directory.

Written so that transformers' GPT2LMHeadModel.from_pretrained and attnscope's own loader (model/checkpoints/
gpt2.py) read it unchanged:

* config.json: model_type "gpt2" with n_layer, n_head, n_embd, n_positions (the context), vocab_size, the
  training's dropout (which evaluation does not use), no BOS/EOS token, and "attnscope": {"trained": true,
  "name", "text_sha256", "settings", "unigram_entropy", "bigram_entropy", "final_val_loss", "steps_done",
  "characters" (the text's length)}: the run that made it;
* model.safetensors: GPT-2's names and layout, each projection a Conv1D weight (in x out), query, key and value
  side by side in one c_attn (model/checkpoints/gpt2.py reads them back), under "transformer."; the LM head is
  the word embeddings (tied), so it is not stored;
* tokenizer.json: a `tokenizers` WordLevel tokenizer over the vocabulary, after a pre-tokenizer that isolates
  every character (one token per Unicode code point, the unknown token for a character outside it) and a Fuse
  decoder (the characters joined as they are). attnscope's Tokenizer shows each token as its string, the
  character itself, and an unknown one as the characters of its offsets (model/checkpoints/tokenizer.py).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from model.checkpoints.gpt2 import QKV, gpt2_name
from model.nets.transformer import Transformer


def character_tokenizer(vocab: list[str], unknown: str) -> Tokenizer:
    """One token per character: WordLevel over `vocab` (ids in its order), every character split off alone."""
    tokenizer = Tokenizer(models.WordLevel({c: i for i, c in enumerate(vocab)}, unk_token=unknown))
    # "[\s\S]": any one code point, line breaks included (Oniguruma's "." stops at "\n")
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return tokenizer


def gpt2_state(net: Transformer) -> dict[str, torch.Tensor]:
    """Our network's weights under GPT-2's names: each Linear (out x in) as a Conv1D (in x out), query, key and
    value joined into c_attn (D x 3D), all under "transformer." (the inverse of model/checkpoints/gpt2.py)."""
    state: dict[str, torch.Tensor] = {}
    joined: dict[str, list[torch.Tensor | None]] = {}
    for ours, tensor in net.state_dict().items():
        theirs = "transformer." + gpt2_name(ours)
        parts = ours.split(".")
        value = tensor.detach().to(torch.float32)
        if parts[0] == "blocks" and "norm" not in parts[2] and value.dim() == 2:
            value = value.T  # (out, in) -> (in, out)
        if parts[0] == "blocks" and parts[2] == "attention" and parts[3] in QKV:
            joined.setdefault(theirs, [None, None, None])[QKV[parts[3]]] = value
            continue
        state[theirs] = value.contiguous()
    for name, pieces in joined.items():
        state[name] = torch.cat([p for p in pieces if p is not None], dim=-1).contiguous()  # (D, 3D) or (3D,)
    return state


def gpt2_config(net: Transformer, extra: dict[str, Any], dropout: float = 0.0) -> dict[str, Any]:
    """config.json of a GPT-2 with our network's shape; `extra` goes under "attnscope"; `dropout`: the training's
    (resid_pdrop, embd_pdrop, attn_pdrop; transformers' eval mode and attnscope use none)."""
    cfg = net.cfg
    return {
        "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": cfg.vocab_size,
        "n_positions": cfg.max_positions, "n_embd": cfg.d_model, "n_layer": cfg.n_layers, "n_head": cfg.n_heads,
        "n_inner": cfg.d_ff, "activation_function": cfg.activation, "layer_norm_epsilon": cfg.layer_norm_eps,
        "resid_pdrop": dropout, "embd_pdrop": dropout, "attn_pdrop": dropout, "scale_attn_weights": True,
        "scale_attn_by_inverse_layer_idx": False, "reorder_and_upcast_attn": False, "tie_word_embeddings": True,
        "bos_token_id": None, "eos_token_id": None, "torch_dtype": "float32", "attnscope": extra,
    }


def write_checkpoint(directory: Path, net: Transformer, vocab: list[str], unknown: str,
                     extra: dict[str, Any], dropout: float = 0.0) -> Path:
    """config.json, model.safetensors and tokenizer.json into `directory` (made if missing; files of the same
    names replaced, each written beside and renamed into place). Returns the directory."""
    directory = Path(directory).expanduser()
    directory.mkdir(parents=True, exist_ok=True)

    def place(name: str, write: Any) -> None:
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=directory)
        os.close(fd)
        try:
            write(tmp)
            os.replace(tmp, directory / name)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    place("model.safetensors", lambda p: save_file(gpt2_state(net), p, metadata={"format": "pt"}))
    place("tokenizer.json", lambda p: character_tokenizer(vocab, unknown).save(p))
    config = json.dumps(gpt2_config(net, extra, dropout), ensure_ascii=False, indent=2) + "\n"
    place("config.json", lambda p: Path(p).write_text(config, encoding="utf-8"))
    return directory


def trained_record(directory: Path) -> dict[str, Any] | None:
    """config.json's "attnscope" part of a directory this module wrote (its "trained" true); None for any other
    checkpoint, or a directory without a readable config.json."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    record = config.get("attnscope") if isinstance(config, dict) else None
    return record if isinstance(record, dict) and record.get("trained") is True else None
