"""REST API v1, the mechanisms of the notes on their own: positional encodings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from model.lab.cost import COST_RULES, MAX_EXACT, QUANTITIES, Served, cost, request_sizes
from model.nets.positions import (
    MAX_D_MODEL,
    MAX_HEADS,
    MAX_LENGTH,
    POSITION_RULES,
    learned_size,
    position_numbers,
    position_table,
)

from .. import serialize
from ..deps import Hub, SettingsDep
from ..errors import refuse_over_cap
from ..schemas.common import UNKNOWN_MODEL, documented_error, documented_rules
from ..schemas.lab import CostQuery, CostResponse, PositionKind, PositionsQuery, PositionsResponse

DEFAULT_D_MODEL = 64  # the width of a sinusoidal or RoPE table when the query names none



router = APIRouter(
    prefix="/api/v1",
    tags=["mechanisms"],
    responses={
        422: documented_error("A query parameter is invalid; `detail` says which and what to send instead, "
                              "`errors` gives its path (`loc`, e.g. [\"query\", \"d_model\"]) and the rule broken "
                              "(`type`)."),
    },
)


@router.get(
    "/positions",
    response_model=PositionsResponse,
    summary="A positional encoding's table: sinusoidal, RoPE, ALiBi or a model's learned one",
    description=(
        f"`length` N ≤ {MAX_LENGTH} positions. sinusoidal: `matrix` N x D. rope: `angles` N x D/2 (radians) and "
        "`matrix` N x D, the rotation RoPE gives the vector (1, 0, 1, 0, ...) at each position in the "
        "interleaved-pairs form (dimensions 2i and 2i+1 rotate together), i.e. cos and sin of each angle. "
        f"alibi: `bias` H x N x N and `slopes` H for `n_heads` H ≤ {MAX_HEADS}; `matrix` is null. learned: "
        "`matrix` N x D, the position-embedding rows the model adds to its tokens at positions 0..N-1: rows "
        "0..N-1 of its table, except for RoBERTa, whose first token takes row padding_idx + 1 (rows 0..padding_idx "
        "are never a real token's, and are left out), so N ≤ max_position_embeddings - padding_idx - 1. "
        f"D = `d_model` ≤ {MAX_D_MODEL}, default {DEFAULT_D_MODEL} (learned: the width of the model's table, which "
        "for ELECTRA is its embedding_size, not its hidden size). Rules between the "
        "parameters or on the model, which the schema cannot state, answered 422 with `errors[0].loc` naming the "
        "parameter, `errors[0].type` the rule and `errors[0].ctx` its numbers: "
        + documented_rules(POSITION_RULES)
        + ". `model`, when given, is an id of GET /api/v1/models, else 404 (`unknown_model`). An answer over the "
        "JSON cap (ATTNSCOPE_MAX_JSON_VALUES, e.g. alibi at 64 heads x 512 x 512) is refused before it is "
        "built: 413 (`answer_too_large`)."
    ),
    responses={
        404: UNKNOWN_MODEL,
        413: documented_error("The answer would be over the JSON cap."),
    },
)
def positions(query: Annotated[PositionsQuery, Query()], hub: Hub, settings: SettingsDep) -> Response:
    kind = query.kind.value
    spec, model = hub.get(query.model) if query.model is not None or kind == "learned" else (None, None)
    learned_width = learned_size(model.net)[1] if model is not None and kind == "learned" else DEFAULT_D_MODEL
    d_model = query.d_model or learned_width
    refuse_over_cap(position_numbers(kind, query.length, d_model, query.n_heads), settings.max_json_values,
                    f"{kind} at {query.length} positions", "ask for fewer positions, heads or dimensions")
    if model is not None and kind == "learned":
        table = hub.run(position_table, kind, query.length, d_model, query.n_heads, model.net)
    else:
        table = position_table(kind, query.length, d_model, query.n_heads)
    body = PositionsResponse(
        kind=PositionKind(table.kind), length=table.length, d_model=table.d_model, n_heads=table.n_heads,
        model=spec.id if spec is not None and kind == "learned" else None, **serialize.position_table(table),
    )
    return serialize.json_response(body)


@router.get(
    "/cost",
    response_model=CostResponse,
    summary="What one attention layer and the whole model cost: parameters, memory, FLOPs, FlashAttention, "
            "KV cache",
    description=(
        "For sizes E = `d_model`, H = `n_heads` (D = E/H), G = `n_kv_heads` (key-value heads, default H; "
        "G < H is grouped-query attention), L = `n_layers`, S = `seq_len`, B = `batch` and "
        "b = `bytes` per number, or for a served `model`'s E, H, G, L and head width D (S defaults to its "
        "max_tokens; a model whose D is not E/H, such as Qwen3, has H·D in place of E in the formulas): "
        "`per_layer` gives each quantity with its formula and the formula with the numbers filled in, "
        "`total` the same quantities times L, and `curve` one layer's attention-matrix bytes, FlashAttention "
        "working-set bytes and KV-cache bytes against S. Quantities: "
        + ", ".join(f"`{q}`" for q in QUANTITIES) + ". Every number "
        f"is an exact integer of at most 2^53 - 1 = {MAX_EXACT} (what a JSON client reading float64 keeps "
        "exact). Rules between the parameters, answered 422 with `errors[0].loc` naming the parameter, "
        "`errors[0].type` the rule and `errors[0].ctx` its numbers: "
        + documented_rules(COST_RULES)
        + ". `model`, when given, is an id of GET /api/v1/models, else 404 (`unknown_model`)."
    ),
    responses={404: UNKNOWN_MODEL},
)
def cost_of_attention(query: Annotated[CostQuery, Query()], hub: Hub) -> Response:
    served = None
    if query.model is not None:
        spec, model = hub.get(query.model)
        cfg = model.cfg
        served = Served(spec.id, cfg.d_model, cfg.n_heads, cfg.n_layers, model.tokenizer.max_tokens, cfg.kv_heads,
                        cfg.d_head)
    sizes = request_sizes(query.d_model, query.n_heads, query.n_layers, query.seq_len, query.batch,
                          query.bytes_per_number, query.bias, served, query.n_kv_heads)
    answer = cost(sizes)
    body = CostResponse.model_validate({
        "sizes": {"model": None if served is None else served.id, "d_model": sizes.d_model,
                  "n_heads": sizes.n_heads, "n_kv_heads": sizes.kv_heads, "d_head": sizes.d_head,
                  "n_layers": sizes.n_layers,
                  "seq_len": sizes.seq_len, "batch": sizes.batch, "bytes": sizes.bytes_per_number,
                  "bias": sizes.bias},
        "per_layer": {name: vars(q) for name, q in answer.per_layer.items()},
        "total": answer.total,
        "curve": vars(answer.curve),
        "max_exact": MAX_EXACT,
    })
    return serialize.json_response(body)
