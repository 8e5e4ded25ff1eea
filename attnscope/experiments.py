"""attnscope.Model's analyses of outputs: the logit lens, activation patching and gradient attribution. Each checks
its arguments as its REST route does (attnscope/core.py, attnscope/checks.py) and calls the same model/analysis
function the route calls (attnscope/results_causal.py holds the answers). The Python API has no work budget and no
JSON cap: those are the server's; patching keeps its own bound on a grid's size (model/analysis/patching.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import torch

from app.schemas.analysis import LensRequest
from app.schemas.attribution import AttributionRequest, ContinuationRequest, GivenContinuation
from app.schemas.patching import PatchRequest
from model.analysis import attribution, baselines, continuation, lens, patching, study
from model.analysis.lens import NoLMHead

from .checks import validated
from .core import Core
from .results_causal import Attribution, Completeness, ContinuationAttribution, Lens, Patching

DECODER_HINT = "load a decoder such as GPT-2 or a Llama-family checkpoint"


class OutputAnalyses(Core):
    """The analyses of outputs (the module's docstring); mixed into attnscope.Model."""

    def _need_lm_head(self, need: str) -> None:
        if not self._model.lm_head:
            raise NoLMHead(self.info.id, [], need, DECODER_HINT)

    def lens(self, text: str, position: int | None = None, top_k: int = lens.DEFAULT_TOP_K) -> Lens:
        """The logit lens (POST /api/v1/lens): at `position` (None: the last token), after the embeddings and after
        each block, the `top_k` (1 to 20) most probable next tokens, read as the model reads its last layer. Only
        for a model with an LM head: NoLMHead otherwise; PositionOutOfRange (an IndexOutOfRange) for a position at or
        beyond the input's tokens; FieldError for what the REST refuses (top_k outside 1..20, a negative position),
        and the errors of `encode`."""
        req = validated(LensRequest, text=text, position=position, top_k=top_k)
        self._need_lm_head("the logit lens")
        encoded = self._tokens(req.text, None)
        at = lens.checked_position(req.position, len(encoded))
        layers = study.logit_lens(self._model, encoded, at, req.top_k)
        return Lens(
            text=req.text, tokens=list(encoded.tokens), ids=list(encoded.ids), position=at, top_k=req.top_k,
            layers=[layer.layer for layer in layers],
            top_ids=np.array([[p.id for p in layer.predictions] for layer in layers], dtype=np.int64),
            probabilities=np.array([[p.probability for p in layer.predictions] for layer in layers], dtype=np.float32),
            logits=np.array([[p.logit for p in layer.predictions] for layer in layers], dtype=np.float32),
            top_tokens=[[p.token for p in layer.predictions] for layer in layers],
            top_displays=[[p.display for p in layer.predictions] for layer in layers], model=self.info.id)

    def patch(self, clean: str, corrupted: str, target: str = "heads",
              answer: Sequence[int | str] | None = None,
              metric: Callable[[torch.Tensor], float] | None = None) -> Patching:
        """Activation patching (POST /api/v1/patch): run `corrupted` (the same token count as `clean`) once per cell
        with one activation copied from the run on `clean`. `target` "heads": each head's output (its weighted sum
        before W_o) at every position, a (layers, heads) grid; "residual": the residual stream entering each layer
        at one position, a (layers, tokens) grid; "head_position": one head's output at one position, a (layers,
        heads, tokens) grid; "pattern": one head's attention weights (the rest recomputed), (layers, heads); "mlp":
        one layer's MLP output at one position, (layers, tokens). The metric: for a model with an LM head
        logit[good] − logit[bad] at the last position, `answer` [good, bad] (token ids, or texts of one token
        each: GPT-2's " Paris"); for any other the cosine similarity of the mean-pooled last hidden state to the
        clean text's (answer None);
        or `metric`, a callable of one's own given one run's final logits (T, V) float32 torch tensor (a model
        with an LM head) or last hidden state (T, D) (any other) and returning a float (then no `answer`).
        Where the two texts' metrics barely differ the grid is not normalised (`normalised` False, `grid` None).
        Raises PatchError (`token_counts_differ`, `answer_missing`, `answer_not_allowed`, `answer_out_of_range`,
        `answer_not_single_token`, `answer_same`, `metric_unchanged` for identical metrics, `patch_too_large`),
        FieldError for what the REST refuses (a blank text, a target it does not know, an answer not of two items),
        TooManyTokens."""
        req = validated(PatchRequest, clean=clean, corrupted=corrupted, target=target, answer=answer)
        tokenizer = self._model.tokenizer
        clean_tokens, corrupted_tokens = tokenizer.encode(req.clean), tokenizer.encode(req.corrupted)
        found = patching.patch(self._model, clean_tokens, corrupted_tokens, req.target, req.answer, metric=metric)
        return Patching(
            clean=req.clean, corrupted=req.corrupted, clean_tokens=list(clean_tokens.tokens),
            corrupted_tokens=list(corrupted_tokens.tokens), target=req.target, axes=list(found.axes),
            columns=found.axes[1], normalised=found.normalised, metric_name=found.metric_name,
            metric_clean=float(found.clean), metric_corrupted=float(found.corrupted),
            answer=None if found.answer is None else [(i, tokenizer.token_text(i)[1]) for i in found.answer],
            patched=found.patched.numpy().astype(np.float32, copy=False),
            grid=None if found.grid is None else found.grid.numpy().astype(np.float32, copy=False), model=self.info.id)

    def attribute(self, text: str, target: int | str, method: str = "integrated_gradients",
                  steps: int = attribution.DEFAULT_STEPS,
                  baseline: str | Mapping[str, str] = baselines.DEFAULT) -> Attribution:
        """Attributions of one output f to each token (POST /api/v1/attribution): for a model with an LM head f is
        the next-token logit of the token id `target` at the last position, for any other the cosine similarity of
        the mean-pooled last hidden state to the text `target`'s. `method` "integrated_gradients" (from `baseline`:
        "mean", "pad", "mask", "zeros" or {"text": a text of as many tokens}; `steps` Gauss–Legendre nodes, 32 to
        512, with a completeness check) or "gradient_x_input". Beside them the last layer's attention, rollout and
        contributions and each one's Spearman ρ with |scores| (Attribution). Raises TargetError (`target_kind`,
        `target_out_of_range`), BaselineError (`baseline_unavailable`, `baseline_token_count`), FieldError for what
        the REST refuses (steps outside 32..512, a method or baseline it does not know, a blank text), and
        TooManyTokens."""
        req = validated(AttributionRequest, text=text, target=target, method=method, steps=steps, baseline=baseline)
        encoded = self._model.tokenizer.encode(req.text)
        if req.method == "integrated_gradients":
            attribution.checked_steps(req.steps)
        if isinstance(req.target, str):
            self._model.tokenizer.encode(req.target)  # TooManyTokens before any work, as the route
        baselines.check(self._model, encoded, req.baseline)
        found = attribution.attribute(self._model, encoded, req.target, req.method, req.steps, req.baseline)
        c = found.completeness
        return Attribution(
            text=req.text, tokens=list(encoded.tokens), ids=list(encoded.ids), target=req.target, method=found.method,
            steps=found.steps, output_name=found.output_name, output=found.output, baseline=found.baseline,
            baseline_token_id=found.baseline_token, baseline_token=found.baseline_text,
            baseline_text=found.baseline_source, baseline_output=found.baseline_output, rows=found.rows,
            scores=np.asarray(found.scores, dtype=np.float64),
            compared={k: np.asarray(v, dtype=np.float64) for k, v in found.compared.items()},
            agreement=dict(found.agreement),
            completeness=None if c is None else Completeness(c.sum, c.difference, c.relative_gap, c.ok, c.reason),
            warning=found.warning, model=self.info.id)

    def attribute_continuation(self, text: str, tokens: int | Sequence[int], steps: int = attribution.DEFAULT_STEPS,
                               baseline: str = "mean") -> ContinuationAttribution:
        """A continuation of `text` attributed token by token (POST /api/v1/attribution/continuation): `tokens` n
        (1 to 64) to generate greedily first, or the continuation's token ids. Row j: integrated gradients of
        continuation token j's log-probability over every earlier token (`baseline` "mean", "zeros", "pad" or
        "mask"; `steps` 32 to 512), each row with its own completeness check. Only for a model with an LM head:
        NoLMHead otherwise; ContinuationError (`continuation_too_long`, `continuation_out_of_range`),
        BaselineError, FieldError for what the REST refuses, TooManyTokens."""
        given = {"new_tokens": tokens} if isinstance(tokens, int) else {"ids": list(tokens)}
        req = validated(ContinuationRequest, text=text, continuation=given, steps=steps, baseline=baseline)
        self._need_lm_head("attributing a continuation")
        encoded = self._tokens(req.text, None)
        asked = req.continuation
        ids = asked.ids if isinstance(asked, GivenContinuation) else None
        new_tokens = None if isinstance(asked, GivenContinuation) else asked.new_tokens
        baselines.check(self._model, encoded, req.baseline)
        found = continuation.attribute_continuation(self._model, encoded, ids, new_tokens, req.steps, req.baseline)
        rows = found.rows
        return ContinuationAttribution(
            text=req.text, tokens=list(encoded.tokens), continuation=[(r.id, r.display) for r in rows],
            generated=found.generated, steps=found.steps, baseline=found.baseline,
            baseline_token_id=found.baseline_token, scores=found.matrix(),
            output=np.asarray([r.output for r in rows], dtype=np.float64),
            baseline_output=np.asarray([r.baseline_output for r in rows], dtype=np.float64),
            completeness=[Completeness(r.completeness.sum, r.completeness.difference, r.completeness.relative_gap,
                                       r.completeness.ok, r.completeness.reason) for r in rows],
            warnings=[r.warning for r in rows], model=self.info.id)
