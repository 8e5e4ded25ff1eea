"""REST API v1: an RNN, a convolution stack and self-attention side by side (the CS231n notes, section 3.2)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Response

from model.analysis import work
from model.lab.sequence import MAX_LENGTH, reach, reach_flops

from .. import serialize
from ..deps import ClientLeft, Hub, SettingsDep
from ..schemas.common import BODY_TOO_LARGE, INVALID_FIELD, NOT_UTF8, openapi_examples
from ..schemas.sequence import ReachRequest, ReachResponse

router = APIRouter(
    prefix="/api/v1",
    tags=["mechanisms"],
    responses={400: NOT_UTF8, 413: BODY_TOO_LARGE, 422: INVALID_FIELD},
)

ReachInput = Annotated[ReachRequest, Body(openapi_examples=openapi_examples(ReachRequest))]


@router.post(
    "/sequence/reach",
    response_model=ReachResponse,
    summary="How far back the last position sees: a GRU, a causal convolution stack and self-attention",
    description=(
        "The same random input sequence (N = `length` positions of width `d`, seeded) through three random layers "
        "of width d, torch's default initialisation seeded with `seed`: a GRU (torch.nn.GRU), a stack of `layers` "
        "causal 1-D convolutions of kernel `kernel` (left-padded, dilation 2^l in layer l when `dilated`, tanh "
        "between layers) and one head of causal self-attention. `rnn`, `conv` and `attention` give, for each input "
        "position j, the Frobenius norm of the Jacobian ‖∂y_{N−1} / ∂x_j‖ of the last output (torch autograd; the "
        "GRU's by the chain rule over its steps, each step's Jacobians by torch.func.jacrev, their product in "
        "float64, so that its norms far back, 10^-100 and less, do not read 0 as in float32). "
        "`receptive_field` is the stack's after each layer; `rnn_path`, `conv_path` and `attention_path` the "
        "dependency path length from each j to N − 1; `sequential` the sequential operations of one layer over "
        "the whole sequence. A field outside its limits is answered 422 naming it. The work grows like d·(N·d² "
        "+ N²·d): the largest request (N 512, d 128) takes seconds, on the background lane."
    ),
)
def sequence_reach(req: ReachInput, hub: Hub, settings: SettingsDep, gone: ClientLeft) -> Response:
    flops = work.check_tokens(lambda n: reach_flops(n, req.d, req.kernel, req.dilated, req.layers), req.length,
                              settings.work_budget, f"the reach at width {req.d}", MAX_LENGTH, field="length",
                              unit="positions")
    result = hub.run(reach, req.length, req.d, req.kernel, req.dilated, req.layers, req.seed, gone=gone, flops=flops)
    arrays = {"rnn": serialize.tensors({"rnn": result.rnn})["rnn"],  # float64: it reaches far below float32's range
              "conv": serialize.float32_numbers(result.conv), "attention": serialize.float32_numbers(result.attention)}
    body = ReachResponse(
        length=result.length, d=result.d, kernel=result.kernel, dilated=result.dilated, layers=result.layers,
        seed=result.seed, receptive_field=result.receptive_field, rnn_path=result.rnn_path,
        conv_path=result.conv_path, attention_path=result.attention_path, sequential=result.sequential, **arrays,
    )
    return serialize.json_response(body)
