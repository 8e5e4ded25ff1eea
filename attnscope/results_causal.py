"""The Python API's answers about outputs: the logit lens, what an edit changes, activation patching, gradient
attribution and direct logit attribution. Frozen dataclasses of numpy arrays with `save(path)`, as in
attnscope/results.py (which says how saving reads them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from model.checkpoints.tokenizer import Token

from .results import Result, displays


@dataclass(frozen=True)
class Lens(Result):
    """The logit lens at `position`: the residual stream after the embeddings and after each block, read as the
    model reads its last one (final norm, unembedding, softmax over the vocabulary). `layers` names the rows:
    "embeddings", then 0..L-1 (the last row is the model's own next-token distribution). `top_ids` int64
    (L + 1, top_k), most probable first; `probabilities` and `logits` float32 (L + 1, top_k); `top_tokens` and
    `top_displays` [row][k]: the tokenizer's token strings and decodings of top_ids."""

    text: str
    tokens: list[Token]
    ids: list[int]
    position: int
    top_k: int
    layers: list[str | int]
    top_ids: np.ndarray
    probabilities: np.ndarray
    logits: np.ndarray
    top_tokens: list[list[str]]
    top_displays: list[list[str]]
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"top_ids": self.top_ids, "probabilities": self.probabilities, "logits": self.logits,
                "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "lens", "model": self.model, "text": self.text, "tokens": displays(self.tokens),
                "position": self.position, "top_k": self.top_k, "rows": [str(x) for x in self.layers],
                "top_displays": self.top_displays}


@dataclass(frozen=True)
class NextTokenChange:
    """The next-token distribution at the last position without (p) and with (p') an edit: `kl` = KL(p ‖ p') in
    nats, the most probable token before (id, display, p(before)) and after (id, display, p'(after)), and
    `before_probability_after` = p'(before)."""

    kl: float
    before: int
    before_display: str
    before_probability: float
    after: int
    after_display: str
    after_probability: float
    before_probability_after: float


@dataclass(frozen=True)
class ProbSparseChoice:
    """What a ProbSparse edit chose in each edited head (`heads`): `measure` float32 (len(heads), T), each query's
    sparsity measure M; `active` int64 (len(heads), u), the u = min(factor·⌈ln T⌉, T) active queries, ascending;
    `lazy` what every other query gets: "mean" (of V), or "sum" (cumulative, in a causal model)."""

    factor: int
    seed: int
    heads: list[int]
    measure: np.ndarray
    active: np.ndarray
    lazy: str


@dataclass(frozen=True)
class EditEffect(Result):
    """What a what-if `edit` (the REST edit's fields) changes. For the edited layer and every later one
    (`layers`): `row_change_mean` and `row_change_max` float32 (len(layers), H), the mean and the largest over
    query rows of ½ Σ_j |a'_ij − a_ij|. `hidden_by_token` float32 (T,): ‖h'_t − h_t‖ / ‖h_t‖ of the final hidden
    state; `hidden_relative`: ‖H' − H‖ / ‖H‖ (Frobenius). `next_token`: a model with an LM head only; `probsparse`: a
    ProbSparse edit only."""

    text: str
    pair: str | None
    tokens: list[Token]
    ids: list[int]
    edit: dict[str, Any]
    layers: list[int]
    row_change_mean: np.ndarray
    row_change_max: np.ndarray
    hidden_by_token: np.ndarray
    hidden_relative: float
    next_token: NextTokenChange | None
    probsparse: ProbSparseChoice | None
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        out = {"row_change_mean": self.row_change_mean, "row_change_max": self.row_change_max,
               "hidden_by_token": self.hidden_by_token, "ids": np.asarray(self.ids, dtype=np.int64)}
        if self.probsparse is not None:
            out |= {"probsparse.measure": self.probsparse.measure, "probsparse.active": self.probsparse.active}
        return out

    def _meta(self) -> dict[str, Any]:
        choice = self.probsparse
        return {"kind": "edit_effect", "model": self.model, "text": self.text, "pair": self.pair,
                "tokens": displays(self.tokens), "edit": self.edit, "layers": self.layers,
                "hidden_relative": self.hidden_relative,
                "next_token": None if self.next_token is None else asdict(self.next_token),
                "probsparse": None if choice is None else {"factor": choice.factor, "seed": choice.seed,
                                                           "heads": choice.heads, "lazy": choice.lazy}}


@dataclass(frozen=True)
class Patching(Result):
    """An activation-patching grid (model/analysis/patching.py): `target` "heads" (rows layers, columns heads) or
    "residual" (rows layers, columns positions); `axes` names the grid's axes, outermost first ("layer", then
    "head" or "position"), `columns` its second. `patched` float32 (L, H or T): the metric m after each patch;
    `grid` the same cells normalised, (m(patched) − m(corrupted)) / (m(clean) − m(corrupted)), 1 = the clean metric
    restored; None when `normalised` is False (the gap between the two metrics is too small beside their scale for
    the ratio to mean anything). `metric_name` "logit_difference" (logit[good] −
    logit[bad] at the last position, `answer` the (id, display) of good and bad) or "cosine_similarity" (of the
    mean-pooled last hidden state to the clean text's; `answer` None); `metric_clean`, `metric_corrupted` m of the
    two runs."""

    clean: str
    corrupted: str
    clean_tokens: list[Token]
    corrupted_tokens: list[Token]
    target: str
    axes: list[str]
    columns: str
    normalised: bool
    metric_name: str
    metric_clean: float
    metric_corrupted: float
    answer: list[tuple[int, str]] | None
    patched: np.ndarray
    grid: np.ndarray | None
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        out = {"patched": self.patched}
        if self.grid is not None:
            out["grid"] = self.grid
        return out

    def _meta(self) -> dict[str, Any]:
        return {"kind": "patch", "model": self.model, "text": self.clean, "corrupted": self.corrupted,
                "tokens": displays(self.clean_tokens), "corrupted_tokens": displays(self.corrupted_tokens),
                "target": self.target, "axes": self.axes, "rows": "layer", "columns": self.columns,
                "normalised": self.normalised, "metric_name": self.metric_name,
                "metric_clean": self.metric_clean, "metric_corrupted": self.metric_corrupted,
                "answer": None if self.answer is None else [list(a) for a in self.answer]}


@dataclass(frozen=True)
class Completeness:
    """Integrated gradients' check: the attributions' `sum` against `difference` = f(x) − f(baseline);
    `relative_gap` |sum − difference| / |difference| (inf when only the difference is 0); `ok` False when the
    gap is over 5 % or the difference too small to check (`reason` "gap" or "difference_too_small")."""

    sum: float
    difference: float
    relative_gap: float
    ok: bool
    reason: str | None


@dataclass(frozen=True)
class Attribution(Result):
    """Attributions of one output f to each token's word embedding (model/analysis/attribution.py): f is the
    next-token logit of the token id `target` at the last position (a model with an LM head; `output_name`
    "logit") or the cosine similarity of the mean-pooled last hidden state to the text `target`'s ("cosine").
    `scores` float64 (T,): (∂f/∂e_i)·e_i (`method` "gradient_x_input") or integrated gradients from the baseline
    (`baseline` "mean", "pad", "mask", "zeros" or "text"; `baseline_token_id` and `baseline_token` for pad and
    mask, `baseline_text` for text) with `steps` Gauss–Legendre nodes. `output` f(x), `baseline_output`
    f(baseline); `completeness` (integrated gradients only). `compared` name -> float64 (T,): the last layer's
    attention (mean over heads), rollout and contributions of `rows` ("last": the last query's row; "mean": the mean
    over every row); `agreement` each one's Spearman ρ with |scores| (None where undefined or when completeness
    fails, then `warning` says what to change)."""

    text: str
    tokens: list[Token]
    ids: list[int]
    target: int | str
    method: str
    steps: int | None
    output_name: str
    output: float
    baseline: str
    baseline_token_id: int | None
    baseline_token: str | None
    baseline_text: str | None
    baseline_output: float
    rows: str
    scores: np.ndarray
    compared: dict[str, np.ndarray]
    agreement: dict[str, float | None]
    completeness: Completeness | None
    warning: str | None
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"scores": self.scores, **{f"compared.{k}": v for k, v in self.compared.items()},
                "ids": np.asarray(self.ids, dtype=np.int64)}

    def _meta(self) -> dict[str, Any]:
        gap = None if self.completeness is None else self.completeness
        return {"kind": "attribution", "model": self.model, "text": self.text, "tokens": displays(self.tokens),
                "target": self.target, "method": self.method, "steps": self.steps, "output_name": self.output_name,
                "output": self.output, "baseline": self.baseline, "baseline_token_id": self.baseline_token_id,
                "baseline_token": self.baseline_token, "baseline_text": self.baseline_text,
                "baseline_output": self.baseline_output, "rows": self.rows, "agreement": self.agreement,
                "completeness": None if gap is None else {**asdict(gap), "relative_gap": gap.relative_gap
                                                          if np.isfinite(gap.relative_gap) else None},
                "warning": self.warning}


@dataclass(frozen=True)
class ContinuationAttribution(Result):
    """A continuation attributed token by token (model/analysis/continuation.py): row j explains the
    log-probability of continuation token j given everything before it, by integrated gradients over the word
    embeddings of the text's tokens and the continuation's before it. `scores` float64 (n, p + n − 1): row j's
    attributions to tokens 0 .. p + j − 1 and NaN after them (p = len(tokens), the text's). `output` and
    `baseline_output` float64 (n,): f_j(x) and f_j(baseline) in nats; `completeness` [n] and `warnings` [n] (None,
    or why row j's ranking is unreliable and what to change). `continuation` (id, display) pairs; `generated`:
    made greedily here (else given)."""

    text: str
    tokens: list[Token]
    continuation: list[tuple[int, str]]
    generated: bool
    steps: int
    baseline: str
    baseline_token_id: int | None
    scores: np.ndarray
    output: np.ndarray
    baseline_output: np.ndarray
    completeness: list[Completeness]
    warnings: list[str | None]
    model: str

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"scores": self.scores, "output": self.output, "baseline_output": self.baseline_output,
                "ids": np.asarray([i for i, _ in self.continuation], dtype=np.int64),
                "relative_gap": np.asarray([c.relative_gap for c in self.completeness], dtype=np.float64),
                "ok": np.asarray([c.ok for c in self.completeness])}

    def _meta(self) -> dict[str, Any]:
        return {"kind": "continuation_attribution", "model": self.model, "text": self.text,
                "tokens": displays(self.tokens), "continuation": [d for _, d in self.continuation],
                "generated": self.generated, "steps": self.steps, "baseline": self.baseline,
                "baseline_token_id": self.baseline_token_id, "output_name": "log_probability",
                "warnings": self.warnings}


@dataclass(frozen=True)
class LogitAttribution(Result):
    """Direct logit attribution (model/analysis/logit_attribution.py) at `position` of `answer`'s logit ([id]) or
    logit difference ([good, bad]), every part through the final norm with its scale frozen (`scale`, of the
    `norm` "layer" or "rms") and dotted with the answer's unembedding row. `heads` float64 (layers, heads): each
    head's share z_h · W_O[h] of its layer's output projection; `mlp` (layers,): each MLP's output;
    `attention_bias` (layers,) or None: each output projection's bias; `embeddings`; `norm_bias` (the final
    LayerNorm's β, None for RMSNorm). `total` is their sum, equal to `logit`, the model's own logit (or
    difference) before any soft-cap, up to rounding; `capped` after the cap of cap · tanh(logit / cap) (`softcap`,
    Gemma 2; without one equal to `logit`). `tokens`: the input's tokens; `answer`: (id, display) pairs."""

    tokens: list[Token]
    position: int
    answer: list[tuple[int, str]]
    heads: np.ndarray
    mlp: np.ndarray
    attention_bias: np.ndarray | None
    embeddings: float
    norm_bias: float | None
    total: float
    logit: float
    capped: float
    softcap: float | None
    norm: str
    scale: float
    model: str
    text: str | None = None

    def _arrays(self) -> dict[str, np.ndarray]:
        out = {"heads": self.heads, "mlp": self.mlp}
        if self.attention_bias is not None:
            out["attention_bias"] = self.attention_bias
        return out

    def _meta(self) -> dict[str, Any]:
        return {"kind": "logit_attribution", "model": self.model, "text": self.text, "tokens": displays(self.tokens),
                "position": self.position, "answer": [list(a) for a in self.answer], "embeddings": self.embeddings,
                "norm_bias": self.norm_bias, "total": self.total, "logit": self.logit, "capped": self.capped,
                "softcap": self.softcap, "norm": self.norm, "scale": self.scale}
