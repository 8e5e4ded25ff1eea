"""Pure ASGI middleware: Host allow-list, request-body size limit and security headers."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
FRAME_ANCESTORS_SETTING = "ATTNSCOPE_FRAME_ANCESTORS"
# A source of frame-ancestors: 'self', or an http(s) origin whose host may start with "*." and whose port may be
# "*" (https://lab.example.org, http://localhost:8888, https://*.example.org). Nothing else: no path, no
# quotes, no separators that could end the directive and add another.
_FRAME_SOURCE = re.compile(r"https?://(\*\.)?[a-z0-9-]+(\.[a-z0-9-]+)*(:([0-9]{1,5}|\*))?/?")


def frame_ancestors_error(sources: list[str]) -> str | None:
    """What is wrong with a frame-ancestors list (one line, naming the setting), or None when it is valid."""
    if sources == ["'none'"]:
        return None
    if not sources:
        return f"{FRAME_ANCESTORS_SETTING} is empty: give 'none' (the default) or the origins that may frame attnscope"
    for source in sources:
        if source != "'self'" and not _FRAME_SOURCE.fullmatch(source.lower()):
            return (f"{FRAME_ANCESTORS_SETTING}: {source[:100]!r} is not 'none', 'self' or an http(s) origin such as "
                    "https://lab.example.org or http://localhost:8888 ('none' stands alone)")
    return None


def csp(frame_ancestors: Iterable[str] = ("'none'",)) -> str:
    """The pages' Content-Security-Policy with these frame-ancestors sources (validated by the setting)."""
    return CSP.replace("frame-ancestors 'none'", f"frame-ancestors {' '.join(frame_ancestors)}")


async def _send_json(send: Send, status: int, body: dict, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
    payload = json.dumps(body).encode()
    await send({
        "type": "http.response.start",
        "status": status,
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                    *headers],
    })
    await send({"type": "http.response.body", "body": payload})


# Names always answered: the loopback addresses, which a page elsewhere cannot rebind to.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
ALLOWED_HOSTS_SETTING = "ATTNSCOPE_ALLOWED_HOSTS"
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")
_PORT = re.compile(r"(:[0-9]*)?")


def host_name(value: str) -> str | None:
    """The host of a Host header or an allow-list entry, compared form: lower case, without the port,
    an IPv6 address without brackets and compressed ("[0:0::1]:8000" -> "::1"), a name without its
    final dot; None when it is no host (empty, a bare IPv6 address with a port, a path, a user...)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0 or not _PORT.fullmatch(value[end + 1:]):
            return None
        try:
            return ipaddress.IPv6Address(value[1:end]).compressed
        except ValueError:
            return None
    if value.count(":") > 1:  # only an allow-list entry may be a bare IPv6 address (a Host needs brackets)
        try:
            return ipaddress.IPv6Address(value).compressed
        except ValueError:
            return None
    name, _, port = value.partition(":")
    if port and not port.isdigit():
        return None
    name = name.removesuffix(".")
    return name if _NAME.fullmatch(name) else None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class AllowedHosts:
    """Answers 400 to a request whose Host header is not one of this server's names.

    A page on another site can point its own domain at 127.0.0.1 (DNS rebinding) and then read the
    API as same-origin; its requests still carry that domain in Host, so only the names the server
    is meant to be reached by are answered: 127.0.0.1, localhost, [::1], `bound` (the configured bind
    address, unless it is every interface) and `extra` (ATTNSCOPE_ALLOWED_HOSTS; "*" in it answers
    any Host). The IP address a connection arrived on is answered too: a Host that is an address
    literal cannot be rebound, and it covers `attnscope serve --host ADDR`. HTTP/1.0 requests without
    a Host are answered (browsers always send one); HTTP/1.1 ones are refused.
    """

    def __init__(self, app: ASGIApp, bound: str = "127.0.0.1", extra: Iterable[str] = ()) -> None:
        self.app = app
        extra = list(extra)
        self.any_host = "*" in extra
        names = [*LOOPBACK_HOSTS, *extra]
        bound_name = host_name(bound)
        if bound_name is not None and bound_name not in ("0.0.0.0", "::"):
            names.append(bound_name)
        self.allowed = frozenset(n for n in map(host_name, names) if n is not None)

    def _refusal(self, scope: Scope) -> tuple[str, str] | None:
        """None when the request's Host is answered, else (the Host as sent, what is wrong with it)."""
        values = [v.decode("latin-1") for k, v in scope["headers"] if k == b"host"]
        if not values:
            return None if scope.get("http_version") == "1.0" else ("", "The request has no Host header")
        raw = values[0]
        if len(values) > 1:
            return raw, f"The request has {len(values)} Host headers"
        if not raw.strip():
            return raw, "The request's Host header is empty"
        name = host_name(raw)
        if name in self.allowed:
            return None
        server = scope.get("server")  # (local address, port) of the connection
        if name is not None and server and _is_ip(name) and name == host_name(str(server[0])):
            return None
        return raw, f"Host {raw[:200]!r} is not a name this server answers"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.any_host:
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})  # before accept: the server answers 403
            return
        raw, problem = refusal
        await _send_json(send, 400, {
            "detail": f"{problem}; attnscope answers 127.0.0.1, localhost, [::1], the address it is bound to and "
                      f"the names in {ALLOWED_HOSTS_SETTING} (a JSON list, e.g. "
                      f"{ALLOWED_HOSTS_SETTING}='[\"attnscope.lan\"]'): add a name there to open attnscope by it.",
            "errors": [{"loc": ["header", "host"], "msg": f"not an allowed host; add it to {ALLOWED_HOSTS_SETTING}",
                        "type": "host_not_allowed", "ctx": {"host": raw[:200]}}],
        }, headers=[(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")])


class BodyLimit:
    """Answers 413 to a request body over `limit` bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    def _too_large(self) -> dict:
        message = f"The request body is over the server's limit of {self.limit} bytes; send less"
        return {"detail": f"{message}.", "errors": [{"loc": ["body"], "msg": message, "type": "body_too_large",
                                                     "ctx": {"limit": self.limit}}]}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _send_json(send, 413, self._too_large())
            return
        if declared is not None:
            await self.app(scope, receive, send)  # the server enforces the declared length
            return
        # No declared length (chunked): read up to the limit first, then replay.
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await _send_json(send, 413, self._too_large())
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class SecurityHeaders:
    """nosniff and Referrer-Policy on every answer; the CSP on every HTML answer. `frame_ancestors`
    (ATTNSCOPE_FRAME_ANCESTORS) names who may show the pages in a frame: nobody ('none') unless configured."""

    def __init__(self, app: ASGIApp, frame_ancestors: str = "'none'") -> None:
        self.app = app
        sources = frame_ancestors.split()
        problem = frame_ancestors_error(sources)
        if problem is not None:
            raise ValueError(problem)
        self.csp = csp(sources).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                ctype = dict(headers).get(b"content-type", b"")
                headers.append((b"x-content-type-options", b"nosniff"))
                headers.append((b"referrer-policy", b"no-referrer"))
                if ctype.startswith(b"text/html"):
                    headers.append((b"content-security-policy", self.csp))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
