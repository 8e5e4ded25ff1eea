"""Direct logit attribution: how much each head, each MLP and the embeddings write the answer's logit (or the
logit difference of two answers) straight into the last residual stream, at one position of one input.

In a pre-norm network (GPT-2, the Llama family: every family with an LM head) the residual stream that the
final norm reads at position p is a sum of parts,

    x = e + Σ_l (Σ_h a_lh + b_l) + Σ_l m_l

e the embeddings (word, positions, Gemma 2's √d_model scale included: what block 0 reads), a_lh = z_lh · W_O[h]
head h's share of layer l's output projection (z_lh its weighted sum softmax·V at p, W_O[h] the columns of W_O
that read head h: with grouped-query attention the query heads, each with its own slice), b_l the output
projection's bias (GPT-2; None where the projection has none), m_l the MLP's output.

The final norm is not linear; with its scale FROZEN at the value it takes on the whole x it is, and each part
goes through it alone:
* LayerNorm (GPT-2): norm(x) = (x − mean(x)) / s · γ + β with s = √(var(x) + ε). A part c gives
  (c − mean(c)) / s · γ (its own mean over d_model: the means of the parts add up to mean(x)); β is left over,
  the `norm_bias` part.
* RMSNorm (the Llama family): norm(x) = x / r · γ with r = √(mean(x²) + ε). A part c gives c / r · γ; there is
  no bias (`norm_bias` None).
Each normed part's dot product with u, the answer's row of the unembedding (the LM head, or the tied word
embeddings; for [good, bad] the good row minus the bad one), is its direct logit attribution. The parts then add
up to the logit itself, norm(x) · u, up to rounding: `total` against `logit`.

Gemma 2 (sandwich norms) adds an RMSNorm after each sublayer, before the residual sum: the attention adds
norm(Σ_h a_lh) to the stream. That norm's scale is frozen the same way, at its value on the whole attention
output, so each head's part is a_lh / r_l · γ_l; the MLP's part is its normed output as the stream receives it.
Gemma 2's logits are soft-capped, cap · tanh(logit / cap), which is not linear and not a sum of parts: the
attribution is of the logit before the cap (`logit`), and `capped` gives the model's own logit (or logit
difference) after it.

Everything is read from one traced forward of the network (model/trace.py: the per-head weighted sums, the
attention outputs, the MLP outputs, the block inputs and the final norm at the position) and computed in float64.
In float32 the parts add up to the logit within about 1e-6 of it; a network in bfloat16 sums its stream in
bfloat16, so there `total` and `logit` agree to bfloat16's precision only (about 1 %).
The attributions are direct effects only: what a head writes that later layers read and change is counted
where it finally lands, not at the head.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from model.analysis.lens import PositionOutOfRange
from model.errors import InputError, RuleError
from model.nets.transformer import Transformer
from model.trace import OnRecord, StepValue, Trace, widen

# error type -> (the ctx keys its error carries, what breaks it); the route documents this table
ANSWER_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "answer_count": (("count",), "an answer that is not one token id [id] or two [good, bad]"),
    "answer_out_of_range": (("id", "vocab_size"), "an answer token id at or beyond the vocabulary's size"),
    "answer_same": ((), "the same token as the good and the bad answer (the logit difference is 0)"),
}


class AnswerError(RuleError):
    """An answer the model cannot attribute; `type` is one of ANSWER_RULES."""

    rules = ANSWER_RULES


def checked_answer(answer: Sequence[int], vocab_size: int) -> tuple[int, ...]:
    """(id,) or (good, bad): token ids below the vocabulary's size, the two different. AnswerError otherwise,
    InputError for an item that is not an int."""
    if not 1 <= len(answer) <= 2:
        raise AnswerError("answer_count", "answer", f"answer has {len(answer)} token ids; send one, [id] (its logit), "
                          "or two, [good, bad] (their logit difference)", count=len(answer))
    for which, value in enumerate(answer):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputError(("answer", which), f"answer {value!r} is not a token id; send an int")
        if not 0 <= value < vocab_size:
            raise AnswerError("answer_out_of_range", ("answer", which), f"answer token id {value} is not in the "
                              f"vocabulary; ids run 0..{vocab_size - 1}", id=value, vocab_size=vocab_size)
    if len(answer) == 2 and answer[0] == answer[1]:
        raise AnswerError("answer_same", "answer", f"the good and the bad answer are the same token ({answer[0]}); "
                          "send two different tokens")
    return tuple(int(a) for a in answer)


@dataclass(frozen=True)
class LogitAttribution:
    """The direct logit attribution at `position` of the logit of `answer` (one id) or of the logit difference
    answer[0] − answer[1]. Every part is float64; `total` is their sum, `logit` the network's own logit (or
    difference) before any soft-cap, `capped` after it (Gemma 2: `softcap`; without one, equal to `logit`)."""

    position: int
    answer: tuple[int, ...]
    heads: torch.Tensor  # (L, H): each head's a_lh
    attention_bias: torch.Tensor | None  # (L,): each output projection's bias b_l; None where there is none
    mlp: torch.Tensor  # (L,): each MLP's output m_l
    embeddings: float
    norm_bias: float | None  # the final LayerNorm's β · u; None for RMSNorm
    total: float
    logit: float
    capped: float
    softcap: float | None
    norm: str  # "layer" (LayerNorm) or "rms" (RMSNorm): the final norm whose scale is frozen
    scale: float  # the frozen scale s (LayerNorm) or r (RMSNorm) of the final norm at `position`


def _f64(t: torch.Tensor) -> torch.Tensor:
    return widen(t.detach()).cpu().double()


def _scale(norm: nn.Module, x: torch.Tensor) -> float:
    """The divisor a norm applies to x (D,): √(var(x) + ε) for LayerNorm, √(mean(x²) + ε) for RMSNorm."""
    if isinstance(norm, nn.LayerNorm):
        return float(torch.sqrt(x.var(unbiased=False) + norm.eps))
    if isinstance(norm, nn.RMSNorm):
        eps = torch.finfo(torch.float32).eps if norm.eps is None else norm.eps
        return float(torch.sqrt((x * x).mean() + eps))
    raise TypeError(f"no frozen form for the norm {type(norm).__name__}")


def _frozen(norm: nn.Module, scale: float, parts: torch.Tensor) -> torch.Tensor:
    """Parts (…, D) through `norm` with its divisor fixed at `scale`: (c − mean(c)) / s · γ for LayerNorm (its β
    left out), c / r · γ for RMSNorm."""
    if isinstance(norm, nn.LayerNorm):
        parts = parts - parts.mean(dim=-1, keepdim=True)  # (…, D)
    weight = getattr(norm, "weight", None)
    scaled = parts / scale  # (…, D)
    return scaled if weight is None else scaled * _f64(weight)


def _row(position: int) -> OnRecord:
    """Keep each recorded step's row at `position` only: (1, H, Dv) for the weighted sums, (1, D) for the rest."""

    def keep(layer: int, step: str, value: StepValue) -> StepValue:
        assert isinstance(value, torch.Tensor)
        return value[:, :, position] if step == "weighted_sum" else value[:, position]

    return keep


def unembedding(decoder: Transformer) -> torch.Tensor:
    """The LM head's matrix (V, D): its own, or the tied word embeddings."""
    head = decoder.embeddings.word.weight if decoder.lm_head is None else decoder.lm_head.weight
    return head


@torch.inference_mode()
def logit_attribution(decoder: Transformer, ids: Sequence[int], position: int, answer: Sequence[int],
                      ) -> LogitAttribution:
    """The direct logit attribution (module docstring) of `answer` at `position` of one input `ids`.

    TypeError for a network without an LM head or not pre-norm; AnswerError for an answer that does not fit
    the vocabulary; PositionOutOfRange (model/analysis/lens.py) for a position outside the input."""
    cfg = decoder.cfg
    if not cfg.lm_head or decoder.final_norm is None or cfg.norm_place != "pre":
        raise TypeError("direct logit attribution reads the final norm of a pre-norm network with an LM head")
    chosen = checked_answer(answer, cfg.vocab_size)
    if not 0 <= position < len(ids):
        raise PositionOutOfRange(position, len(ids))
    sandwich = cfg.sandwich_norm
    steps = ("block_input", "weighted_sum", "add_2", "final_norm",
             *(("output", "post_norm_2") if sandwich else ("mlp_out",)))
    trace = Trace(steps=steps, on_record=_row(position))
    device = decoder.embeddings.word.weight.device
    decoder(torch.tensor([list(ids)], device=device), trace=trace)

    rows = unembedding(decoder)[list(chosen)]  # (1 or 2, D)
    u = _f64(rows[0]) - _f64(rows[1]) if len(chosen) == 2 else _f64(rows[0])  # (D,)
    last = cfg.n_layers - 1
    x = _f64(trace.tensor(last, "add_2")[0])  # (D,): the stream the final norm reads
    final = decoder.final_norm
    scale = _scale(final, x)

    def direct(parts: torch.Tensor) -> torch.Tensor:
        return _frozen(final, scale, parts) @ u  # (…,)

    heads, biases, mlps = [], [], []
    for layer in range(cfg.n_layers):
        block = decoder.block(layer)
        z = _f64(trace.tensor(layer, "weighted_sum")[0])  # (H, Dv)
        h, dv = z.shape
        w_o = _f64(block.attention.output.weight).view(cfg.d_model, h, dv)  # (D, H, Dv)
        written = torch.einsum("hv,dhv->hd", z, w_o)  # (H, D): a_lh
        bias = block.attention.output.bias
        b = None if bias is None else _f64(bias)  # (D,)
        post = block.attention_post_norm
        if post is not None:  # Gemma 2: the stream receives norm(attention output), its scale frozen
            if getattr(post, "bias", None) is not None:
                raise TypeError("a norm after the attention with a bias has no per-head split")
            r = _scale(post, _f64(trace.tensor(layer, "output")[0]))
            written = _frozen(post, r, written)
            b = None if b is None else _frozen(post, r, b)
        heads.append(direct(written))
        biases.append(None if b is None else direct(b))
        mlps.append(direct(_f64(trace.tensor(layer, "post_norm_2" if sandwich else "mlp_out")[0])))

    embeddings = float(direct(_f64(trace.tensor(0, "block_input")[0])))
    beta = getattr(final, "bias", None)
    norm_bias = None if beta is None else float(_f64(beta) @ u)
    head_parts = torch.stack(heads)  # (L, H)
    mlp_parts = torch.stack(mlps)  # (L,)
    bias_parts = None if any(b is None for b in biases) else torch.stack([b for b in biases if b is not None])
    total = (float(head_parts.sum()) + float(mlp_parts.sum()) + embeddings
             + (0.0 if bias_parts is None else float(bias_parts.sum())) + (norm_bias or 0.0))

    normed = trace.tensor(last, "final_norm")[0]  # (D,): the network's own final hidden state at `position`
    logit = float(_f64(normed) @ u)
    own = widen(decoder.logits(normed.to(device=device, dtype=rows.dtype))).cpu().double()[list(chosen)]  # capped
    capped = float(own[0] - own[1]) if len(chosen) == 2 else float(own[0])
    return LogitAttribution(position=position, answer=chosen, heads=head_parts, attention_bias=bias_parts,
                            mlp=mlp_parts, embeddings=embeddings, norm_bias=norm_bias, total=total, logit=logit,
                            capped=capped, softcap=cfg.logit_softcap, norm="rms" if cfg.norm == "rms" else "layer",
                            scale=scale)
