"""Domain errors and the handlers that turn them into clear 4xx answers."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from model.tokenizer import TooManyTokens


class ApiError(Exception):
    """An error whose message tells the client what to change."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


class ClientGone(Exception):
    """The client disconnected before its queued model work started; the work was dropped."""


def _where(loc: tuple) -> str:
    parts = [str(p) for p in loc if p != "body"]
    return ".".join(parts) if parts else "request body"


def _validation_message(err: dict) -> str:
    if err.get("type") == "json_invalid":
        return "the request body is not valid JSON; send a JSON object"
    msg = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    if err.get("type") == "extra_forbidden":
        msg = "unknown field; remove it"
    elif err.get("type") == "missing":
        msg = "field required"
    return f"{_where(tuple(err.get('loc', ())))}: {msg}"


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 listing what is wrong, never echoing the input (it may hold NaN or lone surrogates)."""
    errs = exc.errors()
    messages = [_validation_message(e) for e in errs]
    body = {
        "detail": "; ".join(messages[:3]) + (f" (and {len(messages) - 3} more)" if len(messages) > 3 else ""),
        "errors": [
            {"loc": [str(p) for p in e.get("loc", ())], "msg": m, "type": str(e.get("type", ""))}
            for e, m in zip(errs, messages)
        ],
    }
    return JSONResponse(body, status_code=422)


async def api_error(request: Request, exc: ApiError) -> JSONResponse:
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code)


async def too_many_tokens(request: Request, exc: TooManyTokens) -> JSONResponse:
    return JSONResponse(
        {"detail": f"The input has {exc.count} tokens but the model takes at most {exc.limit}; shorten the text."},
        status_code=413,
    )


async def client_gone(request: Request, exc: Exception) -> Response:
    return Response(status_code=499)  # nobody is listening; nginx's code for "client closed request"


async def http_error(request: Request, exc: HTTPException) -> Response:
    """Starlette's own errors (unknown path, wrong method, unreadable body) in the same format."""
    detail = str(exc.detail)
    if exc.status_code == 400 and "parsing the body" in detail:
        detail = "The request body could not be read; send a JSON object encoded in UTF-8."
    return JSONResponse({"detail": detail}, status_code=exc.status_code, headers=getattr(exc, "headers", None))


def install(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(ClientGone, client_gone)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(TooManyTokens, too_many_tokens)
