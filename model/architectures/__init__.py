"""Load a local Hugging Face checkpoint directory into our own modules, by config.json's model_type.

BERT, RoBERTa, DistilBERT and ELECTRA become our post-LayerNorm Encoder (model/transformer.py), GPT-2
our causal pre-LayerNorm Decoder (model/decoder.py). Weights come from model.safetensors (or its
sharded index) or pytorch_model.bin (weights_only); the tokenizer from tokenizer.json or the
architecture's vocabulary files. Nothing is fetched from a model hub and transformers is never imported.
"""

from __future__ import annotations

from pathlib import Path

from . import bert, gpt2
from .bert import EncoderCheckpoint
from .common import SUPPORTED, checkpoint_error, read_config
from .gpt2 import DecoderCheckpoint

CheckpointModel = EncoderCheckpoint | DecoderCheckpoint

__all__ = ["SUPPORTED", "CheckpointModel", "DecoderCheckpoint", "EncoderCheckpoint", "load_checkpoint"]


def load_checkpoint(directory: Path | str) -> CheckpointModel:
    """The model in `directory`, ready to run: a PretrainedEncoder subclass that also says its
    `architecture` (config.json's model_type), whether it is `causal` and whether it takes `pairs`.

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
    raise checkpoint_error(directory / "config.json", f"model_type {kind!r} is not supported")
