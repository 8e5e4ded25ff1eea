"""The only place where tensors become JSON."""

from __future__ import annotations

import torch
from fastapi import Response
from pydantic import BaseModel

from model.tokenizer import Token

from .schemas import TokenInfo


def tokens(items: list[Token]) -> list[TokenInfo]:
    return [TokenInfo(text=t.text, start=t.start, end=t.end, special=t.special, segment=t.segment) for t in items]


def matrix(t: torch.Tensor) -> list:
    """Any tensor as nested lists of Python numbers, in its own axis order; -inf becomes None (JSON null)."""
    if torch.isneginf(t).any():
        return _nulls(t.tolist())
    return t.tolist()


def _nulls(rows: list) -> list:
    return [_nulls(x) if isinstance(x, list) else (None if x == float("-inf") else x) for x in rows]


def steps(record: dict) -> dict:
    """A traced layer (step -> tensor or dict of tensors) as JSON-ready lists."""
    return {
        step: {k: matrix(v) for k, v in value.items()} if isinstance(value, dict) else matrix(value)
        for step, value in record.items()
    }


def json_response(body: BaseModel) -> Response:
    """Serialize a response model with pydantic's JSON encoder (no second validation pass)."""
    return Response(body.model_dump_json(), media_type="application/json")
