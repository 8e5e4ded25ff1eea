"""Multi-head attention, one small pure function per step.

`MultiHeadAttention.forward` only composes the steps, in the order of STEPS,
and hands each intermediate result to a recorder when one is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import torch
from torch import nn

from model.nets.sparse import sparsify
from model.trace import widen

if TYPE_CHECKING:
    from model.nets.cache import LayerCache
    from model.nets.edit import Edit
    from model.nets.taps import Recorder


def project(x: torch.Tensor, linear: nn.Linear) -> torch.Tensor:
    """x W^T + b: the full-width projection of every token."""
    out: torch.Tensor = linear(x)  # (B, T, D)
    return out


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Cut the last axis into n_heads slices of equal width, heads first."""
    b, t, d = x.shape
    if d % n_heads:
        raise ValueError(f"width {d} is not divisible by n_heads {n_heads}")
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)  # (B, H, T, Dh)


def share_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Grouped-query attention: each of the G key-value heads serves n_heads / G query heads in a row
    (head h reads key-value head h // (n_heads / G)); G = n_heads leaves x as it is."""
    groups = x.shape[1]
    if groups == n_heads:
        return x
    return x.repeat_interleave(n_heads // groups, dim=1)  # (B, G, S, Dh) -> (B, H, S, Dh)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of split_heads: heads side by side again (concat)."""
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)  # (B, T, D)


def attention_scores(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """Raw similarity of every query with every key: Q_h K_h^T."""
    return q @ k.transpose(-2, -1)  # (B, H, T, S)


def scale_scores(scores: torch.Tensor, factor: float, in_place: bool = False) -> torch.Tensor:
    """Multiply by the scale factor, normally 1/sqrt(Dh); in place when the raw scores are not needed."""
    return scores.mul_(factor) if in_place else scores * factor  # (B, H, T, S)


def softcap_scores(scores: torch.Tensor, cap: float) -> torch.Tensor:
    """cap · tanh(scores / cap): close to the scores where they are small, never beyond ±cap (Gemma 2)."""
    return torch.tanh(scores / cap) * cap  # (B, H, T, S)


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Add an additive mask (0 where visible, -inf where hidden) or a bias."""
    if mask is None:
        return scores
    return scores + mask  # (B, H, T, S), mask broadcasts from (T, S) or (B, 1, T, S)


def softmax_rows(scores: torch.Tensor, any_hidden: bool = True) -> torch.Tensor:
    """Softmax over keys; a row whose keys are all hidden becomes zeros, not NaN.

    `any_hidden=False` says no mask was added, so no row can be all -inf and the
    check (four more passes over a (B, H, T, S) tensor) is skipped.
    """
    if not any_hidden:
        return torch.softmax(scores, dim=-1)  # (B, H, T, S)
    hidden_row = torch.isneginf(scores).all(dim=-1, keepdim=True)  # (B, H, T, 1)
    # a hidden row's scores are replaced by zeros before the softmax, so that autograd through it
    # gives zero gradients (a softmax of -inf only is NaN, and NaN · 0 stays NaN)
    weights = torch.softmax(scores.masked_fill(hidden_row, 0.0), dim=-1)  # (B, H, T, S)
    return weights.masked_fill(hidden_row, 0.0)


def weighted_sum(weights: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each query's mix of value vectors (the weights in v's dtype, for a bfloat16 network)."""
    return weights.to(v.dtype) @ v  # (B, H, T, Dh)


def head_factor(n_heads: int, heads: list[int], value: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(1, H, 1, 1): `value` for the chosen heads, 1 for the others (broadcasts over (B, H, T, S))."""
    factor = torch.ones(1, n_heads, 1, 1, dtype=dtype)
    factor[0, heads] = value
    return factor


def temper_scores(scaled: torch.Tensor, heads: list[int], temperature: float) -> torch.Tensor:
    """An edit: the chosen heads' scaled scores divided by the temperature (a new tensor; x / 1 is x)."""
    return scaled / head_factor(scaled.shape[1], heads, temperature)  # (B, H, T, S)


def hide_keys(masked: torch.Tensor, heads: list[int], keys: list[int]) -> torch.Tensor:
    """An edit: keys hidden from every query of the chosen heads (-inf added; a new tensor)."""
    hidden = torch.zeros(1, masked.shape[1], 1, masked.shape[-1])  # (1, H, 1, S)
    hidden[0, torch.tensor(heads)[:, None], 0, torch.tensor(keys)[None, :]] = float("-inf")
    return masked + hidden  # (B, H, T, S)


def ablate_heads(mixed: torch.Tensor, heads: list[int]) -> torch.Tensor:
    """An edit: the chosen heads' weighted sums zeroed (a new tensor)."""
    return mixed * head_factor(mixed.shape[1], heads, 0.0, mixed.dtype)  # (B, H, T, Dv)


def causal_mask(t: int, s: int | None = None, window: int | None = None, offset: int = 0) -> torch.Tensor:
    """Additive mask hiding key j from query i when j > offset + i, and with a sliding `window` also when
    j ≤ offset + i − window (query i sees keys offset + i − window + 1 .. offset + i). `offset`: the position
    of the first query, when the keys of `offset` earlier tokens come from a cache (0: top-left aligned)."""
    s = t if s is None else s
    hidden = torch.ones(t, s, dtype=torch.bool).triu(diagonal=1 + offset)  # (T, S)
    if window is not None:
        hidden |= torch.ones(t, s, dtype=torch.bool).tril(diagonal=offset - window)  # (T, S)
    return torch.zeros(t, s).masked_fill(hidden, float("-inf"))


def key_padding_mask(padding: torch.Tensor) -> torch.Tensor:
    """Additive mask hiding a batch's padding keys from every query: (B, T) bool, True at padding ->
    (B, 1, 1, T), 0 where visible and -inf at the padding (broadcasts over heads and queries)."""
    mask = torch.zeros(padding.shape, dtype=torch.float32, device=padding.device)
    return mask.masked_fill(padding, float("-inf"))[:, None, None, :]


Score = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (q, k) -> (B, H, T, S)
Weigh = Callable[[torch.Tensor, bool], torch.Tensor]  # (masked scores, any_hidden) -> (B, H, T, S) weights


class Rotate(Protocol):
    """(B, H, T, Dk) -> (B, H, T, Dk), row t rotated for position offset + t: RoPE."""

    def __call__(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor: ...


class MultiHeadAttention(nn.Module):
    """Multi-head attention whose forward is the composition of the step functions.

    Per-head widths d_keys (q and k) and d_values (v) default to d_model / n_heads, as in the
    AttentionLayer of the notes: W_q, W_k are d_model x H*d_keys, W_v d_model x H*d_values and
    W_o H*d_values x d_model. With n_kv_heads G < H (grouped-query attention; G = 1: multi-query) W_k
    and W_v make G heads only, each shared by H / G query heads (share_heads); the `split` step shows
    every query head's keys and values. `bias` False: no projection has a bias (`output_bias`, when given,
    sets W_o's apart: Qwen2 has q/k/v biases and none on W_o). `qk_norm_eps`, when given, adds an RMSNorm
    over each head's q and k (weights of d_keys, shared by the heads; Qwen3), applied right after the
    split and before the rotation. `softcap`, when given, bounds the scaled scores to (−softcap, softcap)
    (softcap_scores; Gemma 2), which the `scale` step shows. The scoring (`score`),
    weighting (`weigh`) and an optional rotation of q and k after the split (`rotate`) are plain
    functions that model/lab/variants.py and model/nets/positions.py swap in; the defaults are scaled
    dot-product softmax attention. With a rotation the `split` step's q and k are the rotated ones (what
    the scores are made of), and a traced forward without a cache also records them as they were before
    it, as `q_unrotated` and `k_unrotated` (model/trace.py arrange_rotation). The forward also calls
    `record.tap(name, value)` at the taps q, k, v, rot_q, rot_k, attn_scores, pattern and z (model/nets/taps.py)
    and goes on with the value it gets back: a LayerTaps as `record` reads or replaces them.
    """

    def __init__(
        self, d_model: int, n_heads: int, scale: float | None = None,
        d_keys: int | None = None, d_values: int | None = None, n_kv_heads: int | None = None, bias: bool = True,
        output_bias: bool | None = None, qk_norm_eps: float | None = None, softcap: float | None = None,
    ) -> None:
        super().__init__()
        if (d_keys is None or d_values is None) and d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        kv = n_heads if n_kv_heads is None else n_kv_heads
        if kv < 1 or n_heads % kv:
            raise ValueError(f"n_kv_heads {kv} does not divide n_heads {n_heads}")
        self.n_heads = n_heads
        self.n_kv_heads = kv
        self.d_keys = d_model // n_heads if d_keys is None else d_keys
        self.d_values = d_model // n_heads if d_values is None else d_values
        self.d_head = self.d_keys
        self.scale = 1.0 / math.sqrt(self.d_keys) if scale is None else scale
        self.query = nn.Linear(d_model, n_heads * self.d_keys, bias=bias)
        self.key = nn.Linear(d_model, kv * self.d_keys, bias=bias)
        self.value = nn.Linear(d_model, kv * self.d_values, bias=bias)
        self.output = nn.Linear(n_heads * self.d_values, d_model, bias=bias if output_bias is None else output_bias)
        self.query_norm = nn.RMSNorm(self.d_keys, eps=qk_norm_eps) if qk_norm_eps is not None else None
        self.key_norm = nn.RMSNorm(self.d_keys, eps=qk_norm_eps) if qk_norm_eps is not None else None
        self.softcap = softcap
        self.score: Score = attention_scores
        self.weigh: Weigh = softmax_rows
        self.rotate: Rotate | None = None

    def forward(
        self,
        x: torch.Tensor,
        keys: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        record: Recorder | None = None,
        edit: Edit | None = None,
        cache: LayerCache | None = None,
        mask_keeps_a_key: bool = False,
    ) -> torch.Tensor:
        """x: (B, T, D) inputs of the queries; keys, values: (B, S, D) inputs of the
        keys and values. keys default to x (self-attention), values to keys.

        `mask_keeps_a_key`: the caller knows that `mask` leaves every query at least one key (a causal mask, with
        or without a window: its own), so the softmax need not look for rows with every key hidden (four passes
        and two copies of the scores); an edit's hidden keys are looked for still.

        `cache` (self-attention of a decoder, model/nets/cache.py): the new tokens' keys and values are
        appended to the cached ones and the queries score against all of them; the new tokens' positions
        start at the cache's length (the rotation's offset), and `mask` must cover every key.

        `edit` (model/nets/edit.py Edit, meant for this layer) changes its heads: the temperature divides
        their scaled scores (the `scale` step shows the result), hidden keys are added to the mask (the
        `mask` step), ablation zeroes their weighted sums (the `weighted_sum` step), ProbSparse replaces their
        lazy queries' rows of weights (the `softmax` step; model/nets/sparse.py). Temperature 1, no hidden keys,
        no ablation and no ProbSparse leave every number as it is without an edit."""
        keys = x if keys is None else keys
        values = keys if values is None else values
        rec = record or NO_RECORD
        rec("input", x)
        q = project(x, self.query)  # (B, T, H*Dk)
        k = project(keys, self.key)  # (B, S, H*Dk)
        v = project(values, self.value)  # (B, S, H*Dv)
        rec("project", {"q": q, "k": k, "v": v})
        qh = split_heads(q, self.n_heads)  # (B, H, T, Dk)
        kg = split_heads(k, self.n_kv_heads)  # (B, G, S, Dk)
        vg = split_heads(v, self.n_kv_heads)  # (B, G, S, Dv)
        if self.query_norm is not None and self.key_norm is not None:
            qh, kg = self.query_norm(qh), self.key_norm(kg)
        qh, kg, vg = rec.tap("q", qh), rec.tap("k", kg), rec.tap("v", vg)
        unrotated: dict[str, torch.Tensor] = {}
        if self.rotate is not None:  # each key-value head rotated once, before it is shared
            if cache is None and rec.wants("split"):  # what the rotation turned, for a trace to show beside it
                unrotated = {"q_unrotated": qh, "k_unrotated": share_heads(kg, self.n_heads)}  # (B, H, T|S, Dk)
            offset = 0 if cache is None else cache.length
            qh, kg = self.rotate(qh, offset), self.rotate(kg, offset)
            qh, kg = rec.tap("rot_q", qh), rec.tap("rot_k", kg)
        if cache is not None:
            kg, vg = cache.extend(kg, vg)  # (B, G, S_cached + S, D·)
        kh = share_heads(kg, self.n_heads)  # (B, H, S, Dk)
        vh = share_heads(vg, self.n_heads)  # (B, H, S, Dv)
        rec("split", {"q": qh, "k": kh, "v": vh, **unrotated})
        scores = widen(self.score(qh, kh))  # (B, H, T, S): float32 from here to the softmax in a bfloat16 network
        rec("scores", scores)
        scaled = scale_scores(scores, self.scale, in_place=not rec.wants("scores"))
        if self.softcap is not None:
            scaled = softcap_scores(scaled, self.softcap)
        edited = [] if edit is None else edit.head_index(self.n_heads)
        if edit is not None and edit.temperature != 1.0:
            scaled = temper_scores(scaled, edited, edit.temperature)
        rec("scale", scaled)
        masked = apply_mask(scaled, mask)
        hiding = edit is not None and bool(edit.hidden_keys)
        if edit is not None and hiding:
            masked = hide_keys(masked, edited, list(edit.hidden_keys))
        masked = rec.tap("attn_scores", masked)
        rec("mask", masked)
        weights = self.weigh(masked, hiding or (mask is not None and not mask_keeps_a_key))  # (B, H, T, S)
        if edit is not None and edit.probsparse is not None:  # a lazy row's weights: 1/S, or 1 on keys 0..i if masked
            weights = sparsify(weights, qh, kh, edited, edit.probsparse, edit.seed, causal=mask is not None)
        weights = rec.tap("pattern", weights)
        rec("softmax", weights)
        mixed = weighted_sum(weights, vh)  # (B, H, T, Dv)
        if edit is not None and edit.ablate:
            mixed = ablate_heads(mixed, edited)
        mixed = rec.tap("z", mixed)
        rec("weighted_sum", mixed)
        joined = merge_heads(mixed)  # (B, T, H*Dv)
        rec("concat", joined)
        out = project(joined, self.output)  # (B, T, D)
        rec("output", out)
        return out


class NoRecord:
    """Recorder used when nothing is traced or tapped."""

    def wants(self, step: str) -> bool:
        return False

    def __call__(self, step: str, value: object) -> None:
        pass

    def tap(self, name: str, value: torch.Tensor) -> torch.Tensor:
        return value


NO_RECORD = NoRecord()
