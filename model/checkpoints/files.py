"""What every family's loader shares: config.json, the weights file, the tokenizer, and the errors.

Everything is read from the checkpoint directory itself; nothing is fetched from a model hub.
"""

from __future__ import annotations

import json
import pickle
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from tokenizers import AddedToken
from tokenizers.implementations import BaseTokenizer, BertWordPieceTokenizer, ByteLevelBPETokenizer
from tokenizers.processors import RobertaProcessing

from model.checkpoints.tokenizer import Tokenizer
from model.errors import CheckpointError
from model.nets.transformer import Transformer

# The config.json model_type values load_checkpoint accepts.
SUPPORTED = ("bert", "roberta", "distilbert", "electra", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2")


@dataclass(frozen=True)
class Parts:
    """What a family module reads from a checkpoint directory: the network (weights loaded), the
    tokenizer, config.json's model_type, and the family's facts: `causal`, `pairs` (takes a second
    segment), `uses_segments` (its token types are used)."""

    net: Transformer
    tokenizer: Tokenizer
    architecture: str
    causal: bool
    pairs: bool
    uses_segments: bool


WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin")


def checkpoint_error(path: Path, problem: str) -> CheckpointError:
    """An error naming the file, the problem and the architectures this loader supports."""
    return CheckpointError(f"{path}: {problem} (supported architectures: {', '.join(SUPPORTED)})")


def read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise checkpoint_error(path, "missing file")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise checkpoint_error(path, f"cannot read it as JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise checkpoint_error(path, "is not a JSON object")
    return raw


def read_config(directory: Path) -> dict[str, Any]:
    """config.json, as a dict with a model_type."""
    return read_json(directory / "config.json")


def stop_ids(directory: Path) -> tuple[int, ...]:
    """The ids that end a generation: eos_token_id (one id or a list) of generation_config.json when it names
    one, else of config.json; () when neither does."""
    for name in ("generation_config.json", "config.json"):
        path = directory / name
        eos = read_json(path).get("eos_token_id") if path.is_file() else None
        if eos is not None:
            ids = eos if isinstance(eos, list) else [eos]
            if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
                raise checkpoint_error(path, f"eos_token_id {eos!r} is not a token id or a list of them")
            return tuple(ids)
    return ()


def setting(raw: dict[str, Any], path: Path, key: str, default: Any = None) -> Any:
    """One config value; a missing key without a default is an error naming config.json."""
    if key in raw:
        return raw[key]
    if default is None:
        raise checkpoint_error(path, f"lacks the setting {key!r}")
    return default


def read_weights(directory: Path) -> tuple[dict[str, torch.Tensor], Path]:
    """Every tensor of the checkpoint as float32 (integer buffers as they are), and the file they came from.

    model.safetensors is preferred, then a sharded model.safetensors.index.json, then pytorch_model.bin,
    read with torch.load(weights_only=True) so that no pickled code runs.
    """
    single = directory / "model.safetensors"
    index = directory / "model.safetensors.index.json"
    legacy = directory / "pytorch_model.bin"
    state: dict[str, torch.Tensor] = {}
    if single.is_file():
        source = single
        state = _safetensors(single)
    elif index.is_file():
        source = index
        weight_map = read_json(index).get("weight_map")
        if not isinstance(weight_map, dict):
            raise checkpoint_error(index, "has no weight_map")
        for shard in sorted(set(weight_map.values())):
            state.update(_safetensors(directory / str(shard)))
    elif legacy.is_file():
        source = legacy
        try:
            loaded = torch.load(legacy, map_location="cpu", weights_only=True)
        except (OSError, RuntimeError, pickle.UnpicklingError, EOFError) as exc:
            raise checkpoint_error(legacy, f"cannot read weights: {exc}") from exc
        if not isinstance(loaded, dict) or not all(isinstance(v, torch.Tensor) for v in loaded.values()):
            raise checkpoint_error(legacy, "is not a state dict of tensors")
        state = dict(loaded)
    else:
        raise checkpoint_error(directory / WEIGHT_FILES[0], f"missing file (looked for {', '.join(WEIGHT_FILES)})")
    return {k: v.float() if v.is_floating_point() else v for k, v in state.items()}, source


def _safetensors(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise checkpoint_error(path, "missing file")
    try:
        return load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise checkpoint_error(path, f"cannot read weights: {exc}") from exc


def strip_prefix(state: dict[str, torch.Tensor], prefix: str) -> dict[str, torch.Tensor]:
    """The base model's tensors without the task model's prefix ("bert.", "transformer."), when every
    base tensor carries it; the task heads (no prefix) are dropped."""
    if not any(k.startswith(prefix) for k in state):
        return state
    return {k[len(prefix):]: v for k, v in state.items() if k.startswith(prefix)}


def load_state(module: torch.nn.Module, state: dict[str, torch.Tensor], source: Path,
               name_of: Callable[[str], str], convert: Callable[[str, torch.Tensor], torch.Tensor] | None = None,
               ) -> None:
    """Fill every parameter of `module` from `state` (popped), strictly: a missing tensor or a shape
    that does not fit is an error naming the weights file. `name_of(ours)` is the checkpoint's name of
    one of our parameters; `convert(ours, tensor)` reshapes a checkpoint tensor into ours."""
    ours: dict[str, torch.Tensor] = {}
    for name, param in module.state_dict().items():
        theirs = name_of(name)
        if theirs not in state:
            raise checkpoint_error(source, f"lacks tensor {theirs}")
        tensor = state[theirs]
        if convert is not None:
            tensor = convert(name, tensor)
        if tuple(tensor.shape) != tuple(param.shape):
            raise checkpoint_error(source, f"tensor {theirs} has shape {tuple(state[theirs].shape)}, "
                                           f"which does not fit {tuple(param.shape)} from config.json")
        ours[name] = tensor
    module.load_state_dict(ours, strict=True)


def check_used(state: dict[str, torch.Tensor], used: set[str], source: Path, base: tuple[str, ...],
               ignored: tuple[str, ...] = ()) -> None:
    """Refuse tensors of the base model (names starting with `base`) that the loader did not use:
    they would change the outputs. Task heads outside `base` are allowed and left unused."""
    left = [k for k in state if k not in used and k.startswith(base) and not k.endswith(ignored)]
    if left:
        raise checkpoint_error(source, f"has tensors this model does not use: {sorted(left)[:5]}")


def _token(config: dict[str, Any], key: str, default: str) -> str:
    value = config.get(key, default)
    if isinstance(value, dict):
        value = value.get("content", default)
    return str(value) if value is not None else default


def load_tokenizer(directory: Path, kind: str, max_tokens: int) -> Tokenizer:
    """tokenizer.json, or one built with `tokenizers` from the architecture's vocabulary files:
    vocab.txt ("wordpiece": BERT, DistilBERT, ELECTRA) or vocab.json + merges.txt ("roberta", "gpt2").
    Settings come from tokenizer_config.json when there is one."""
    path = directory / "tokenizer.json"
    if path.is_file():
        try:
            return Tokenizer(path, max_tokens=max_tokens)
        except Exception as exc:  # the tokenizers library raises bare Exceptions on bad files
            raise checkpoint_error(path, f"cannot read the tokenizer: {exc}") from exc
    config_path = directory / "tokenizer_config.json"
    config = read_json(config_path) if config_path.is_file() else {}
    raw: BaseTokenizer
    if kind == "wordpiece":
        vocab = directory / "vocab.txt"
        if not vocab.is_file():
            raise checkpoint_error(path, "missing file, and no vocab.txt to build the tokenizer from")
        unk, sep, cls, pad, mask = (_token(config, k, d) for k, d in (
            ("unk_token", "[UNK]"), ("sep_token", "[SEP]"), ("cls_token", "[CLS]"),
            ("pad_token", "[PAD]"), ("mask_token", "[MASK]")))
        raw = BertWordPieceTokenizer(
            str(vocab), unk_token=unk, sep_token=sep, cls_token=cls, pad_token=pad, mask_token=mask,
            handle_chinese_chars=bool(config.get("tokenize_chinese_chars", True)),
            strip_accents=config.get("strip_accents"), lowercase=bool(config.get("do_lower_case", True)))
    else:
        vocab, merges = directory / "vocab.json", directory / "merges.txt"
        for needed in (vocab, merges):
            if not needed.is_file():
                raise checkpoint_error(path, f"missing file, and no {needed.name} to build the tokenizer from")
        prefix_space = bool(config.get("add_prefix_space", False))
        raw = ByteLevelBPETokenizer(str(vocab), str(merges), add_prefix_space=prefix_space,
                                    trim_offsets=bool(config.get("trim_offsets", True)))
        if kind == "roberta":
            bos, eos, unk, pad, mask = (_token(config, k, d) for k, d in (
                ("bos_token", "<s>"), ("eos_token", "</s>"), ("unk_token", "<unk>"),
                ("pad_token", "<pad>"), ("mask_token", "<mask>")))
            raw.add_special_tokens([bos, eos, unk, pad, AddedToken(mask, lstrip=True)])
            ids = {t: raw.token_to_id(t) for t in (bos, eos)}
            if None in ids.values():
                raise checkpoint_error(vocab, f"lacks the special tokens {bos} and {eos}")
            raw.post_processor = RobertaProcessing((eos, int(ids[eos] or 0)), (bos, int(ids[bos] or 0)),
                                                   trim_offsets=True, add_prefix_space=prefix_space)
        else:
            eos = _token(config, "eos_token", "<|endoftext|>")
            if raw.token_to_id(eos) is not None:
                raw.add_special_tokens([eos])
    # Tokenizer reads a tokenizer.json: hand it the one just built.
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(tmp) / "tokenizer.json"
        raw.save(str(built))
        return Tokenizer(built, max_tokens=max_tokens)
