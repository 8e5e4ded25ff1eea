"""Request and event models of POST /api/v1/generate (generation with the KV cache)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from model.analysis.generate import MAX_NEW_TOKENS, TOP

from .common import TextRequest, TokenInfo, examples

MAX_SEED = 2**31 - 1


class GenerateRequest(TextRequest):
    model_config = ConfigDict(json_schema_extra=examples(
        {"text": "The cat sat on the", "max_new_tokens": 8},
        {"text": "Attention is", "max_new_tokens": 20, "temperature": 0.8, "top_k": 40, "top_p": 0.95, "seed": 7},
    ))

    model: str | None = Field(
        None, description="A model id from GET /api/v1/models whose `lm_head` is true; null: the first such "
        "model this server has.")
    max_new_tokens: int = Field(20, ge=1, le=MAX_NEW_TOKENS, description=(
        f"How many tokens to add, 1 to {MAX_NEW_TOKENS}, and at most the model's limit minus the input's tokens "
        "(422 `generate_too_long` otherwise). Fewer when the model writes its end token."))
    temperature: float = Field(0.0, ge=0.0, le=100.0, allow_inf_nan=False, description=(
        "0: greedy (the most probable token each time). Above 0: the logits are divided by it and the token is "
        "sampled."))
    top_k: int = Field(0, ge=0, le=1_000_000, description="Sampling only: keep the k most probable tokens; 0: all.")
    top_p: float = Field(1.0, gt=0.0, le=1.0, allow_inf_nan=False, description=(
        "Sampling only: keep the most probable tokens whose probabilities first reach top_p together; 1: all."))
    seed: int = Field(0, ge=0, le=MAX_SEED,
                      description="Sampling only: the same settings and seed give the same tokens.")
    attention: bool = Field(True, description="Send each new token's attention row in every layer and head.")


class PromptEvent(BaseModel):
    tokens: list[TokenInfo] = Field(description="The input's tokens.")
    n_layers: int
    n_heads: int
    n_kv_heads: int = Field(description="Key-value heads: fewer than n_heads under grouped-query attention.")
    d_head: int
    dtype: Literal["float32", "bfloat16"] = Field(description="What the model computes in, and the cache holds: "
                                                  "4 bytes a number (float32) or 2 (bfloat16).")
    limit: int = Field(description="The model's limit of tokens (input and new together).")


class NewTokenInfo(BaseModel):
    id: int = Field(description="The vocabulary id.")
    text: str = Field(description="The tokenizer's own token string, e.g. Ġworld.")
    display: str = Field(description=(
        "The characters this token completes: a byte-level or byte-fallback token holding only the first bytes "
        "of a character shows nothing, and the token with its last byte shows the character."))


class Alternative(BaseModel):
    id: int
    display: str = Field(description="The tokenizer's decoding of this one id (U+FFFD for part of a character).")
    probability: float


class TokenEvent(BaseModel):
    index: int = Field(description="The token's position in the whole sequence (the input's tokens are 0…).")
    token: NewTokenInfo
    probability: float = Field(description=(
        "The model's probability of this token: softmax of its logits, before any temperature, top-k or top-p."))
    top: list[Alternative] = Field(description=f"The model's {TOP} most probable tokens at this step, most first.")
    attention: list[list[list[float]]] | None = Field(description=(
        "[layer][head][key]: this token's attention weights on every token up to itself (index + 1 keys: its "
        "query against every cached key and its own); null when `attention` was false."))
    cache_bytes: int = Field(description=(
        "The KV cache with this token in it: 2 · layers · tokens · n_kv_heads · d_head · 4 bytes (float32)."))


class DoneEvent(BaseModel):
    text: str = Field(description="The new tokens' displays joined: the continuation.")
    tokens: int = Field(description="How many tokens were added.")
    stopped: str = Field(description="`length`: max_new_tokens reached; `end`: the model wrote its end token.")
    tokens_per_second: float = Field(description="New tokens per second, the input's forward included.")


class ErrorEvent(BaseModel):
    detail: str = Field(description="Why generation stopped after the stream started; the stream ends after it.")
