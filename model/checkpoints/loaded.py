"""One loaded model (LoadedModel: network, tokenizer, spec) and what it answers: hidden states, every
layer's attention maps, and the steps of one layer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch

from model.checkpoints.tokenizer import Encoded, Tokenizer
from model.maps import AttentionMaps, quantize_u16
from model.nets.config import NetConfig
from model.nets.edit import Edit
from model.nets.transformer import Transformer
from model.steps import BLOCK_STEPS, STEPS
from model.trace import StepValue, Trace, arrange_rotation, select, widen


@dataclass(frozen=True)
class ModelSpec:
    """What the model list says about a model: its id, a name for people, config.json's model_type
    (`architecture`), whether it takes a second segment (`pairs`) and whether each token sees only the
    tokens before it (`causal`)."""

    id: str
    name: str
    architecture: str
    pairs: bool
    causal: bool
    locate: Callable[[], Path]  # the checkpoint directory used unless settings name another
    local: bool = False  # a directory the user named; its path is never put in an API answer


@dataclass(frozen=True)
class BlockParts:
    """A block's build around its attention: the norms' place (`post`: after each residual sum, BERT; `pre`:
    before each sublayer, GPT-2 and the Llama family) and kind (LayerNorm or RMSNorm, with `eps`), the MLP's
    activation, whether the MLP is gated (act(x W_gate) ⊙ x W_in), its width, and each norm's weight γ and
    bias β (None: RMSNorm has none) by the name of the step it makes (model/steps.py BLOCK_STEPS)."""

    order: str
    norm: str
    activation: str
    gated: bool
    eps: float
    d_ff: int
    params: dict[str, tuple[torch.Tensor, torch.Tensor | None]]


@dataclass(eq=False)  # a loaded model is itself: compared and hashed by identity (analyses cache per model)
class LoadedModel:
    """A network with its tokenizer and spec, the one type every loaded model has: text in, hidden
    states and traces out. Made by model.checkpoints.load.

    `net` is the Transformer its config describes (model/nets/). `uses_segments` False: token types are all 0 whatever
    the tokenizer says (RoBERTa, DistilBERT, GPT-2). `stop_ids`: the tokens that end a generation (the
    checkpoint's eos_token_id)."""

    net: Transformer
    tokenizer: Tokenizer
    spec: ModelSpec
    uses_segments: bool = True
    stop_ids: tuple[int, ...] = ()

    @property
    def cfg(self) -> NetConfig:
        return self.net.cfg

    @property
    def architecture(self) -> str:
        return self.spec.architecture

    @property
    def causal(self) -> bool:
        return self.spec.causal

    @property
    def pairs(self) -> bool:
        return self.spec.pairs

    @property
    def device(self) -> torch.device:
        return self.net.embeddings.word.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """What the weights are and the network computes in: float32, or bfloat16 (model.checkpoints.load's
        `dtype`); every answer is float32 either way."""
        return self.net.embeddings.word.weight.dtype

    @property
    def dtype_name(self) -> str:
        """The dtype's name: "float32" or "bfloat16"."""
        return str(self.dtype).removeprefix("torch.")

    @property
    def lm_head(self) -> bool:
        """Whether the model predicts next tokens (the logit lens needs it): a tied LM head or its own."""
        return self.net.cfg.lm_head

    @property
    def decoder(self) -> Transformer:
        """The network, when it has an LM head; TypeError for one without (check `lm_head` first)."""
        if not self.lm_head:
            raise TypeError(f"model {self.spec.id!r} ({self.architecture}) has no LM head")
        return self.net

    def to(self, device: str | torch.device, dtype: torch.dtype = torch.float32) -> LoadedModel:
        """Moves the weights to `device` ("cpu", "cuda") as `dtype` (Transformer.cast); inputs follow them, and
        traced values and answers always come back on the CPU, in float32."""
        self.net.to(device)
        self.net.cast(dtype)
        return self

    def run(self, encoded: Encoded, trace: Trace | None = None, edit: Edit | None = None,
            through: int | None = None) -> torch.Tensor:
        """Forward one tokenized input (with a what-if edit when given); returns the last hidden state (1, T, D),
        or with `through` block `through`'s output (the later blocks are not run)."""
        ids = torch.tensor([encoded.ids], device=self.device)  # (1, T)
        segments = torch.tensor([encoded.segments], device=self.device) if self.uses_segments else torch.zeros_like(ids)
        hidden: torch.Tensor = self.net(ids, segments, trace=trace, edit=edit, through=through)  # (1, T, D)
        return widen(hidden).cpu()

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

    def trace_layer(self, encoded: Encoded, layer: int, heads: list[int] | None = None,
                    block: bool = False) -> dict[str, StepValue]:
        """Every step of one layer's attention, batch axis dropped, per-head steps limited to `heads`. The layers
        after it are not run. With RoPE, `split` holds q and k before the rotation and `rotated` (after `split`)
        holds them after it (model/trace.py arrange_rotation). `block`: the steps of the rest of the block too
        (BLOCK_STEPS, each T x width, in the order the block computes them; block_parts says what they are), and
        last `mlp_alone`: the block's MLP run on each token's input row as a sequence of its own (no other token
        beside it), which equals mlp_out row for row because the MLP works on each token alone."""
        trace = Trace(layers=[layer], steps=STEPS + BLOCK_STEPS if block else None)
        self.run(encoded, trace, through=layer)
        record = arrange_rotation(select(trace[layer], heads))
        if block:
            record["mlp_alone"] = self.mlp_alone(layer, cast(torch.Tensor, record["norm_2" if self.cfg.norm_place ==
                                                                                "pre" else "norm_1"]))
        return record

    @torch.inference_mode()
    def mlp_alone(self, layer: int, rows: torch.Tensor) -> torch.Tensor:
        """Block `layer`'s MLP on `rows` (T, D) as T sequences of one token each (a batch of T): (T, D) float32 on
        the CPU. One pass, whatever T (a pass per row read every weight T times: seconds on a 0.5B model)."""
        first = next(self.net.parameters())
        alone = self.net.block(layer).mlp(rows.to(first.device, first.dtype)[:, None, :])  # (T, 1, D)
        return widen(alone[:, 0]).cpu()

    def block_parts(self, layer: int) -> BlockParts:
        """How block `layer` is built around its attention, with its norms' weights (float32, on the CPU)."""
        cfg, block = self.cfg, self.net.block(layer)
        norms = {"norm_1": block.attention_norm, "norm_2": block.ff_norm, "post_norm_1": block.attention_post_norm,
                 "post_norm_2": block.ff_post_norm,
                 "final_norm": self.net.final_norm if layer == cfg.n_layers - 1 else None}

        def readable(t: object) -> torch.Tensor | None:
            return None if t is None else widen(cast(torch.Tensor, t).detach()).cpu()

        params = {name: (cast(torch.Tensor, readable(norm.weight)), readable(getattr(norm, "bias", None)))
                  for name, norm in norms.items() if norm is not None}
        return BlockParts(order=cfg.norm_place, norm=cfg.norm, activation=cfg.activation, gated=cfg.mlp == "gated",
                          eps=cfg.layer_norm_eps, d_ff=cfg.d_ff, params=params)

    @property
    def rope_frequencies(self) -> torch.Tensor | None:
        """RoPE's inverse frequencies f_i (d_head/2,), float32, after the model's scaling: pair i of a head's q
        and k (columns i and i + d_head/2) at position p turns by the angle p·f_i. None without RoPE."""
        if self.cfg.positions != "rope":
            return None
        return cast(torch.Tensor, self.net.rope_inverse).detach().cpu()

    def attention_scale(self, layer: int) -> float:
        return self.net.block(layer).attention.scale
