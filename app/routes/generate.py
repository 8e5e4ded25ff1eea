"""REST API v1: generation with the KV cache, streamed as server-sent events.

The input's forward runs before the answer starts (so a refusal is a plain 4xx), then each new token is its
own job on the model worker (hub.run), so other requests are answered between tokens; when the client
leaves, the stream is cancelled and no further token is computed.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Response
from sse_starlette import EventSourceResponse, ServerSentEvent

from model.analysis import work
from model.analysis.generate import TOP, Generation, Sampling

from ..deps import Hub, Resolved, SettingsDep, resolved_with_lm_head
from ..schemas.common import INVALID_FIELD, NOT_UTF8, TOO_LARGE, UNKNOWN_MODEL
from ..schemas.generate import DoneEvent, ErrorEvent, GenerateRequest, PromptEvent
from ..serialize import token_event, tokens
from .analysis import TEXT_RULES

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1", tags=["generate"],
                   responses={400: NOT_UTF8, 404: UNKNOWN_MODEL, 413: TOO_LARGE, 422: INVALID_FIELD})

GenerateInput = Annotated[Resolved[GenerateRequest], Depends(resolved_with_lm_head(GenerateRequest, "generation"))]

EVENTS_DOC = (
    "Server-sent events: first `prompt` {tokens, n_layers, n_heads, n_kv_heads, d_head, dtype, limit}; then one "
    "`token` per new token {index, token: {id, text, display}, probability, top: [{id, display, probability}] (the "
    f"{TOP} most probable), attention: [layer][head][index + 1] (the new token's query against every cached key "
    "and its own), cache_bytes}; last `done` {text, tokens, stopped, tokens_per_second}, or `error` {detail} when a "
    "token could not be made after the stream started."
)


@router.post(
    "/generate",
    response_class=EventSourceResponse,
    summary="Continue a text with a decoder, token by token, with each new token's attention (KV cache)",
    description=(
        "Runs a model with an LM head (`lm_head` in GET /api/v1/models) on `text`, then adds up to "
        "`max_new_tokens` tokens one at a time: greedy (temperature 0, the default: the same tokens as "
        "transformers' generate without sampling) or sampled after temperature, top-k and top-p with `seed`. "
        "Each new token runs alone through the network with the keys and values of every earlier token kept in "
        "the KV cache. Generation ends early at the model's end token (its eos_token_id). " + EVENTS_DOC + " The "
        "stream stops when the client leaves. Refusals come before the stream, as JSON: a model without an LM "
        "head 422 `no_lm_head`; input tokens + max_new_tokens over the model's limit 422 `generate_too_long` "
        "(ctx {tokens, max_new_tokens, limit}); the estimated work over the server's ATTNSCOPE_WORK_BUDGET 422 "
        "`work_too_large` (ctx {gflop, budget_gflop, largest}: `loc` [\"body\", \"max_new_tokens\"] with the most "
        "new tokens after this prompt, else [\"body\", \"text\"])." + TEXT_RULES
    ),
    responses={200: {"content": {"text/event-stream": {}}, "description": EVENTS_DOC}},
)
async def generate(r: GenerateInput, hub: Hub, settings: SettingsDep) -> Response:
    req, cfg = r.req, r.model.cfg
    if len(r.encoded) + req.max_new_tokens <= cfg.max_positions:  # else Generation says generate_too_long
        work.check_generate(cfg, len(r.encoded), req.max_new_tokens, settings.work_budget)
    sampling = Sampling(req.temperature, req.top_k, req.top_p, req.seed)
    prefill = partial(hub.run, flops=work.forward(cfg, len(r.encoded)))  # a long prompt: the background lane
    run = await anyio.to_thread.run_sync(prefill, Generation, r.model, r.encoded.ids, req.max_new_tokens, sampling,
                                         req.attention)
    prompt = PromptEvent(tokens=tokens(r.encoded.tokens), n_layers=cfg.n_layers, n_heads=cfg.n_heads,
                         n_kv_heads=cfg.kv_heads, d_head=cfg.d_head, dtype=r.model.dtype_name,
                         limit=cfg.max_positions)

    async def stream() -> AsyncIterator[ServerSentEvent]:
        yield ServerSentEvent(data=prompt.model_dump_json(), event="prompt")
        while not run.finished:
            try:
                token = await anyio.to_thread.run_sync(hub.run, run.step)
            except Exception as exc:  # after the answer started: said in the stream, which then ends
                logger.exception("generation failed after %d tokens", len(run.tokens))
                yield ServerSentEvent(data=ErrorEvent(detail=f"generation stopped: {exc}").model_dump_json(),
                                      event="error")
                return
            yield ServerSentEvent(data=token_event(run, token), event="token")
        done = DoneEvent(text=run.text, tokens=len(run.tokens),
                         stopped="end" if run.tokens[-1].id in run.model.stop_ids else "length",
                         tokens_per_second=round(run.tokens_per_second, 2))
        yield ServerSentEvent(data=done.model_dump_json(), event="done")

    return EventSourceResponse(stream(), ping=15)
