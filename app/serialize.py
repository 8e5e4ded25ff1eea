"""The only place where tensors become JSON or bytes.

The compact `u16` answer is one binary body (all integers little-endian):

    bytes 0-3   b"ATN1"
    bytes 4-7   uint32 H, the length of the header
    next H      UTF-8 JSON header, padded with spaces so the data starts at a multiple of 8;
                it holds every field of the JSON answer except the matrices, plus
                "shape" (layer, head, query, key), "dtype": "uint16" and "scale": 65535
    the rest    uint16 values in row-major (layer, head, query, key) order;
                weight = value / 65535 (absolute error at most 1/131070 = 7.7e-6)

The JSON answer of maps (`maps_json_response`) writes the weights with orjson straight from the
float32 arrays: each number is float32's shortest round-trip decimal (0.1f prints 0.1, not
0.10000000149011612), so parsing it and rounding to float32 gives back the exact weight; NaN and
+-inf print as null.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import torch
from fastapi import Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from model import iris
from model.positions import PositionTable
from model.tokenizer import Token

from .schemas import TokenInfo
from .schemas.iris import (
    CancelledEvent,
    DoneEvent,
    EpochEvent,
    IrisDataResponse,
    IrisTrace,
    PredictResponse,
)


def tokens(items: list[Token]) -> list[TokenInfo]:
    return [
        TokenInfo(text=t.text, display=t.display, unknown=t.unknown, start=t.start, end=t.end, special=t.special,
                  segment=t.segment)
        for t in items
    ]


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


def tensors(named: dict) -> dict:
    """Named tensors (any shapes) as JSON-ready lists; None stays None."""
    return {name: None if t is None else matrix(t) for name, t in named.items()}


def position_table(table: PositionTable) -> dict[str, list | None]:
    """A positional encoding's tensors as JSON-ready lists, None for those its kind lacks."""
    return tensors({"matrix": table.matrix, "angles": table.angles, "bias": table.bias, "slopes": table.slopes})


def maps_json_response(response: type[BaseModel], fields: dict[str, Any], blocks: list[torch.Tensor]) -> Response:
    """A maps answer (a response model whose last field is `attention`) as JSON, the maps straight from numpy.

    Every field but `attention` is serialised by the response model itself (same keys, same order, same
    forms); `attention`, the per-layer (heads, query, key) tensors as one (layer, head, query, key)
    array, is written by orjson from the float32 buffers: no Python float per weight, no pydantic pass
    over 10^6 numbers. Numbers as in the module docstring. The body streams one layer at a time, so the
    first layers travel while the next ones are written.
    """
    head = orjson.dumps(response.model_construct(**fields, attention=[]).model_dump(mode="json"))
    if not head.endswith(b',"attention":[]}'):
        raise TypeError(f"{response.__name__}: `attention` must be its last field")

    def body() -> Iterator[bytes]:
        yield head[: -len(b"]}")]
        for i, block in enumerate(blocks):  # orjson wants C-contiguous arrays
            layer = orjson.dumps(np.ascontiguousarray(block.numpy()), option=orjson.OPT_SERIALIZE_NUMPY)
            yield b"," + layer if i else layer
        yield b"]}"

    return StreamingResponse(body(), media_type="application/json")


MAGIC = b"ATN1"
U16_SCALE = 65535
U16_MEDIA_TYPE = "application/octet-stream"


def u16_response(header: dict, blocks: list[torch.Tensor]) -> Response:
    """Weights in [0, 1] as uint16 fixed point after a JSON header (layout in the module docstring)."""
    shape = [len(blocks), *blocks[0].shape]
    head = json.dumps({**header, "shape": shape, "dtype": "uint16", "scale": U16_SCALE}, ensure_ascii=False,
                      separators=(",", ":")).encode()
    head += b" " * (-(8 + len(head)) % 8)
    start = 8 + len(head)
    out = bytearray(start + 2 * sum(b.numel() for b in blocks))
    struct.pack_into("<4sI", out, 0, MAGIC, len(head))
    out[8:start] = head
    values = np.frombuffer(out, dtype="<u2", offset=start)
    pos = 0
    for block in blocks:  # one layer at a time: no float copy of the whole stack
        scaled = np.multiply(block.numpy().reshape(-1), np.float32(U16_SCALE), dtype=np.float32)
        np.rint(scaled, out=scaled)
        values[pos : pos + scaled.size] = scaled
        pos += scaled.size
    return Response(memoryview(out), media_type=U16_MEDIA_TYPE)


def json_response(body: BaseModel) -> Response:
    """Serialize a response model with pydantic's JSON encoder (no second validation pass)."""
    return Response(body.model_dump_json(), media_type="application/json")


def iris_event(report: iris.Report) -> tuple[str, str]:
    """A training report as an event: (its name, its JSON data)."""
    data: BaseModel
    if isinstance(report, iris.EpochReport):
        data = EpochEvent(epoch=report.epoch, epochs=report.epochs, loss=report.loss,
                          train_accuracy=report.train_accuracy, test_accuracy=report.test_accuracy,
                          attention=matrix(report.attention), seconds=report.seconds)
        return "epoch", data.model_dump_json()
    if isinstance(report, iris.DoneReport):
        data = DoneEvent(epochs=report.epochs, train_accuracy=report.train_accuracy,
                         test_accuracy=report.test_accuracy, confusion=report.confusion.tolist(),
                         seconds=report.seconds)
        return "done", data.model_dump_json()
    return "cancelled", CancelledEvent(epoch=report.epoch).model_dump_json()


def iris_data(data: iris.IrisData) -> IrisDataResponse:
    return IrisDataResponse(features=list(iris.FEATURES), classes=list(iris.CLASSES), rows=matrix(data.rows),
                            labels=data.labels.tolist(), train=data.train.tolist(), test=data.test.tolist(),
                            mean=data.mean.tolist(), std=data.std.tolist())


def iris_prediction(prediction: iris.Prediction) -> PredictResponse:
    trace = prediction.trace
    parameters = {name: steps(trace[name]) for name in ("weights", "biases")}
    body = IrisTrace(**{**trace, **parameters, "steps": steps(trace["steps"])})
    return PredictResponse(classes=list(iris.CLASSES), probabilities=prediction.probabilities.tolist(),
                           predicted=iris.CLASSES[prediction.predicted], epoch=prediction.epoch, trace=body)
