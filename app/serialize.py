"""The only place where tensors become JSON or bytes.

The compact `u16` answer is one binary body (all integers little-endian):

    bytes 0-3   b"ATN1"
    bytes 4-7   uint32 H, the length of the header
    next H      UTF-8 JSON header, padded with spaces so the data starts at a multiple of 8;
                it holds every field of the JSON answer except the matrices, plus
                "shape" (layer, head, query, key), "dtype": "uint16" and "scale": 65535
    the rest    uint16 values in row-major (layer, head, query, key) order;
                weight = value / 65535 (absolute error at most 1/131070 = 7.7e-6)

The compact `f32` trace (/trace?encoding=f32) has the same frame: magic, header length, the JSON header
(every field of the JSON answer except `steps`, plus "dtype": "float32" and "arrays", one {"step", "key",
"shape"} per array in body order: the JSON answer's steps in order, a step's q, k, v in order; "key" is null
for a step that is one array; a model with RoPE adds the JSON answer's `rotated` q and k as step "rotated"
right after "split"), then each array's little-endian float32 values in row-major order, one
after the other. They are the very float32 numbers the JSON answer writes (exact, not rounded); a hidden
entry (JSON null, the mask step) is -inf.

The JSON answer of maps (`maps_json_response`) writes the weights with orjson straight from the
float32 arrays: each number is float32's shortest round-trip decimal (0.1f prints 0.1, not
0.10000000149011612), so parsing it and rounding to float32 gives back the exact weight; NaN and
+-inf print as null.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import anyio
import numpy as np
import orjson
import torch
from fastapi import Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from model.analysis import circuits, study
from model.analysis.generate import Generation, NewToken
from model.checkpoints.loaded import BlockParts
from model.checkpoints.tokenizer import Token
from model.lab import iris
from model.maps import U16_SCALE
from model.nets.config import RopeScaling
from model.nets.positions import PositionTable

from .jobs.threads import light_thread
from .schemas.analysis import (
    AggregateResponse,
    ContributionsResponse,
    LensPrediction,
    LensResponse,
    MetricsResponse,
    RepeatedScores,
    Threshold,
)
from .schemas.analysis import (
    LensLayer as LensLayerInfo,
)
from .schemas.common import TokenInfo
from .schemas.generate import Alternative, NewTokenInfo, TokenEvent
from .schemas.iris import (
    CancelledEvent,
    DoneEvent,
    EpochEvent,
    IrisDataResponse,
    IrisTrace,
    PredictResponse,
)
from .schemas.toy import FlashResponse, ToyBackwardResponse, ToyResponse


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


def block_caption_key(name: str, order: str, gated: bool) -> str:
    """The UI dictionary key of a block step's caption (TraceBlock.steps): norm_1/2 and add_1/2 mean another
    thing before and after the sublayers, mlp_hidden and mlp_act another in a gated MLP."""
    if name in ("norm_1", "norm_2", "add_1", "add_2"):
        return f"steps.block.{name}.{order}"
    if gated and name in ("mlp_hidden", "mlp_act"):
        return f"steps.block.{name}.gated"
    return f"steps.block.{name}"


def block(parts: BlockParts, arrays: dict[str, torch.Tensor], with_arrays: bool = True) -> dict[str, Any]:
    """A traced block (BlockParts, its BLOCK_STEPS arrays in the order computed, then `mlp_alone`) as TraceBlock's
    fields; without `with_arrays` (the f32 answer's header, whose arrays travel as bytes) no `arrays`."""
    answer = {
        "order": parts.order, "norm": parts.norm, "eps": parts.eps, "activation": parts.activation,
        "gated": parts.gated, "d_ff": parts.d_ff,
        "steps": [{"name": name, "caption_key": block_caption_key(name, parts.order, parts.gated),
                   "shape": list(t.shape)} for name, t in arrays.items() if name != "mlp_alone"],
        "params": {name: {"weight": w.tolist(), "bias": None if b is None else b.tolist()}
                   for name, (w, b) in parts.params.items()},
        "output_step": "add_2" if parts.order == "pre" else "norm_2",
    }
    return {**answer, "arrays": {name: matrix(t) for name, t in arrays.items()}} if with_arrays else answer


def rope(theta: float, scaling: RopeScaling | None, frequencies: torch.Tensor) -> dict[str, Any]:
    """A RoPE model's settings as the trace answers them (RopeInfo): base, scaling and the frequencies f_i."""
    scaled = None
    if scaling is not None:
        llama3 = scaling.kind == "llama3"
        scaled = {"kind": scaling.kind, "factor": scaling.factor,
                  "low_freq_factor": scaling.low_freq_factor if llama3 else None,
                  "high_freq_factor": scaling.high_freq_factor if llama3 else None,
                  "original_max_positions": scaling.original_max_positions if llama3 else None}
    return {"theta": theta, "scaling": scaled, "frequencies": frequencies.tolist()}


def tensors(named: dict) -> dict:
    """Named tensors (any shapes) as JSON-ready lists; None stays None."""
    return {name: None if t is None else matrix(t) for name, t in named.items()}


def position_table(table: PositionTable) -> dict[str, list | None]:
    """A positional encoding's tensors as JSON-ready lists, None for those its kind lacks."""
    return tensors({"matrix": table.matrix, "angles": table.angles, "bias": table.bias, "slopes": table.slopes})


def maps_json_response(response: type[BaseModel], fields: dict[str, Any],
                       blocks: AsyncIterable[torch.Tensor]) -> Response:
    """A maps answer (a response model whose last field is `attention`) as JSON, the maps straight from numpy.

    Every field but `attention` is validated and serialised by the response model itself (same keys, same
    order, same forms); `attention`, the per-layer (heads, query, key) float32 tensors as one (layer, head, query,
    key) array, is written by orjson from the float32 buffers: no Python float per weight, no pydantic
    pass over 10^6 numbers. Numbers as in the module docstring. The body streams one layer at a time,
    each written on a worker thread as soon as the forward has made it.
    """
    head = orjson.dumps(response.model_validate({**fields, "attention": []}).model_dump(mode="json"))
    if not head.endswith(b',"attention":[]}'):
        raise TypeError(f"{response.__name__}: `attention` must be its last field")

    async def body() -> AsyncIterator[bytes]:
        yield head[: -len(b"]}")]
        first = True
        async for block in blocks:
            layer = await anyio.to_thread.run_sync(_numbers_json, block)
            yield layer if first else b"," + layer
            first = False
        yield b"]}"

    return StreamingResponse(body(), media_type="application/json")


def _numbers_json(block: torch.Tensor) -> bytes:
    light_thread()  # on an anyio thread
    if block.dtype != torch.float32:
        raise TypeError(f"JSON maps are float32 weights, not {block.dtype}")
    return orjson.dumps(np.ascontiguousarray(block.numpy()), option=orjson.OPT_SERIALIZE_NUMPY)


MAGIC = b"ATN1"
BINARY_MEDIA_TYPE = "application/octet-stream"


def u16_response(header: dict, shape: list[int], blocks: AsyncIterable[torch.Tensor]) -> Response:
    """uint16 maps (model/maps.py quantize_u16) after a JSON header (layout in the module docstring).

    The header goes out at once, before the forward has made any layer; then each (heads, rows, columns)
    block's bytes as they are, as soon as the block exists. The length is known in advance, so the answer
    has a Content-Length and a client can show its progress.
    """
    head = _frame_header({**header, "shape": shape, "dtype": "uint16", "scale": U16_SCALE})
    length = len(head) + 2 * math.prod(shape)

    async def body() -> AsyncIterator[bytes | memoryview]:
        yield head
        async for block in blocks:
            if block.dtype != torch.uint16:
                raise TypeError(f"compact maps are uint16, not {block.dtype}")
            yield block.contiguous().numpy().astype("<u2", copy=False).data.cast("B")

    return StreamingResponse(body(), media_type=BINARY_MEDIA_TYPE, headers={"content-length": str(length)})


def _frame_header(header: dict) -> bytes:
    """The first bytes of a compact answer: magic, header length, the JSON header padded with spaces so that
    the values after it start at a multiple of 8."""
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    head += b" " * (-(8 + len(head)) % 8)
    return struct.pack("<4sI", MAGIC, len(head)) + head


def f32_trace_response(header: dict, record: dict[str, Any]) -> Response:
    """A traced layer (step -> tensor or dict of tensors) as the compact `f32` answer (module docstring):
    the float32 tensors' bytes as they are, -inf included, after a header naming each array."""
    arrays = [(step, key, t) for step, value in record.items()
              for key, t in (value.items() if isinstance(value, dict) else [(None, value)])]
    for step, key, t in arrays:
        if t.dtype != torch.float32:
            raise TypeError(f"{step} {key or ''}: traced steps are float32, not {t.dtype}")
    head = _frame_header({**header, "dtype": "float32",
                          "arrays": [{"step": step, "key": key, "shape": list(t.shape)} for step, key, t in arrays]})
    values = [np.ascontiguousarray(t.numpy(), dtype="<f4").tobytes() for _, _, t in arrays]
    return Response(b"".join([head, *values]), media_type=BINARY_MEDIA_TYPE)


def json_response(body: BaseModel, leave_out: tuple[str, ...] = ()) -> Response:
    """Serialize a response model with pydantic's JSON encoder (no second validation pass), without the
    fields named in `leave_out` (fields a model of another kind does not have)."""
    return Response(body.model_dump_json(exclude=set(leave_out) or None), media_type="application/json")


def toy_answer(result: dict[str, Any]) -> ToyResponse:
    """POST /toy's answer from run_toy's."""
    tensors: dict[str, Any] = {name: steps(result[name]) if result[name] is not None else None
                               for name in ("weights", "additive")}
    tensors.update({name: None if result[name] is None else matrix(result[name]) for name in ("general_w", "delta")})
    soft = matrix(result["soft"]) if result["soft"] is not None else None
    sparse = steps(result["probsparse"]) if result["probsparse"] is not None else None
    return ToyResponse(**{**result, **tensors, "soft": soft, "probsparse": sparse, "steps": steps(result["steps"])})


def flash_answer(result: dict[str, Any]) -> FlashResponse:
    """POST /flash's answer from run_flash's (its tiles are dataclasses of tensors)."""
    def tiles(items: list[Any]) -> list[dict[str, Any]]:
        return [{name: matrix(value) if isinstance(value, torch.Tensor) else value
                 for name, value in vars(tile).items()} for tile in items]

    backward = result["backward"]
    if backward is not None:
        backward = {**tensors({k: backward[k] for k in ("upstream", "dq", "dk", "dv")}),
                    "tiles": tiles(backward["tiles"]), "reference": tensors(backward["reference"]),
                    "max_abs_diff": backward["max_abs_diff"]}
    arrays = tensors({k: result[k] for k in ("q", "k", "v", "output", "reference", "m", "l")})
    return FlashResponse(**{**result, **arrays, "tiles": tiles(result["tiles"]), "backward": backward})


def toy_backward_answer(result: dict[str, Any]) -> ToyBackwardResponse:
    """POST /toy/backward's answer from run_toy_backward's."""
    return ToyBackwardResponse(
        forward=toy_answer(result["forward"]), gradients=tensors(result["gradients"]), check=result["check"],
        flow=result["flow"], note=result["note"], upstream=matrix(result["upstream"]),
        upstream_default=result["upstream_default"],
    )


def arrays_json(response: type[BaseModel], fields: dict[str, Any], arrays: dict[str, torch.Tensor]) -> Response:
    """An analysis answer, as maps_json_response writes the maps: every field but the float32 `arrays` is
    validated and serialised by `response` (each array validated as an empty list of its type), and each
    array is written by orjson straight from its buffer (float32's shortest round-trip decimals)."""
    for name, t in arrays.items():
        if t.dtype != torch.float32:
            raise TypeError(f"{name}: analysis arrays are float32, not {t.dtype}")
    head = response.model_validate({**fields, **{name: [] for name in arrays}}).model_dump(mode="json")
    body = {**head, **{name: np.ascontiguousarray(t.numpy()) for name, t in arrays.items()}}
    return Response(orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json")


def aggregate(r: Any, maps: torch.Tensor, kind: str, residual: float) -> Response:
    """POST /aggregate's answer; `r` the resolved request (its spec and tokens)."""
    return arrays_json(AggregateResponse, {"model": r.spec.id, "tokens": r.tokens, "kind": kind,
                                           "residual": residual if kind == "rollout" else None,
                                           "layers": list(range(maps.shape[0]))}, {"maps": maps})


def short_float(x: float) -> float:
    """The Python float of a float32 number's shortest round-trip decimal (0.1f becomes 0.1, not
    0.10000000149011612): written to JSON it reads as orjson writes a float32 array."""
    return float(str(np.float32(x)))


def float32_numbers(t: torch.Tensor) -> list:
    """A float32 tensor as nested lists of short_float numbers. For small answers only (one Python float
    per number)."""
    if t.dtype != torch.float32:
        raise TypeError(f"float32_numbers takes float32, not {t.dtype}")

    def nested(values: Any) -> Any:
        return [nested(v) for v in values] if isinstance(values, list) else short_float(values)

    numbers: list = nested(t.tolist())
    return numbers


def head_metrics(r: Any, answer: study.HeadMetrics) -> Response:
    layers, heads = answer.metrics["entropy"].shape
    body = MetricsResponse(
        model=r.spec.id, tokens=r.tokens, n_layers=layers, n_heads=heads,
        metrics={name: float32_numbers(values) for name, values in answer.metrics.items()},
        definitions=answer.definitions, labels=answer.labels,
        thresholds={label: Threshold(metric=t.metric, at_least=t.at_least, rule=t.rule)
                    for label, t in answer.thresholds.items()},
        source=answer.source, repeated=RepeatedScores(
            ids=answer.repeated.ids, start=answer.repeated.start, half=answer.repeated.half, seed=answer.repeated.seed,
            previous_token=float32_numbers(answer.repeated.scores["previous_token"]),
            induction=float32_numbers(answer.repeated.scores["induction"]), definitions=dict(circuits.SCORE_DOCS)))
    return json_response(body)


def contributions(r: Any, answer: study.Contributions) -> Response:
    return arrays_json(ContributionsResponse, {"model": r.spec.id, "tokens": r.tokens, "layers": r.layers,
                                               "heads": r.heads},
                       {"contributions": answer.per_head, "layer_sum": answer.layer_sum})


def logit_lens(r: Any, position: int, top_k: int, layers: list[study.LensLayer]) -> Response:
    body = LensResponse(model=r.spec.id, tokens=r.tokens, position=position, top_k=top_k, layers=[
        LensLayerInfo(layer=layer.layer, predictions=[
            LensPrediction(id=p.id, token=p.token, display=p.display, probability=short_float(p.probability),
                           logit=short_float(p.logit))
            for p in layer.predictions])
        for layer in layers])
    return json_response(body)


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


def token_event(run: Generation, token: NewToken) -> str:
    """The event's JSON; the attention rows (layers × heads × keys float32 numbers) written by orjson from the
    array, each number in its shortest float32 form (a Python float per number took most of a token's time)."""
    decode = run.model.tokenizer.token_text
    event = TokenEvent(
        index=token.index, token=NewTokenInfo(id=token.id, text=token.text, display=token.display),
        probability=short_float(token.probability),
        top=[Alternative(id=i, display=decode(i)[1], probability=short_float(p))
             for i, p in zip(token.top_ids, token.top_probabilities, strict=True)],
        attention=None, cache_bytes=token.cache_bytes,
    ).model_dump()
    if token.attention is not None:
        event["attention"] = torch.stack(token.attention).numpy()  # (L, H, index + 1) float32
    return orjson.dumps(event, option=orjson.OPT_SERIALIZE_NUMPY).decode()
