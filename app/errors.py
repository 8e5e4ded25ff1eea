"""The one place where errors become HTTP answers: domain errors of model/ and the server's own.

Every answer is `{"detail": "<one sentence>", "errors": [{"loc", "msg", "type"}, ...]}`; `loc` is
a path into the request starting with "body" (["body", "queries", "1", "2"]: row 1, column 2 of
the toy's queries), so clients mark the field without parsing `detail`. `type` names the rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from model.errors import InputError, UnknownModel
from model.tokenizer import TooManyTokens


class AnswerTooLarge(Exception):
    """A JSON answer would hold more numbers than the server's cap (ATTNSCOPE_MAX_JSON_VALUES)."""

    type = "answer_too_large"

    def __init__(self, values: int, cap: int, what: str, advice: str) -> None:
        self.message = f"The answer would hold {values} numbers ({what}), over the JSON cap of {cap}; {advice}"
        super().__init__(self.message)


class ClientGone(Exception):
    """The client disconnected before its queued model work started; the work was dropped."""


def refuse_over_cap(values: int, cap: int, what: str, advice: str) -> None:
    if values > cap:
        raise AnswerTooLarge(values, cap, what, advice)


def _sentence(text: str) -> str:
    return text if text.endswith(".") else f"{text}."


def _answer(status: int, detail: str, loc: Sequence[str], msg: str, type_: str) -> JSONResponse:
    item = {"loc": ["body", *loc], "msg": msg, "type": type_}
    return JSONResponse({"detail": _sentence(detail), "errors": [item]}, status_code=status)


def _where(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) if parts else "request body"


def _validation_message(err: Any) -> str:
    if err.get("type") == "json_invalid":
        return "the request body is not valid JSON; send a JSON object"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown field; remove it"
    elif err.get("type") == "missing":
        msg = "field required"
    return f"{_where(tuple(err.get('loc', ())))}: {msg}"


async def validation_error(request: Request, exc: Exception) -> JSONResponse:
    """422 listing what is wrong, never echoing the input (it may hold NaN or lone surrogates)."""
    assert isinstance(exc, RequestValidationError)
    errs = exc.errors()
    messages = [_validation_message(e) for e in errs]
    body = {
        "detail": "; ".join(messages[:3]) + (f" (and {len(messages) - 3} more)" if len(messages) > 3 else ""),
        "errors": [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": m, "type": str(e.get("type", ""))}
            for e, m in zip(errs, messages, strict=True)
        ],
    }
    return JSONResponse(body, status_code=422)


async def input_error(request: Request, exc: Exception) -> JSONResponse:
    """A model's rule the request broke (toy shapes, index ranges, pairs): 422 naming the field."""
    assert isinstance(exc, InputError)
    return _answer(422, exc.message, exc.loc, exc.message, exc.type)


async def unknown_model(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, UnknownModel)
    return _answer(404, exc.message, ("model",), exc.message, exc.type)


async def too_many_tokens(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, TooManyTokens)
    message = f"The input has {exc.count} tokens but the model takes at most {exc.limit}; shorten the text"
    return _answer(413, message, ("text",), message, "too_many_tokens")


async def answer_too_large(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, AnswerTooLarge)
    return _answer(413, exc.message, (), exc.message, exc.type)  # the whole request: layers x heads x tokens


async def client_gone(request: Request, exc: Exception) -> Response:
    return Response(status_code=499)  # nobody is listening; nginx's code for "client closed request"


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (unknown path, wrong method, unreadable body) in the same format."""
    assert isinstance(exc, HTTPException)
    detail = str(exc.detail)
    if exc.status_code == 400 and "parsing the body" in detail:
        detail = "The request body could not be read; send a JSON object encoded in UTF-8."
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ClientGone, client_gone)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(InputError, input_error)
    app.add_exception_handler(UnknownModel, unknown_model)
    app.add_exception_handler(TooManyTokens, too_many_tokens)
    app.add_exception_handler(AnswerTooLarge, answer_too_large)
