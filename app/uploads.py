"""The body of a text to train on (POST /api/v1/labs/lm/train): JSON ({"text": ...}) or multipart/form-data (a
`file` part and the settings as form fields), read into the JSON body's fields; and the larger body limit of that
one path. The standard library's email parser reads the multipart body (python-multipart is not a dependency); a
part that is not UTF-8 is refused as the route's other text rules are (422 `lab_setting`)."""

from __future__ import annotations

from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

import orjson
from fastapi.exceptions import RequestValidationError
from starlette.types import ASGIApp, Receive, Scope, Send

from model.errors import LabInputError
from model.lab.lm import MAX_BYTES, MIN_CHARS

from .middleware import BodyLimit
from .settings import Settings

ENVELOPE_BYTES = 64 * 1024  # a body's room around the text: the settings, multipart headers


def upload_cap(settings: Settings) -> int:
    """The largest text accepted, bytes of UTF-8: the server's setting, at most model/lab/lm.py's MAX_BYTES."""
    return min(settings.lm_max_upload_bytes, MAX_BYTES)


class UploadLimit:
    """BodyLimit with a larger limit on the one path that takes a text to train on: a text at the cap, JSON-escaped
    (\\uXXXX: 6 bytes for a CJK character's 3), plus its envelope. Every other path keeps `limit`."""

    def __init__(self, app: ASGIApp, limit: int, path: str, path_limit: int) -> None:
        self.others = BodyLimit(app, limit)
        self.upload = BodyLimit(app, max(limit, path_limit))
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        chosen = self.upload if scope["type"] == "http" and scope.get("path") == self.path else self.others
        await chosen(scope, receive, send)


def validation_error(errors: list[Any]) -> RequestValidationError:
    """pydantic-style errors about the body's fields, answered as every other 422 (app/errors.py)."""
    return RequestValidationError([{**e, "loc": ("body", *e.get("loc", ()))} for e in errors])


def read_multipart(content_type: str, body: bytes) -> tuple[dict[str, Any], str]:
    """A multipart/form-data body as the JSON body's fields (numbers as ints when they read as one) and the name of
    the part that held the text ("file" or "text")."""
    message = BytesParser(policy=HTTP).parsebytes(b"Content-Type: " + content_type.encode("latin-1") + b"\r\n\r\n"
                                                  + body)
    if not message.is_multipart():
        raise validation_error([{"type": "missing", "loc": ("file",), "msg": "Field required", "input": None}])
    fields: dict[str, Any] = {}
    source = "text"
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if name in ("file", "text"):
            try:
                fields["text"] = payload.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise LabInputError("lab_setting", name, f"the {name} is not UTF-8 text (byte {exc.start:,} cannot "
                                    f"be read); send a UTF-8 text of {MIN_CHARS:,} characters or more",
                                    min=MIN_CHARS, max=MAX_BYTES) from None
            source = name
        else:
            text = payload.decode("utf-8", errors="replace").strip()
            fields[name] = int(text) if text.isdigit() and len(text) < 12 else text
    return fields, source


def read_body(content_type: str, body: bytes) -> tuple[dict[str, Any], str]:
    """The request's fields and the name of the part that held the text."""
    if content_type.lower().startswith("multipart/form-data"):
        return read_multipart(content_type, body)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise validation_error([{"type": "json_invalid", "loc": (exc.pos,), "msg": "JSON decode error", "input": {},
                            "ctx": {"error": exc.msg}}]) from None
    if not isinstance(data, dict):
        raise validation_error([{"type": "model_attributes_type", "loc": (), "msg": "Input should be a valid "
                                 "dictionary or object to extract fields from", "input": None}])
    return data, "text"
