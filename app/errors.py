"""The one place where errors become HTTP answers: domain errors of model/ and the server's own.

Every answer is `{"detail": "<one sentence>", "errors": [{"loc", "msg", "type", "ctx"?}, ...]}`; `loc`
is a path into the request starting with "body" (["body", "queries", "1", "2"]: row 1, column 2 of
the toy's queries), or with "query" for a GET's parameters (["query", "d_model"]), so clients mark
the field without parsing `detail`. `type` names the rule and
`ctx`, where the rule has numbers, holds them ({"values": 3, "keys": 4}), so a client can word the
problem in its own language. `msg` says what is wrong with that field; `detail` names the field too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from model.checkpoints.tokenizer import TooManyTokens
from model.errors import Ctx, InputError, UnknownModel


class AnswerTooLarge(Exception):
    """A JSON answer would hold more numbers than the server's cap (ATTNSCOPE_MAX_JSON_VALUES)."""

    type = "answer_too_large"

    def __init__(self, values: int, cap: int, what: str, advice: str) -> None:
        self.message = f"The answer would hold {values} numbers ({what}), over the JSON cap of {cap}; {advice}"
        super().__init__(self.message)


class UnknownJob(LookupError):
    """A training job id this server never gave out (`evicted` False) or no longer keeps (True).

    `part` says where the id was sent: "path" (the job's URL) or "body" (a lab's /predict); `train` is where the
    route's lab starts one (a job of another lab is unknown to it).
    """

    def __init__(self, job: str, part: str, train: str, evicted: bool = False, kept: int = 0) -> None:
        self.type = "job_evicted" if evicted else "unknown_job"
        self.part = part
        if evicted:
            self.message = (f"Job {job} is no longer kept (the server keeps its {kept} latest finished jobs); "
                            f"train again with POST {train}")
        else:
            self.message = f"Unknown job {job}; start one with POST {train} and use the id it answers"
        super().__init__(self.message)


class JobsBusy(Exception):
    """As many training jobs run as the server allows; `retry_after` is the estimated wait in whole seconds."""

    type = "jobs_busy"
    status = 429  # this client may cancel one of its jobs

    def __init__(self, running: int, retry_after: int) -> None:
        self.ctx: Ctx = {"running": running, "retry_after": retry_after}
        self.running = running
        self.retry_after = retry_after
        self.message = (f"{running} training jobs are running, the most this server runs at once; retry in about "
                        f"{retry_after} s (the Retry-After header) or cancel one with DELETE on its train/<job> URL")
        super().__init__(self.message)


class AnalysesBusy(Exception):
    """As many long analyses wait for the model's background lane as the server queues; `retry_after` is the
    estimated wait in whole seconds (the lane's recent job times, one per analysis ahead)."""

    type = "analyses_busy"
    status = 503  # the server's queue is full, whoever filled it

    def __init__(self, waiting: int, retry_after: int) -> None:
        self.ctx: Ctx = {"waiting": waiting, "retry_after": retry_after}
        self.waiting = waiting
        self.retry_after = retry_after
        self.message = (f"{waiting} long analyses (patching, attribution) already wait for the model, the most this "
                        f"server queues; retry in about {retry_after} s (the Retry-After header)")
        super().__init__(self.message)


class ClientGone(Exception):
    """The client disconnected before its queued model work started; the work was dropped."""


def refuse_over_cap(values: int, cap: int, what: str, advice: str) -> None:
    if values > cap:
        raise AnswerTooLarge(values, cap, what, advice)


def _sentence(text: str) -> str:
    return text if text.endswith(".") else f"{text}."


def _item(loc: Sequence[Any], msg: str, type_: str, ctx: Ctx | None) -> dict[str, Any]:
    item: dict[str, Any] = {"loc": [str(p) for p in loc], "msg": msg, "type": type_}
    if ctx is not None:
        item["ctx"] = ctx
    return item


def _answer(status: int, detail: str, loc: Sequence[str], msg: str, type_: str,
            ctx: Ctx | None = None, part: str = "body") -> JSONResponse:
    item = _item([part, *loc], msg, type_, ctx)
    return JSONResponse({"detail": _sentence(detail), "errors": [item]}, status_code=status)


def _part(request: Request) -> str:
    """Where a request's fields are: the query string of a GET (e.g. /positions), else the body."""
    return "query" if request.method == "GET" else "body"


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) if parts else "request body"


def validation_message(err: Any) -> str:
    """What is wrong with the field, without naming it (its loc does; `detail` adds the name)."""
    if err.get("type") == "json_invalid":
        return "the request body is not valid JSON; send a JSON object"
    if err.get("type") == "extra_forbidden":
        return "unknown field; remove it"
    if err.get("type") == "missing":
        return "field required"
    if err.get("type") in ("model_attributes_type", "dict_type") and tuple(err.get("loc", ())) == ("body",):
        # a body sent without Content-Type: application/json (or not UTF-8) reaches validation as bytes
        return "the request body is not a JSON object; send one, encoded in UTF-8, with Content-Type: application/json"
    return str(err.get("msg", "invalid value")).removeprefix("Value error, ")


def validation_messages(errs: Sequence[Any]) -> tuple[list[str], str]:
    """pydantic's errors as a 422 answer words them: each one's message (validation_message) and the `detail`
    naming the fields of the first three ("layers: has duplicates; list each index once"). The Python API words
    its refusals with it too (attnscope/checks.py)."""
    messages = [validation_message(e) for e in errs]
    named = [m if e.get("type") == "json_invalid" else f"{_where(tuple(e.get('loc', ())))}: {m}"
             for e, m in zip(errs, messages, strict=True)]
    return messages, "; ".join(named[:3]) + (f" (and {len(named) - 3} more)" if len(named) > 3 else "")


def _json_safe(value: object) -> bool:
    if isinstance(value, str):
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in value)  # a lone surrogate cannot be encoded
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _validation_ctx(err: Any) -> Ctx | None:
    """pydantic's ctx ({"max_length": 64, ...}) when every value is a number or a string, else none
    (value_error holds the exception itself)."""
    ctx = err.get("ctx")
    if not isinstance(ctx, Mapping) or not ctx or not all(_json_safe(v) for v in ctx.values()):
        return None
    return {str(k): v for k, v in ctx.items()}


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 listing what is wrong, never echoing the input (it may hold NaN or lone surrogates)."""
    assert isinstance(exc, RequestValidationError)
    errs = exc.errors()
    messages, detail = validation_messages(errs)
    body = {
        "detail": detail,
        "errors": [
            _item(e.get("loc", ()), m, str(e.get("type", "")), _validation_ctx(e))
            for e, m in zip(errs, messages, strict=True)
        ],
    }
    return JSONResponse(body, status_code=422)


async def input_error(request: Request, exc: Exception) -> JSONResponse:
    """A model's rule the request broke (toy shapes, index ranges, pairs): 422 naming the field."""
    assert isinstance(exc, InputError)
    return _answer(422, exc.message, exc.loc, exc.message, exc.type, exc.ctx, _part(request))


async def unknown_model(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UnknownModel)
    return _answer(404, exc.message, ("model",), exc.message, exc.type, part=_part(request))


async def too_many_tokens(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TooManyTokens)
    message = f"The input has {exc.count} tokens but the model takes at most {exc.limit}; shorten the text"
    return _answer(413, message, ("text",), message, "too_many_tokens", {"count": exc.count, "limit": exc.limit})


async def answer_too_large(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AnswerTooLarge)
    # the whole request: layers x heads x tokens, or a table's size
    return _answer(413, exc.message, (), exc.message, exc.type, part=_part(request))


async def unknown_job(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UnknownJob)
    return _answer(404, exc.message, ("job",), exc.message, exc.type, part=exc.part)


async def busy(request: Request, exc: Exception) -> JSONResponse:
    """JobsBusy (429) and AnalysesBusy (503): what is full, and a Retry-After header with the estimated wait."""
    assert isinstance(exc, JobsBusy | AnalysesBusy)
    answer = _answer(exc.status, exc.message, (), exc.message, exc.type, exc.ctx)
    answer.headers["Retry-After"] = str(exc.retry_after)
    return answer


async def client_gone(request: Request, exc: Exception) -> Response:
    return Response(status_code=499)  # nobody is listening; nginx's code for "client closed request"


# Starlette's own errors: status -> (the part of the request at fault, the error's type)
HTTP_ERRORS = {400: ("body", "body_unreadable"), 404: ("path", "not_found"), 405: ("method", "method_not_allowed")}


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown path, wrong method, unreadable body) in the same format, `errors` included."""
    assert isinstance(exc, HTTPException)
    detail = str(exc.detail)
    if exc.status_code == 400 and "parsing the body" in detail:
        detail = "The request body could not be read; send a JSON object encoded in UTF-8"
    part, type_ = HTTP_ERRORS.get(exc.status_code, ("request", "http_error"))
    answer = {"detail": _sentence(detail), "errors": [_item([part], detail, type_, None)]}
    return JSONResponse(answer, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ClientGone, client_gone)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(InputError, input_error)
    app.add_exception_handler(UnknownModel, unknown_model)
    app.add_exception_handler(TooManyTokens, too_many_tokens)
    app.add_exception_handler(AnswerTooLarge, answer_too_large)
    app.add_exception_handler(UnknownJob, unknown_job)
    app.add_exception_handler(JobsBusy, busy)
    app.add_exception_handler(AnalysesBusy, busy)
