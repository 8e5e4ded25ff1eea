"""One transformer network, configured: every family attnscope runs is a NetConfig of this one class.

What differs between families is in the config, not in subclasses: the norm (LayerNorm or RMSNorm) and
where it sits (`post`: BERT's x = norm(x + sublayer(x)), with a norm on the embeddings; `pre`: GPT-2's
x = x + sublayer(norm(x)), with a final norm), whether a query sees only the keys before it (`causal`,
and a sliding `window`), query and key-value heads, the MLP (plain or gated) and its activation, biases,
how the scores are scaled (1/√d_head, 1, or also 1/(layer + 1)), token-type embeddings, the positions (a
learned table added to the embeddings, or RoPE rotating every head's q and k: the attention's `rotate`
hook), per-head q/k RMSNorm, and an LM head (the tied word embeddings or a matrix of its own, read back
by `unembed`). Every block runs the same MultiHeadAttention (model/nets/attention.py), one small
function per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import torch
from torch import nn

from model.nets.attention import NO_RECORD, MultiHeadAttention, NoRecord, causal_mask, key_padding_mask
from model.nets.config import ACTIVATIONS, NetConfig
from model.nets.positions import rope_half, rope_inverse_frequencies
from model.nets.taps import FINAL_TAP, Recorder, Taps
from model.trace import Trace

if TYPE_CHECKING:
    from model.nets.cache import KVCache, LayerCache
    from model.nets.edit import Edit


def make_norm(cfg: NetConfig) -> nn.Module:
    """The network's norm over d_model: LayerNorm, or RMSNorm (no mean subtracted, no bias)."""
    if cfg.norm == "rms":
        return nn.RMSNorm(cfg.d_model, eps=cfg.layer_norm_eps)
    return nn.LayerNorm(cfg.d_model, eps=cfg.layer_norm_eps)


class Embeddings(nn.Module):
    """Word + learned position (+ token-type) embeddings; LayerNorm after them in a post-norm network. No
    position table unless the positions are learned (`position` None: RoPE or none)."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.position = nn.Embedding(cfg.max_positions, cfg.d_model) if cfg.positions == "learned" else None
        self.token_type = nn.Embedding(cfg.type_vocab_size, cfg.d_model) if cfg.type_vocab_size else None
        self.norm = make_norm(cfg) if cfg.norm_place == "post" else None
        self.scale = cfg.embed_scale

    def forward(self, ids: torch.Tensor, segments: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """`offset`: the position of the first token (after the tokens of a KV cache)."""
        x = self.word(ids)  # (B, T, D)
        if self.scale is not None:
            x = x * torch.tensor(self.scale, dtype=x.dtype)  # (B, T, D)
        if self.position is not None:
            x = x + self.position(torch.arange(offset, offset + ids.shape[1], device=ids.device))  # (B, T, D)
        if self.token_type is not None:
            x = x + self.token_type(segments)  # (B, T, D)
        out: torch.Tensor = x if self.norm is None else self.norm(x)
        return out


class Block(nn.Module):
    """Self-attention and an MLP, each with a residual connection and a norm before (pre) or after (post)
    it; with sandwich_norm a norm after each sublayer as well (pre-norm: x = x + norm(sublayer(norm(x))))."""

    def __init__(self, cfg: NetConfig, layer: int) -> None:
        super().__init__()
        self.pre_norm = cfg.norm_place == "pre"
        self.attention_norm = make_norm(cfg)
        qkv_bias, output_bias, mlp_bias = cfg.biases()
        self.attention = MultiHeadAttention(cfg.d_model, cfg.n_heads, scale=cfg.attention_scale(layer),
                                            d_keys=cfg.d_head, d_values=cfg.d_head, n_kv_heads=cfg.kv_heads,
                                            bias=qkv_bias, output_bias=output_bias,
                                            qk_norm_eps=cfg.layer_norm_eps if cfg.qk_norm else None,
                                            softcap=cfg.attention_softcap)
        self.ff_norm = make_norm(cfg)
        self.attention_post_norm = make_norm(cfg) if cfg.sandwich_norm else None
        self.ff_post_norm = make_norm(cfg) if cfg.sandwich_norm else None
        self.ff_gate = nn.Linear(cfg.d_model, cfg.d_ff, bias=mlp_bias) if cfg.mlp == "gated" else None
        self.ff_in = nn.Linear(cfg.d_model, cfg.d_ff, bias=mlp_bias)
        self.ff_out = nn.Linear(cfg.d_ff, cfg.d_model, bias=mlp_bias)
        self.activation = ACTIVATIONS[cfg.activation]

    def mlp(self, x: torch.Tensor, record: Recorder | NoRecord = NO_RECORD) -> torch.Tensor:
        """out(act(in(x))), or gated: out(act(gate(x)) ⊙ in(x)) (SwiGLU, GeGLU). Each token's row alone."""
        if self.ff_gate is None:
            before = self.ff_in(x)  # (B, T, d_ff)
            record("mlp_hidden", before)
            hidden = self.activation(before)  # (B, T, d_ff)
        else:
            gate = self.ff_gate(x)  # (B, T, d_ff)
            record("mlp_gate", gate)
            opened = self.activation(gate)  # (B, T, d_ff)
            record("mlp_gate_act", opened)
            up = self.ff_in(x)  # (B, T, d_ff)
            record("mlp_hidden", up)
            hidden = opened * up  # (B, T, d_ff)
        record("mlp_act", hidden)
        out: torch.Tensor = self.ff_out(hidden)  # (B, T, D)
        record("mlp_out", out)
        return out

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, record: Recorder | None = None,
        edit: Edit | None = None, cache: LayerCache | None = None, mask_keeps_a_key: bool = False,
    ) -> torch.Tensor:
        """`mask_keeps_a_key`: see MultiHeadAttention.forward. `record` sees the attention's steps (STEPS) and
        the block's around it (BLOCK_STEPS, model/steps.py), in the order they are computed; its `tap` is called
        at the taps resid_pre, attn_out, resid_mid, mlp_out and resid_post (and the attention's), and the block
        goes on with what it returns (a LayerTaps, model/nets/taps.py, reads or replaces them)."""
        kept = mask_keeps_a_key
        rec = record or NO_RECORD
        x = rec.tap("resid_pre", x)
        rec("block_input", x)
        if self.pre_norm:
            normed = self.attention_norm(x)  # (B, T, D)
            rec("norm_1", normed)
            attended = self.attention(normed, mask=mask, record=record, edit=edit, cache=cache, mask_keeps_a_key=kept)
            if self.attention_post_norm is not None:
                attended = self.attention_post_norm(attended)
                rec("post_norm_1", attended)
            attended = rec.tap("attn_out", attended)
            x = rec.tap("resid_mid", x + attended)  # (B, T, D)
            rec("add_1", x)
            normed = self.ff_norm(x)  # (B, T, D)
            rec("norm_2", normed)
            fed = self.mlp(normed, rec)  # (B, T, D)
            if self.ff_post_norm is not None:
                fed = self.ff_post_norm(fed)
                rec("post_norm_2", fed)
            fed = rec.tap("mlp_out", fed)
            added: torch.Tensor = rec.tap("resid_post", x + fed)  # (B, T, D)
            rec("add_2", added)
            return added
        attended = rec.tap("attn_out", self.attention(x, mask=mask, record=record, edit=edit, cache=cache,
                                                      mask_keeps_a_key=kept))  # (B, T, D)
        x = rec.tap("resid_mid", x + attended)  # (B, T, D)
        rec("add_1", x)
        x = self.attention_norm(x)  # (B, T, D)
        rec("norm_1", x)
        x = x + rec.tap("mlp_out", self.mlp(x, rec))
        rec("add_2", x)
        out: torch.Tensor = rec.tap("resid_post", self.ff_norm(x))  # (B, T, D)
        rec("norm_2", out)
        return out


class Transformer(nn.Module):
    """Token ids (and segment ids) in, the last hidden state out (after the final LayerNorm of a pre-norm
    network)."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embeddings: Embeddings = Embeddings(cfg)  # a family may put a subclass here (model/checkpoints/bert.py)
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.final_norm = make_norm(cfg) if cfg.norm_place == "pre" else None
        self.lm_head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False) if cfg.own_head else None
        if cfg.positions == "rope":
            # float32 as transformers computes them; moves with the network (.to), never saved or loaded
            self.register_buffer("rope_inverse", rope_inverse_frequencies(cfg.d_head, cfg.rope_theta,
                                                                          cfg.rope_scaling), persistent=False)
            for block in self.blocks:
                cast(Block, block).attention.rotate = self.rotate

    def cast(self, dtype: torch.dtype) -> Transformer:
        """Every weight as `dtype` (float32, or bfloat16: half the memory, and fast matrix products on CPUs with
        bfloat16 instructions), the network then computing in it; RoPE's frequencies stay float32, as
        transformers keeps them. The attention turns its scores to float32 for the scale, the mask and the
        softmax (model/nets/attention.py), so the weights it gives are float32 in either dtype."""
        inverse = getattr(self, "rope_inverse", None)
        self.to(dtype)
        if inverse is not None:
            self.rope_inverse = inverse
        return self

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """RoPE (the half-split form) of one head stack (B, H, T, Dh): row t rotated for position offset + t."""
        inverse = cast(torch.Tensor, self.rope_inverse)
        return rope_half(x, inverse, offset)  # (B, H, T, Dh)

    @torch.inference_mode()
    def forward(
        self, ids: torch.Tensor, segments: torch.Tensor | None = None, trace: Trace | None = None,
        edit: Edit | None = None, padding: torch.Tensor | None = None, through: int | None = None,
        cache: KVCache | None = None, taps: Taps | None = None,
    ) -> torch.Tensor:
        """ids, segments: (B, T) int64 (segments: zeros when None; unused without token types). Records into
        `trace` when one is given. `through`: run blocks 0…through only and return that block's output (no
        final norm), for a trace that needs no later layer; None: every block.

        `taps` (model/nets/taps.py): hooks that read or replace values at the named points of every block (and
        the final norm's output when every block runs), and the values kept; its names are checked against
        this network first (InputError). A trace and taps combine: each block gets the taps with the trace's
        recorder inside, and a step recorded after a tap shows the hooked value.

        `edit` (model/nets/edit.py) changes heads of its layer; every later layer runs on the edited
        hidden state, and the layers before it are computed exactly as without an edit. Its indices are
        checked against this network and input first (domain errors, loc under "edit").

        A causal network hides the keys after each query (-inf before the softmax: the `mask` step shows
        the upper triangle). `padding`: (B, T) bool, True at the padding of a batch of inputs of different
        lengths; those keys are hidden from every query as well, so each input's real tokens get the
        numbers they get alone (pad a causal network on the right, so that every real token keeps its
        position); the padding's own rows mean nothing. None: no padding.

        `cache` (a causal network; model/nets/cache.py): ids are the tokens after the cached ones, at
        positions cache.length …; their keys and values are added to the cache, and each attends to every
        cached key and its own (within its layer's window). Not with an edit, padding or `through`."""
        t = ids.shape[1]
        offset = 0 if cache is None else cache.length
        if offset + t > self.cfg.max_positions:
            raise ValueError(f"{offset + t} tokens exceed the model's limit of {self.cfg.max_positions}")
        if cache is not None and (not self.cfg.causal or edit is not None or padding is not None
                                  or through is not None):
            raise ValueError("a KV cache is for a causal network's plain forward: no edit, padding or through")
        if edit is not None:
            edit.check(self.cfg.n_layers, self.cfg.n_heads, t)
        if taps is not None:
            taps.check(self.cfg.n_layers, self.cfg.positions == "rope", self.final_norm is not None)
        segments = torch.zeros_like(ids) if segments is None else segments
        masks = self.layer_masks(t, ids.device, padding, offset)
        x: torch.Tensor = self.embeddings(ids, segments, offset)  # (B, T, D)
        blocks = self.blocks if through is None else self.blocks[: through + 1]
        record: Recorder | None = None
        for i, block in enumerate(blocks):
            record = trace.recorder(i) if trace is not None else None
            if taps is not None:
                record = taps.layer(i, record)
            x = block(x, mask=masks[i], record=record, edit=edit if edit is not None and edit.layer == i else None,
                      cache=cache.layers[i] if cache is not None else None, mask_keeps_a_key=padding is None)
        # a trace of the last block shows the final norm too, even when it stops there (`through`)
        shown = (through is None or through == self.cfg.n_layers - 1) and record is not None and record.wants(
            "final_norm")
        if self.final_norm is None or (through is not None and not shown):
            return x
        normed: torch.Tensor = self.final_norm(x)  # (B, T, D)
        if taps is not None and through is None:
            normed = taps.final(self.cfg.n_layers).tap(FINAL_TAP, normed)
        if shown and record is not None:
            record("final_norm", normed)
        return x if through is not None else normed

    def layer_masks(self, t: int, device: torch.device, padding: torch.Tensor | None = None, offset: int = 0,
                    ) -> list[torch.Tensor | None]:
        """Each layer's additive mask for t tokens: None (an encoder without padding), the causal mask, with
        the sliding window in a local layer (NetConfig.layer_window), plus the padding's keys hidden
        ((B, 1, T, T) then). `offset`: tokens before these in a KV cache (the mask is then (T, offset + T)).
        Layers with the same mask share one tensor. Without padding no mask hides every key of a query (the
        causal mask and a window of at least 1 leave its own); with it, a padding query's window may hold only
        padding."""
        made: dict[int | None, torch.Tensor | None] = {}
        padded = key_padding_mask(padding) if padding is not None else None  # (B, 1, 1, T)
        masks = []
        for layer in range(self.cfg.n_layers):
            window = self.cfg.layer_window(layer)
            if window not in made:
                mask = causal_mask(t, offset + t, window, offset).to(device) if self.cfg.causal else None  # (T, S)
                if padded is not None:
                    mask = padded if mask is None else mask + padded  # (B, 1, T, T)
                made[window] = mask
            masks.append(made[window])
        return masks

    def block(self, layer: int) -> Block:
        return cast(Block, self.blocks[layer])

    def unembed(self, residual: torch.Tensor) -> torch.Tensor:
        """Next-token logits of a residual stream (…, D): the final norm, then the LM head (the tied word
        embeddings, GPT-2's, or its own lm_head matrix); for the last layer's stream these are the network's
        own logits. Only for a network with an LM head (NetConfig.lm_head)."""
        if self.final_norm is None:
            raise TypeError("this network has no LM head")
        return self.logits(self.final_norm(residual))

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """Next-token logits (…, V) of the last hidden state (…, D), which forward returns (after the final
        norm): the LM head, soft-capped when NetConfig.logit_softcap says so (Gemma 2). Only for a network with
        an LM head (NetConfig.lm_head)."""
        if not self.cfg.lm_head:
            raise TypeError("this network has no LM head")
        head = self.embeddings.word.weight if self.lm_head is None else self.lm_head.weight  # (V, D)
        logits: torch.Tensor = hidden @ head.T  # (…, V)
        cap = self.cfg.logit_softcap
        return logits if cap is None else torch.tanh(logits / cap) * cap
