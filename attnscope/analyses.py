"""attnscope.Model's analyses of the maps: head metrics, the repeated-sequence detectors, the mean and rollout
maps, norm-based contributions, and what a what-if edit changes. Each checks its arguments as its REST route
does (attnscope/core.py) and calls the same model/analysis function the route calls; only the answer's form
differs (attnscope/results.py, numpy arrays)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from app.schemas.analysis import AggregateRequest, ContributionsRequest, EditEffectRequest, MetricsRequest
from model.analysis import circuits, edit_effect, study
from model.nets.edit import Edit

from .checks import FieldError, FieldTypeError, edit_fields
from .core import Core
from .results import Aggregate, Contributions, Detectors, HeadMetrics, Threshold
from .results_causal import EditEffect, NextTokenChange, ProbSparseChoice

EditLike = Mapping[str, object] | Edit  # the REST `edit`'s fields, or model.nets.edit.Edit


class MapAnalyses(Core):
    """The analyses of attention maps (the module's docstring); mixed into attnscope.Model."""

    def metrics(self, text: str, pair: str | None = None) -> HeadMetrics:
        """Every head's metrics on one input (POST /api/v1/metrics): entropy, distance and the shares of attention
        to kinds of token, each float32 (layers, heads), with the labels they reach (HeadMetrics). Raises as
        `encode` does."""
        p = self._prepare(MetricsRequest, text=text, text_pair=pair)
        found = study.head_metrics(self._model, p.encoded)
        return HeadMetrics(
            text=p.req.text, pair=p.req.text_pair, tokens=list(p.encoded.tokens), ids=list(p.encoded.ids),
            metrics={name: values.numpy().astype(np.float32, copy=False) for name, values in found.metrics.items()},
            labels=found.labels, thresholds={k: Threshold(t.metric, t.at_least, t.rule)
                                             for k, t in found.thresholds.items()},
            definitions=found.definitions, source=found.source, model=self.info.id)

    def detect(self, seed: int = circuits.REPEAT_SEED) -> Detectors:
        """The previous-token and induction scores of every head, float32 (layers, heads), on a repeated random
        sequence R R drawn with `seed` (the `repeated` of POST /api/v1/metrics, whose seed is 0): which heads
        behave like induction heads. Not about a text: R is drawn from the vocabulary. FieldError for a seed that is
        not a whole number of at least 0."""
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise FieldTypeError(("seed",), "int_type", "Input should be a valid integer",
                                 "seed: Input should be a valid integer")
        if seed < 0:
            raise FieldError(("seed",), "greater_than_equal", "Input should be greater than or equal to 0",
                             "seed: Input should be greater than or equal to 0")
        found = study.repeated(self._model, int(seed))
        decode = self._model.tokenizer.token_text
        return Detectors(
            ids=list(found.ids), tokens=[decode(i)[1] for i in found.ids], start=found.start, half=found.half,
            seed=found.seed, previous_token=found.scores["previous_token"].numpy().astype(np.float32, copy=False),
            induction=found.scores["induction"].numpy().astype(np.float32, copy=False),
            definitions=dict(circuits.SCORE_DOCS), model=self.info.id)

    def _aggregate(self, text: str, pair: str | None, kind: str, residual: float | None) -> Aggregate:
        p = self._prepare(AggregateRequest, text=text, text_pair=pair, kind=kind, residual=residual)
        maps = study.aggregate(self._model, p.encoded, p.req.kind, p.req.residual)  # (L, T, T)
        return Aggregate(text=p.req.text, pair=p.req.text_pair, tokens=list(p.encoded.tokens),
                         ids=list(p.encoded.ids), kind=p.req.kind,
                         residual=p.req.residual if p.req.kind == "rollout" else None,
                         maps=maps.numpy().astype(np.float32, copy=False), model=self.info.id)

    def mean(self, text: str, pair: str | None = None) -> Aggregate:
        """Per layer the mean over its heads of the attention weights: `maps` float32 (layers, T, T) (POST
        /api/v1/aggregate with kind "mean"). Raises as `encode` does."""
        return self._aggregate(text, pair, "mean", None)

    def rollout(self, text: str, pair: str | None = None, residual: float = 0.5) -> Aggregate:
        """Attention rollout (Abnar & Zuidema 2020) up to each layer: `maps` float32 (layers, T, T), maps[l] = R_l,
        how much each input token reaches token i's representation after layer l, with `residual` (0 to 1) the
        share of the identity for the residual connection (POST /api/v1/aggregate with kind "rollout"). Raises
        FieldError for a residual outside 0..1, and as `encode` does."""
        return self._aggregate(text, pair, "rollout", residual)

    def contributions(self, text: str, pair: str | None = None, layers: Sequence[int] | None = None,
                      heads: Sequence[int] | None = None) -> Contributions:
        """Norm-based contributions ||a_ij f_h(x_j)|| (Kobayashi et al. 2020) of the chosen layers and heads (None:
        all), float32 (len(layers), len(heads), T, T), and each layer's `layer_sum` over every head (POST
        /api/v1/contributions). Raises FieldError for repeated or non-int indices, IndexOutOfRange for an index the
        model has not, and as `encode` does."""
        p = self._prepare(ContributionsRequest, text=text, text_pair=pair, layers=layers, heads=heads)
        found = study.contributions(self._model, p.encoded, p.layers, p.heads)
        return Contributions(text=p.req.text, pair=p.req.text_pair, tokens=list(p.encoded.tokens),
                             ids=list(p.encoded.ids), layers=p.layers, heads=p.heads,
                             contributions=found.per_head.numpy().astype(np.float32, copy=False),
                             layer_sum=found.layer_sum.numpy().astype(np.float32, copy=False), model=self.info.id)

    def edit_effect(self, text: str, edit: EditLike, pair: str | None = None) -> EditEffect:
        """What a what-if `edit` changes (POST /api/v1/edit/effect): every later layer's maps, the final hidden
        state, and for a model with an LM head the next token (EditEffect). `edit`: the REST edit's fields as a
        dict ({"layer": 2, "heads": [5], "temperature": 3}, {"layer": 1, "kind": "probsparse", "factor": 1}, ...)
        or a model.nets.edit.Edit. Raises FieldError for an edit the REST refuses (its words), IndexOutOfRange or
        EditError for one that does not fit the model or the input, and as `encode` does."""
        p = self._prepare(EditEffectRequest, text=text, text_pair=pair, edit=edit_fields(edit))
        assert p.edit is not None
        found = edit_effect.edit_effect(self._model, p.encoded, p.edit)
        decode = self._model.tokenizer.token_text
        nt = found.next_token
        choice = found.probsparse
        return EditEffect(
            text=p.req.text, pair=p.req.text_pair, tokens=list(p.encoded.tokens), ids=list(p.encoded.ids),
            edit=p.req.edit.model_dump(), layers=found.layers,
            row_change_mean=found.row_change_mean.numpy().astype(np.float32, copy=False),
            row_change_max=found.row_change_max.numpy().astype(np.float32, copy=False),
            hidden_by_token=found.hidden_by_token.numpy().astype(np.float32, copy=False),
            hidden_relative=found.hidden_relative,
            next_token=None if nt is None else NextTokenChange(
                kl=nt.kl, before=nt.before, before_display=decode(nt.before)[1],
                before_probability=nt.before_probability, after=nt.after, after_display=decode(nt.after)[1],
                after_probability=nt.after_probability, before_probability_after=nt.before_probability_after),
            probsparse=None if choice is None else ProbSparseChoice(
                factor=p.req.edit.factor, seed=p.req.edit.seed, heads=list(choice.heads),
                measure=choice.measure.numpy().astype(np.float32, copy=False),
                active=choice.active.numpy().astype(np.int64, copy=False),
                lazy="sum" if self._model.cfg.causal else "mean"),
            model=self.info.id)
