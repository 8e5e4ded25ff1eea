"""Local means local: only requests whose Host is one of the server's own names are answered.

A page on another site can resolve its own domain to 127.0.0.1 (DNS rebinding) and read the API as
same-origin; its requests still name that domain in Host. Real servers get raw requests with an
explicit Host (httpx sends the header as given; a socket for the empty and the missing Host).
"""

import asyncio
import http.client
import json
import socket
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from pydantic import ValidationError

from app.middleware import AllowedHosts, host_name
from app.settings import Settings
from bench.common import ROOT, Server

SETTING = "ATTNSCOPE_ALLOWED_HOSTS"
EVIL = ["evil.example.com", "evil.example.com:{port}", "127.0.0.1.evil.example.com", "localhost.evil.example.com",
        "127.0.0.2", "[::2]:{port}", "attnscope.lan", "LOCALHOST:{port}.evil", "127.0.0.1@evil.example.com"]
ANSWERED = ["127.0.0.1:{port}", "127.0.0.1", "localhost:{port}", "localhost", "LocalHost:{port}", "[::1]:{port}",
            "[::1]", "[0:0:0:0:0:0:0:1]:{port}", "localhost.:{port}"]
# (method, path, statuses answered with an allowed Host): pages, API, static files, docs, an unknown path
ROUTES = [
    ("GET", "/", {200}),
    ("GET", "/steps", {200}),
    ("GET", "/compare", {200}),
    ("HEAD", "/", {200, 405}),
    ("GET", "/healthz", {200}),
    ("GET", "/api/v1/models", {200}),
    ("POST", "/api/v1/attention", {200}),
    ("OPTIONS", "/api/v1/attention", {405}),
    ("GET", "/api/v1/iris/data", {200}),
    ("GET", "/static/css/app.css", {200}),
    ("GET", "/static/vendor/plotly.min.js", {200}),
    ("GET", "/favicon.ico", {200}),
    ("GET", "/docs", {200}),
    ("GET", "/openapi.json", {200}),
    ("GET", "/no-such-page", {404}),
]


def get(server: Server, host: str, path: str = "/healthz", method: str = "GET", **kw) -> httpx.Response:
    with httpx.Client(trust_env=False, timeout=120) as client:
        return client.request(method, f"{server.base}{path}", headers={"Host": host.format(port=server.port)}, **kw)


def raw(server: Server, head: bytes) -> tuple[int, dict]:
    """Sends `head` (request line and headers) as is; the status and the JSON body of the answer."""
    with socket.create_connection((server.base.split("//")[1].split(":")[0], server.port), timeout=60) as sock:
        sock.sendall(head + b"Connection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(body)


def assert_refused(r: httpx.Response | tuple[int, dict], host: str) -> None:
    status, body = (r.status_code, r.json()) if isinstance(r, httpx.Response) else r
    assert status == 400, body
    assert SETTING in body["detail"], body
    assert body["errors"] == [{"loc": ["header", "host"], "msg": f"not an allowed host; add it to {SETTING}",
                               "type": "host_not_allowed", "ctx": {"host": host}}]


class BoundServer(Server):
    """`attnscope serve --host HOST`: the bind address given on the command line, not in the settings."""

    def __init__(self, host: str, **env: str) -> None:
        super().__init__(**env)
        self.host = host
        self.base = f"http://{host}:{self.port}"

    def spawn(self) -> subprocess.Popen:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "attnscope.cli", "serve", "--host", self.host, "--port", str(self.port)],
            cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
        )
        return self.proc

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            conn.request(method, path)
            r = conn.getresponse()
            return r.status, r.read()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def extended_server():
    """Bound on 127.0.0.3 by --host (the settings still say 127.0.0.1), with two more names allowed."""
    env = {SETTING: json.dumps(["attnscope.lan", "Box.Example.org:8000", "[fd00::5]"])}
    with BoundServer("127.0.0.3", **env) as server:
        yield server


# --- the default list, on a real server ---

@pytest.mark.parametrize("host", ANSWERED)
def test_loopback_names_are_answered(live_server, host):
    r = get(live_server, host)
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "ok"


@pytest.mark.parametrize("host", EVIL)
def test_other_hosts_are_refused_naming_the_setting(live_server, host):
    r = get(live_server, host)
    assert_refused(r, host.format(port=live_server.port))
    assert r.headers["content-type"] == "application/json"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_an_empty_a_missing_and_a_doubled_host_are_refused(live_server):
    assert_refused(raw(live_server, b"GET /healthz HTTP/1.1\r\nHost:\r\n"), "")
    assert_refused(raw(live_server, b"GET /api/v1/models HTTP/1.1\r\n"), "")
    doubled = raw(live_server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example.com\r\n")
    assert_refused(doubled, "127.0.0.1")
    assert "2 Host headers" in doubled[1]["detail"]


def test_http_1_0_without_a_host_is_answered(live_server):
    """Browsers always send a Host, so its absence in HTTP/1.0 (where it is optional) is no rebinding."""
    status, body = raw(live_server, b"GET /healthz HTTP/1.0\r\n")
    assert status == 200 and body["status"] == "ok"


@pytest.mark.parametrize(("method", "path", "statuses"), ROUTES)
def test_every_route_is_behind_the_check(live_server, method, path, statuses):
    kw = {"json": {"text": "Hello world"}} if method == "POST" else {}
    refused = get(live_server, "evil.example.com", path, method, **kw)
    assert refused.status_code == 400
    if method != "HEAD":
        assert_refused(refused, "evil.example.com")
    answered = get(live_server, "localhost:{port}", path, method, **kw)
    assert answered.status_code in statuses, (path, answered.status_code)


def test_the_check_comes_before_any_other_work(live_server):
    """An oversized body from a foreign Host is refused for its Host (400), not its size (413)."""
    with httpx.Client(trust_env=False, timeout=120) as client:
        r = client.post(f"{live_server.base}/api/v1/attention", content=b"x" * 3_000_000,
                        headers={"Host": "evil.example.com", "content-type": "application/json"})
    assert_refused(r, "evil.example.com")


@pytest.mark.parametrize("ctype", ["text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                                   "multipart/form-data; boundary=x"])
def test_a_cross_site_form_post_is_refused(live_server, ctype):
    """A form on another site can POST these content types without a preflight; the API reads JSON only."""
    with httpx.Client(trust_env=False, timeout=120) as client:
        r = client.post(f"{live_server.base}/api/v1/attention", content=b'{"text": "Hello world"}',
                        headers={"content-type": ctype, "origin": "http://evil.example.com"})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body"]
    assert "access-control-allow-origin" not in r.headers


# --- ATTNSCOPE_ALLOWED_HOSTS and the bind address ---

@pytest.mark.parametrize("host", ["attnscope.lan", "ATTNSCOPE.LAN:{port}", "box.example.org:{port}", "box.example.org",
                                  "[fd00::5]:{port}", "127.0.0.1:{port}", "localhost", "[::1]:{port}",
                                  "127.0.0.3:{port}", "127.0.0.3"])
def test_the_setting_extends_the_list_and_the_bound_address_is_answered(extended_server, host):
    r = get(extended_server, host)
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("host", ["evil.example.com", "sub.attnscope.lan", "attnscope.lan.evil.example.com",
                                  "127.0.0.2:{port}", "[fd00::6]"])
def test_the_extended_list_still_refuses_other_hosts(extended_server, host):
    assert_refused(get(extended_server, host), host.format(port=extended_server.port))


def test_a_star_answers_every_host():
    with Server(**{SETTING: '["*"]'}) as server:
        assert get(server, "evil.example.com").status_code == 200
        assert get(server, "evil.example.com", "/api/v1/models").status_code == 200
        assert raw(server, b"GET /healthz HTTP/1.1\r\nHost:\r\n")[0] == 200


# --- the parts, without a server ---

@pytest.mark.parametrize(("value", "name"), [
    ("127.0.0.1:8000", "127.0.0.1"), ("LOCALHOST", "localhost"), ("localhost.", "localhost"),
    ("localhost:", "localhost"), ("[::1]:8000", "::1"), ("[0:0::1]", "::1"), ("::1", "::1"),
    ("[FD00::5]", "fd00::5"), ("attnscope.lan:80", "attnscope.lan"), ("my_box", "my_box"),
    ("", None), (" ", None), ("evil.com/path", None), ("user@host", None), ("host:port", None),
    ("::1:8000:x", None), ("[::1", None), ("[::1]x", None), ("[nothex]", None), ("a..b", None), (".", None),
    ("h\u00f6st", None), ("*", None),
])
def test_host_name(value, name):
    assert host_name(value) == name


async def _status(app: AllowedHosts, headers: list[tuple[bytes, bytes]], server=("127.0.0.1", 8000),
                  version: str = "1.1", kind: str = "http") -> object:
    sent: list[dict] = []

    async def inner(scope, receive, send):
        sent.append({"type": "passed"})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b""}

    app.app = inner
    await app({"type": kind, "headers": headers, "server": server, "http_version": version}, receive, send)
    first = sent[0]
    return "passed" if first["type"] == "passed" else first.get("status", first.get("code"))


def status(app, headers, **kw):
    # On a thread of its own: in the whole suite, Playwright's sync API keeps an event loop running on this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, _status(app, headers, **kw)).result()


def test_the_configured_bind_address_is_answered_and_every_interface_is_no_name():
    bound = AllowedHosts(None, bound="192.168.1.20")
    assert status(bound, [(b"host", b"192.168.1.20:8000")]) == "passed"
    assert status(bound, [(b"host", b"192.168.1.21:8000")]) == 400
    named = AllowedHosts(None, bound="box.lan")
    assert status(named, [(b"host", b"Box.Lan:8000")]) == "passed"
    for everywhere in ("0.0.0.0", "::"):
        app = AllowedHosts(None, bound=everywhere)
        assert status(app, [(b"host", b"0.0.0.0:8000")], server=("10.0.0.7", 8000)) == 400
        assert status(app, [(b"host", b"[::]:8000")], server=("10.0.0.7", 8000)) == 400
        assert status(app, [(b"host", b"localhost:8000")], server=("10.0.0.7", 8000)) == "passed"


def test_the_address_a_connection_arrived_on_is_answered_only_as_an_address():
    app = AllowedHosts(None, bound="0.0.0.0")
    assert status(app, [(b"host", b"10.0.0.7:8000")], server=("10.0.0.7", 8000)) == "passed"
    assert status(app, [(b"host", b"[fd00::7]:8000")], server=("fd00::7", 8000)) == "passed"
    assert status(app, [(b"host", b"10.0.0.8:8000")], server=("10.0.0.7", 8000)) == 400
    assert status(app, [(b"host", b"evil.example.com")], server=None) == 400
    assert status(app, [(b"host", b"sock")], server=("sock", None)) == 400  # a unix socket's path is no address


def test_a_refused_websocket_is_closed_and_other_scopes_pass():
    app = AllowedHosts(None)
    assert status(app, [(b"host", b"evil.example.com")], kind="websocket") == 1008
    assert status(app, [(b"host", b"localhost:8000")], kind="websocket") == "passed"
    assert status(app, [], kind="lifespan") == "passed"
    assert status(app, [], version="1.0") == "passed"
    assert status(app, [], version="2") == 400


def test_the_setting_holds_host_names_only():
    assert Settings().allowed_hosts == []
    assert Settings(allowed_hosts=["attnscope.lan", "[fd00::5]:8000", "*"]).allowed_hosts[0] == "attnscope.lan"
    for bad in (["attnscope.lan/x"], ["http://attnscope.lan"], [""]):
        with pytest.raises(ValidationError, match="not a host name or address"):
            Settings(allowed_hosts=bad)
