"""REST API v1, analysis of the real model: head aggregates, head metrics, norm-based contributions, the
logit lens, direct logit attribution, what an edit changes.

Each route runs a forward of its own on the model worker (hub.run), with only the steps it needs
traced, and computes its analysis there (model/analysis/study.py); the JSON caps are checked before.

No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time (as in
app/deps.py).
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Response

from model.analysis import edit_effect, heads, lens, logit_attribution, study, work

from .. import serialize
from ..deps import ClientLeft, Hub, Resolved, SettingsDep, resolved, resolved_with_lm_head
from ..errors import refuse_over_cap
from ..schemas.analysis import (
    AggregateRequest,
    AggregateResponse,
    ContributionsRequest,
    ContributionsResponse,
    EditEffectRequest,
    EditEffectResponse,
    LensRequest,
    LensResponse,
    LogitAnswer,
    LogitAttributionRequest,
    LogitAttributionResponse,
    MetricsRequest,
    MetricsResponse,
    NextTokenChange,
    ProbSparseActive,
    TokenChoice,
)
from ..schemas.common import INVALID_FIELD, NOT_UTF8, TOO_LARGE, UNKNOWN_MODEL
from .api import MODEL_RULES

router = APIRouter(
    prefix="/api/v1",
    tags=["analysis"],
    responses={
        400: NOT_UTF8,
        404: UNKNOWN_MODEL,
        413: TOO_LARGE,
        422: INVALID_FIELD,
    },
)

# MODEL_RULES for a route without index fields (it answers for every layer and head)
TEXT_RULES = MODEL_RULES.split("; {indices}")[0] + "."


AggregateInput = Annotated[Resolved[AggregateRequest], Depends(resolved(AggregateRequest))]
MetricsInput = Annotated[Resolved[MetricsRequest], Depends(resolved(MetricsRequest))]
ContributionsInput = Annotated[Resolved[ContributionsRequest], Depends(resolved(ContributionsRequest))]
EditEffectInput = Annotated[Resolved[EditEffectRequest], Depends(resolved(EditEffectRequest))]


# ---- /aggregate ----

@router.post(
    "/aggregate",
    response_model=AggregateResponse,
    summary="Per layer the mean over heads, or attention rollout",
    description=(
        "Runs the model on `text` (and `text_pair`) and returns one N x N map per layer, axis order (layer, "
        "query, key). `mean`: the mean over the layer's heads of the attention weights. `rollout` (Abnar & "
        "Zuidema 2020, \"Quantifying Attention Flow in Transformers\"): Â_l = residual·I + (1 − residual)·"
        "mean_h A_l with each row divided by its own sum, R_0 = Â_0, R_l = Â_l·R_(l−1); `maps[l]` is R_l, "
        "how much each input token reaches token i's representation after layer l. The answer holds "
        "L x N x N numbers; over the JSON cap (ATTNSCOPE_MAX_JSON_VALUES, default 2,500,000): 413, checked "
        "before the model runs." + TEXT_RULES
    ),
)
def aggregate(r: AggregateInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    cfg, n = r.model.cfg, len(r.encoded)
    refuse_over_cap(cfg.n_layers * n * n, settings.max_json_values, f"{cfg.n_layers} layers x {n}x{n}",
                    "send a shorter text")
    flops = work.check_tokens(lambda t: work.attention(cfg, t, r.req.kind), n, settings.work_budget,
                              f"the {r.req.kind} aggregate", cfg.max_positions)
    maps = hub.run(study.aggregate, r.model, r.encoded, r.req.kind, r.req.residual, gone=gone, flops=flops)
    return serialize.aggregate(r, maps, r.req.kind, r.req.residual)


# ---- /metrics ----

@router.post(
    "/metrics",
    response_model=MetricsResponse,
    summary="Per head: entropy, distance, shares of attention to kinds of token, and labels",
    description=(
        "Runs the model on `text` (and `text_pair`) and measures every head of every layer ([layer][head]): "
        + "; ".join(f"`{name}` {doc}" for name, doc in heads.METRIC_DOCS.items())
        + ". `labels` names the heads' types from stated thresholds (`thresholds`, in the style of Clark et "
        "al. 2019): `broad` (entropy ≥ 0.8·ln N), `previous`, `next`, `cls`, `sep`, `self` (that share ≥ 0.5)."
        + TEXT_RULES
    ),
)
def metrics(r: MetricsInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    cfg = r.model.cfg
    flops = work.check_tokens(lambda t: work.metrics(cfg, t), len(r.encoded), settings.work_budget,
                              "the head metrics", cfg.max_positions)
    return serialize.head_metrics(r, hub.run(study.head_metrics, r.model, r.encoded, gone=gone, flops=flops))


# ---- /contributions ----

@router.post(
    "/contributions",
    response_model=ContributionsResponse,
    summary="Norm-based contributions ||a_ij f_h(x_j)|| (Kobayashi et al. 2020)",
    description=(
        "Runs the model on `text` (and `text_pair`) and returns, per chosen layer and head, ||a_ij f_h(x_j)|| "
        "with f_h(x) = (x W_v^h + b_v^h) W_o^h (Kobayashi, Kuribayashi, Yokoi and Inui 2020, \"Attention is "
        "Not Only a Weight: Analyzing Transformers with Vector Norms\"): the size of what key j adds to "
        "query i's output through head h, not only its weight. `layer_sum` is per layer ||Σ_h a_hij "
        "f_h(x_j)|| over every head of the layer. Axis order (layer, head, query, key). The answer holds "
        "layers x (heads + 1) x N x N numbers; over the JSON cap: 413, checked before the model runs."
        + MODEL_RULES.format(indices="every layer index below the model's `n_layers`, every head index below "
                             "its `n_heads`")
    ),
)
def contributions(r: ContributionsInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    n = len(r.encoded)
    refuse_over_cap(len(r.layers) * (len(r.heads) + 1) * n * n, settings.max_json_values,
                    f"{len(r.layers)} layers x ({len(r.heads)} heads + the layer sum) x {n}x{n}",
                    "ask for fewer layers or heads")
    cfg = r.model.cfg
    flops = work.check_tokens(lambda t: work.contributions(cfg, t, len(r.layers)), n, settings.work_budget,
                              f"the contributions of {len(r.layers)} layers", cfg.max_positions)
    found = hub.run(study.contributions, r.model, r.encoded, r.layers, r.heads, gone=gone, flops=flops)
    return serialize.contributions(r, found)


# ---- /lens ----

LensInput = Annotated[Resolved[LensRequest], Depends(resolved_with_lm_head(LensRequest, "the logit lens"))]


@router.post(
    "/lens",
    response_model=LensResponse,
    summary="The logit lens: each layer's top next-token predictions at one position (models with an LM head)",
    description=(
        "Runs a model with an LM head (GPT-2: `lm_head` in GET /api/v1/models) on `text` and reads the residual "
        "stream at `position` (default: the last token) after the embeddings and after each block, as the model "
        "reads its last one (nostalgebraist 2020, \"interpreting GPT: the logit lens\"): the final LayerNorm, "
        "the tied word embeddings, a softmax over the vocabulary; per layer the `top_k` most probable next "
        "tokens with their probability and logit. The last layer's are the model's own next-token prediction. "
        "A model without an LM head (an encoder such as minilm): 422 `no_lm_head`, naming the models that have "
        "one; `position` at or beyond the input's token count: 422 `index_out_of_range` (`loc` [\"body\", "
        "\"position\"], ctx {position, tokens})." + TEXT_RULES
    ),
)
def logit_lens(r: LensInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    position = lens.checked_position(r.req.position, len(r.encoded))
    cfg = r.model.cfg
    flops = work.check_tokens(lambda t: work.lens(cfg, t), len(r.encoded), settings.work_budget, "the logit lens",
                              cfg.max_positions)
    layers = hub.run(study.logit_lens, r.model, r.encoded, position, r.req.top_k, gone=gone, flops=flops)
    return serialize.logit_lens(r, position, r.req.top_k, layers)


# ---- /logit-attribution ----

LogitAttributionInput = Annotated[Resolved[LogitAttributionRequest], Depends(
    resolved_with_lm_head(LogitAttributionRequest, "direct logit attribution"))]
ANSWER_RULES = "; ".join(f"`{kind}`: {what}" for kind, (_, what) in logit_attribution.ANSWER_RULES.items()
                         if kind == "answer_out_of_range")  # the others the schema states (1 or 2 distinct ids)


@router.post(
    "/logit-attribution",
    response_model=LogitAttributionResponse,
    summary="Direct logit attribution: each head's, each MLP's and the embeddings' share of one logit",
    description=(
        "Runs a model with an LM head (GPT-2, the Llama family: `lm_head` in GET /api/v1/models) on `text` and "
        "splits the residual stream the final norm reads at `position` (default: the last token) into its parts: "
        "the embeddings, each head's z_h · W_O[h] (its share of the output projection; grouped-query heads each "
        "with their own), each output projection's bias, each MLP's output. Each part goes through the final norm "
        "with the norm's scale frozen at its value on the whole stream (LayerNorm: the part's own mean subtracted, "
        "divided by the stream's √(var + ε), times γ, β counted apart as `norm_bias`; RMSNorm: divided by the "
        "stream's √(mean(x²) + ε), times γ) and is dotted with the answer's unembedding row: `answer` [id] "
        "attributes that token's logit, [good, bad] the logit difference. The parts add up to `total`, the "
        "model's own `logit` up to rounding. Gemma 2: the norm after each sublayer is frozen the same way, and "
        "the logit attributed is the one before the final soft-cap (`capped` after it). These are direct effects: "
        "what later layers make of a head's output is counted where it lands, not at the head. A model without "
        "an LM head (an encoder such as minilm): 422 `no_lm_head`, naming the models that have one; `position` "
        "at or beyond the input's token count: 422 `index_out_of_range` (`loc` [\"body\", \"position\"]); "
        + ANSWER_RULES + " (422, `loc` [\"body\", \"answer\", i], ctx {id, vocab_size})." + TEXT_RULES
    ),
)
def logit_attributions(r: LogitAttributionInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    position = lens.checked_position(r.req.position, len(r.encoded))
    cfg, tokenizer = r.model.cfg, r.model.tokenizer
    logit_attribution.checked_answer(r.req.answer, cfg.vocab_size)  # before any work is queued
    # one forward, as /lens's; the per-head products at one position are smaller than its L + 1 rows of the head
    flops = work.check_tokens(lambda t: work.lens(cfg, t), len(r.encoded), settings.work_budget,
                              "direct logit attribution", cfg.max_positions)
    found = hub.run(logit_attribution.logit_attribution, r.model.decoder, r.encoded.ids, position, r.req.answer,
                    gone=gone, flops=flops)
    bias = found.attention_bias
    body = LogitAttributionResponse(
        model=r.spec.id, tokens=r.tokens, position=position,
        answer=[LogitAnswer(id=i, token=tokenizer.token_text(i)[0], display=tokenizer.token_text(i)[1])
                for i in found.answer],
        heads=serialize.float32_numbers(found.heads.float()), mlp=serialize.float32_numbers(found.mlp.float()),
        attention_bias=None if bias is None else serialize.float32_numbers(bias.float()),
        embeddings=serialize.short_float(found.embeddings),
        norm_bias=None if found.norm_bias is None else serialize.short_float(found.norm_bias),
        total=serialize.short_float(found.total), logit=serialize.short_float(found.logit),
        capped=serialize.short_float(found.capped), softcap=found.softcap, norm=found.norm,
        scale=serialize.short_float(found.scale))
    return serialize.json_response(body)


# ---- /edit/effect ----

@router.post(
    "/edit/effect",
    response_model=EditEffectResponse,
    summary="What a what-if edit changes: every later layer's maps, the final hidden state, the next token",
    description=(
        "Runs the model on `text` without and with `edit` (the `edit` of /attention, with its rules) and compares: "
        "for the edited layer and every later one, each head's change of its weights per query row, "
        "½ Σ_j |a'_ij − a_ij| (its mean and its largest); the final hidden state's change per token and over the "
        "whole input, relative to its norm; for a model with an LM head, the next-token distribution at the last "
        "position (KL(p ‖ p') in nats, the most probable token before and after). A ProbSparse edit (`kind` "
        "`probsparse`) also answers what it chose in each edited head: every query's sparsity measure M and the "
        "active queries. Two forwards' work." + MODEL_RULES.format(
            indices="`edit.layer` below the model's `n_layers`, `edit.heads` below its `n_heads`")
    ),
)
def effect(r: EditEffectInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    cfg, edit = r.model.cfg, r.edit
    assert edit is not None  # EditEffectRequest requires one
    flops = work.check_tokens(lambda t: 2 * work.attention(cfg, t), len(r.encoded), settings.work_budget,
                              "the edited and the unedited forward", cfg.max_positions)
    found = hub.run(edit_effect.edit_effect, r.model, r.encoded, edit, gone=gone, flops=flops)

    def prediction(token_id: int, probability: float) -> TokenChoice:
        token, display = r.model.tokenizer.token_text(token_id)
        return TokenChoice(id=token_id, token=token, display=display, probability=probability)

    nt = found.next_token
    choice = found.probsparse
    answer = EditEffectResponse(
        model=r.spec.id, tokens=r.tokens, edit=r.req.edit, layers=found.layers,
        row_change_mean=found.row_change_mean.tolist(), row_change_max=found.row_change_max.tolist(),
        hidden_by_token=found.hidden_by_token.tolist(), hidden_relative=found.hidden_relative,
        next_token=None if nt is None else NextTokenChange(
            kl=nt.kl, before=prediction(nt.before, nt.before_probability),
            after=prediction(nt.after, nt.after_probability), before_probability_after=nt.before_probability_after),
        probsparse=None if choice is None else ProbSparseActive(
            factor=r.req.edit.factor, seed=r.req.edit.seed, heads=choice.heads, measure=choice.measure.tolist(),
            active=choice.active.tolist(), lazy="sum" if cfg.causal else "mean"))
    return Response(answer.model_dump_json(), media_type="application/json")
