"""REST API v1, analysis of the real model: head aggregates, head metrics, norm-based contributions, the
logit lens.

Each route runs a forward of its own on the model worker (hub.run), with only the steps it needs
traced, and computes its analysis there (model/analysis.py); the JSON caps are checked before.

No `from __future__ import annotations`: FastAPI reads the dependencies' annotations at run time (as in
app/deps.py).
"""

from typing import Annotated, Any

import numpy as np
import orjson
import torch
from fastapi import APIRouter, Body, Depends, Response

from model import analysis, lens
from model.decoder import Decoder
from model.pretrained import PretrainedEncoder
from model.tokenizer import Encoded
from model.trace import Trace

from ..deps import ClientLeft, Hub, Resolved, SettingsDep, resolve, resolved
from ..errors import refuse_over_cap
from ..hub import ModelHub
from ..schemas import INVALID_FIELD, NOT_UTF8, TOO_LARGE, UNKNOWN_MODEL, openapi_examples
from ..schemas.analysis import (
    AggregateRequest,
    AggregateResponse,
    ContributionsRequest,
    ContributionsResponse,
    LensRequest,
    LensResponse,
    MetricsRequest,
    MetricsResponse,
)
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


def _json(fields: dict[str, Any]) -> Response:
    """Fields with float32 arrays as JSON, the arrays written by orjson from their buffers (float32's
    shortest round-trip decimals, as the /attention answer; NaN and ±inf would print as null)."""
    return Response(orjson.dumps(fields, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


def _array(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.numpy())


def _common(r: Resolved[Any]) -> dict[str, Any]:
    return {"model": r.spec.id, "tokens": [t.model_dump() for t in r.tokens]}


# ---- /aggregate ----

def _aggregate(model: PretrainedEncoder, encoded: Encoded, kind: str, residual: float) -> torch.Tensor:
    maps = model.attention_maps(encoded).per_layer
    return analysis.rollout(maps, residual) if kind == "rollout" else analysis.mean_over_heads(maps)


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
    maps = hub.run(_aggregate, r.model, r.encoded, r.req.kind, r.req.residual, gone=gone)
    return _json({**_common(r), "kind": r.req.kind, "residual": r.req.residual if r.req.kind == "rollout" else None,
                  "layers": list(range(cfg.n_layers)), "maps": _array(maps)})


# ---- /metrics ----

def _metrics(model: PretrainedEncoder, encoded: Encoded) -> dict[str, torch.Tensor]:
    return analysis.head_metrics(model.attention_maps(encoded).per_layer, analysis.token_kinds(encoded.tokens))


def _rule(label: str, metric: str, value: float) -> str:
    if metric == "entropy":
        return (f"{label}: mean row entropy ≥ {analysis.BROAD_FRACTION:g} · ln N = {value:.4g} nats "
                "(a uniform row has ln N)")
    return f"{label}: {metric} ≥ {value:g} (at least that share of each row's attention, on average)"


@router.post(
    "/metrics",
    response_model=MetricsResponse,
    summary="Per head: entropy, distance, shares of attention to kinds of token, and labels",
    description=(
        "Runs the model on `text` (and `text_pair`) and measures every head of every layer ([layer][head]): "
        + "; ".join(f"`{name}` {doc}" for name, doc in analysis.METRIC_DOCS.items())
        + ". `labels` names the heads' types from stated thresholds (`thresholds`, in the style of Clark et "
        "al. 2019): `broad` (entropy ≥ 0.8·ln N), `previous`, `next`, `cls`, `sep`, `self` (that share ≥ 0.5)."
        + TEXT_RULES
    ),
)
def metrics(r: MetricsInput, hub: Hub, gone: ClientLeft) -> Response:
    cfg, n = r.model.cfg, len(r.encoded)
    values = hub.run(_metrics, r.model, r.encoded, gone=gone)
    thresholds = {label: {"metric": metric, "at_least": value, "rule": _rule(label, metric, value)}
                  for label, (metric, value) in analysis.label_thresholds(n).items()}
    body = {**_common(r), "n_layers": cfg.n_layers, "n_heads": cfg.n_heads,
            "metrics": {name: _array(v) for name, v in values.items()},
            "definitions": dict(analysis.METRIC_DOCS), "labels": analysis.head_labels(values, n),
            "thresholds": thresholds, "source": analysis.LABEL_SOURCE}
    return _json(body)


# ---- /contributions ----

def _contributions(model: PretrainedEncoder, encoded: Encoded, layers: list[int],
                   heads: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    trace = Trace(layers=layers, steps=("split", "softmax"))
    model.run(encoded, trace)
    per_head, sums = [], []
    for layer in layers:
        split = trace[layer]["split"]
        assert isinstance(split, dict)
        w_o = model.encoder.block(layer).attention.output.weight.detach().T  # (H·Dv, D): x W_o
        ph, total = analysis.contributions(trace.tensor(layer, "softmax")[0], split["v"][0], w_o, heads)
        per_head.append(ph)
        sums.append(total)
    return torch.stack(per_head), torch.stack(sums)


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
    per_head, sums = hub.run(_contributions, r.model, r.encoded, r.layers, r.heads, gone=gone)
    return _json({**_common(r), "layers": r.layers, "heads": r.heads, "contributions": _array(per_head),
                  "layer_sum": _array(sums)})


# ---- /lens ----

def _lens_models(hub: ModelHub) -> list[str]:
    """The ids of the models with an LM head, in the model list's order."""
    return [mid for mid, model in hub.loaded.items() if model.lm_head]


async def _lens_input(req: Annotated[LensRequest, Body(openapi_examples=openapi_examples(LensRequest))],
                      hub: Hub) -> Resolved[LensRequest]:
    """The model first (null: the first with an LM head; one without: 422 no_lm_head), then as every route."""
    with_head = _lens_models(hub)
    if req.model is None and with_head:
        req = req.model_copy(update={"model": with_head[0]})
    spec, model = hub.get(req.model)
    if not model.lm_head or not isinstance(model.encoder, Decoder):
        raise lens.NoLMHead(spec.id, with_head)
    return resolve(hub, req)


LensInput = Annotated[Resolved[LensRequest], Depends(_lens_input)]


def _lens(model: PretrainedEncoder, encoded: Encoded, position: int, top_k: int) -> list[lens.LensLayer]:
    assert isinstance(model.encoder, Decoder)  # _lens_input admits models with an LM head: decoders
    return lens.logit_lens(model.encoder, encoded.ids, position, top_k)


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
def logit_lens(r: LensInput, hub: Hub, gone: ClientLeft) -> Response:
    position = lens.checked_position(r.req.position, len(r.encoded))
    layers = hub.run(_lens, r.model, r.encoded, position, r.req.top_k, gone=gone)
    answer = []
    for layer in layers:
        ids, probabilities, logits = _array(layer.ids), _array(layer.probabilities), _array(layer.logits)
        predictions = []
        for token_id, probability, logit in zip(ids, probabilities, logits, strict=True):
            token, display = r.model.tokenizer.token_text(int(token_id))
            predictions.append({"id": token_id, "token": token, "display": display, "probability": probability,
                                "logit": logit})
        answer.append({"layer": layer.layer, "predictions": predictions})
    return _json({**_common(r), "position": position, "top_k": r.req.top_k, "layers": answer})
