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
    """Any tensor as nested lists of Python numbers, in its own axis order."""
    return t.tolist()


def json_response(body: BaseModel) -> Response:
    """Serialize a response model with pydantic's JSON encoder (no second validation pass)."""
    return Response(body.model_dump_json(), media_type="application/json")
