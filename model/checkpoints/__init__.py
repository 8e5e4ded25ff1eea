"""Reading a model: `load` is the one way in, for a known id ("minilm", shipped in a package) and for a
local Hugging Face checkpoint directory alike, and returns the one loaded-model type, LoadedModel.

config.json's model_type picks the family module: BERT, RoBERTa, DistilBERT and ELECTRA (`bert`) become
post-LayerNorm Transformers, GPT-2 (`gpt2`) a causal pre-LayerNorm one, Llama, Mistral, Qwen2, Qwen3
and Gemma 2 (`llama`) causal pre-RMSNorm ones with RoPE (model/nets/). `files` reads
the weights (model.safetensors, its sharded index, or pytorch_model.bin with weights_only) and builds the
tokenizer; `registry` holds the known ids; `batch` runs several inputs in one padded forward. Nothing is
fetched from a model hub and transformers is never imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import torch

from model.checkpoints import bert, gpt2, hfcache, llama
from model.checkpoints.files import SUPPORTED, Parts, checkpoint_error, read_config, stop_ids
from model.checkpoints.loaded import LoadedModel, ModelSpec
from model.checkpoints.registry import MODELS, local_id
from model.errors import DeviceError, UnknownModel

DEVICES = ("cpu", "cuda")
# What the weights are kept and computed in: float32 (the default: answers equal transformers' to 1e-5), or
# bfloat16 (half the memory; on a CPU with bfloat16 instructions, AVX-512 BF16 or AMX, its matrix products are
# several times faster; its maps differ from float32's by up to a few hundredths: docs/models.md).
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}

__all__ = ["DEVICES", "DTYPES", "SUPPORTED", "LoadedModel", "ModelSpec", "check_device", "check_dtype", "load",
           "read_checkpoint"]


def check_device(device: str) -> None:
    """DeviceError for a device other than cpu and cuda, and for cuda when this torch has none."""
    if device not in DEVICES:
        raise DeviceError(f"device {device!r} is not supported; use one of {', '.join(DEVICES)}")
    if device == "cuda" and not torch.cuda.is_available():
        raise DeviceError("device 'cuda' was asked for, but torch.cuda.is_available() is False here "
                          "(a CPU-only torch, or no GPU); use device 'cpu'")


def check_dtype(dtype: str, device: str = "cpu") -> None:
    """DeviceError for a dtype other than float32 and bfloat16, and for bfloat16 where the device has no
    bfloat16 arithmetic (a CPU without AVX-512 BF16 or AMX would compute it slower than float32)."""
    if dtype not in DTYPES:
        raise DeviceError(f"dtype {dtype!r} is not supported; use one of {', '.join(DTYPES)}")
    if dtype == "bfloat16":
        supported = (torch.cuda.is_bf16_supported() if device == "cuda"
                     else torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
        if not supported:
            raise DeviceError(f"dtype 'bfloat16' was asked for, but this {device} has no bfloat16 arithmetic "
                              "(a CPU needs AVX-512 BF16 or AMX); use dtype 'float32'")


def read_checkpoint(directory: Path | str) -> Parts:
    """The network and tokenizer in a checkpoint directory, and what its family says about it.

    Raises CheckpointError naming the file and the problem (missing file, unsupported model_type,
    a tensor that is missing or does not fit the config) and the supported architectures."""
    directory = Path(directory).expanduser()
    if not directory.is_dir():
        raise checkpoint_error(directory, "is not a checkpoint directory")
    raw = read_config(directory)
    kind = raw.get("model_type")
    if kind in bert.ARCHITECTURES:
        return bert.load(directory, raw)
    if kind in gpt2.ARCHITECTURES:
        return gpt2.load(directory, raw)
    if kind in llama.ARCHITECTURES:
        return llama.load(directory, raw)
    raise checkpoint_error(directory / "config.json", f"model_type {kind!r} is not supported")


def _local(path: Path, label: str, name: str, taken: Iterable[str]) -> tuple[ModelSpec, Parts]:
    """A checkpoint directory's spec and parts; its id is `name` made unique (local_id), its name `label`."""
    parts = read_checkpoint(path)
    cfg = parts.net.cfg
    spec = ModelSpec(id=local_id(Path(name), [*MODELS, *taken]),
                     name=f"{label} ({parts.architecture}, {cfg.n_layers} layers x {cfg.n_heads} heads)",
                     architecture=parts.architecture, pairs=parts.pairs, causal=parts.causal,
                     locate=lambda: path, local=True)
    return spec, parts


def load(name_or_path: str | Path, device: str = "cpu", *, dtype: str = "float32", taken: Iterable[str] = (),
         directory: Path | None = None) -> LoadedModel:
    """A known model id ("minilm"), a local checkpoint directory or a Hugging Face repo id ("ORG/NAME",
    "ORG/NAME@REVISION") found in the local cache (model/checkpoints/hfcache.py; never downloaded), loaded
    in eval mode on `device`, its weights as `dtype` (DTYPES; the checkpoint's own dtype does not matter: a
    bfloat16 checkpoint is read as float32 unless `dtype` is bfloat16). A directory wins over a repo id of the
    same name.

    `taken`: ids already in use, which a directory's id avoids (local_id); `directory`: where a known id's
    files are when not where its spec locates them. Raises DeviceError first (check_device, check_dtype), then
    UnknownModel (naming the known ids) for a name that is neither, CheckpointError for a directory
    that does not hold a supported checkpoint and for a repo id that is not in the cache (naming the cache
    directory and the command that downloads it); a repo id's model id is its NAME made unique."""
    check_device(device)
    check_dtype(dtype, device)
    key = str(name_or_path)
    if key in MODELS:
        spec = MODELS[key]
        path = directory or spec.locate()
        parts = read_checkpoint(path)
    elif Path(key).expanduser().is_dir():  # a directory wins over a repo id of the same name
        path = Path(key).expanduser().resolve()
        spec, parts = _local(path, path.name, path.name, taken)
    elif hfcache.is_repo_id(key):
        path = hfcache.snapshot(key)
        spec, parts = _local(path, key, hfcache.repo_name(key), taken)
    else:
        raise UnknownModel(key, list(MODELS), hint="or the path of a checkpoint directory, or a Hugging Face repo id "
                                                   "(ORG/NAME) in the local cache")
    stops = stop_ids(path) if parts.net.cfg.lm_head else ()
    return LoadedModel(parts.net.eval(), parts.tokenizer, spec, parts.uses_segments, stops).to(device, DTYPES[dtype])
