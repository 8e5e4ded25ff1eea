"""Bad inputs, table-driven, against a real server: a correct answer or a 4xx that says what to change,
never a 5xx, and the server keeps answering afterwards."""

import json
from urllib.parse import quote

import httpx
import pytest

JSON = {"content-type": "application/json"}
UNICODE = {
    "right-to-left": "שלום עולם مرحبا بالعالم",
    "combining marks": "e\u0301 a\u0308 n\u0303 Z\u0335\u0321\u0317a\u0336\u0328l\u0337go",
    "zero-width": "zero\u200bwidth\u200c\u200djoin\ufeff",
    "nul": "before\u0000after",
    "four-byte emoji": "🧠🔍👩🏽‍🔬🏳️‍🌈",
    "control characters": "bell\u0007 esc\u001b[31m tab\t cr\r del\u007f",
    "only zero-width": "\u200b\u200b",  # not blank to str.strip(): the answer is [CLS] [SEP]
}


def body(**fields) -> bytes:
    return json.dumps(fields).encode()


# (name, method, path, raw body or None, statuses accepted)
CASES = [
    ("empty text", "POST", "/api/v1/attention", body(text=""), {422}),
    ("whitespace text", "POST", "/api/v1/attention", body(text=" \t\n\u3000"), {422}),
    ("1 MB of text", "POST", "/api/v1/attention", body(text="word " * 200_000), {413}),
    ("20 MB body", "POST", "/api/v1/attention", body(text="x" * 20_000_000), {413}),
    ("invalid JSON", "POST", "/api/v1/attention", b'{"text": "x"', {422}),
    ("not UTF-8", "POST", "/api/v1/attention", b'{"text": "\xff\xfe"}', {400, 422}),
    ("array body", "POST", "/api/v1/attention", b"[1, 2, 3]", {422}),
    ("text is a number", "POST", "/api/v1/attention", body(text=42), {422}),
    ("layers is a string", "POST", "/api/v1/attention", body(text="x", layers="0"), {422}),
    ("layers as floats", "POST", "/api/v1/attention", body(text="x", layers=[1.0]), {422}),
    ("layers as booleans", "POST", "/api/v1/attention", body(text="x", heads=[True]), {422}),
    ("negative layer", "POST", "/api/v1/attention", body(text="x", layers=[-1]), {422}),
    ("huge layer", "POST", "/api/v1/attention", body(text="x", layers=[10**30]), {422}),
    ("huge head", "POST", "/api/v1/trace", body(text="x", layer=0, head=2**63), {422}),
    ("negative trace layer", "POST", "/api/v1/trace", body(text="x", layer=-3), {422}),
    ("escaped lone surrogate", "POST", "/api/v1/attention", b'{"text": "a\\udc80b"}', {422}),
    ("surrogate in pair", "POST", "/api/v1/attention", b'{"text": "a", "text_pair": "\\ud83d"}', {422}),
    ("NaN in toy", "POST", "/api/v1/toy", b'{"queries": [[NaN, 1]]}', {422}),
    ("Infinity in toy", "POST", "/api/v1/toy", b'{"queries": [[1, -Infinity]]}', {422}),
    ("1e308 in toy", "POST", "/api/v1/toy", body(queries=[[1e308, 1.0]]), {422}),
    ("1e999 in toy", "POST", "/api/v1/toy", b'{"queries": [[1e999]]}', {422}),
    ("10^6-element toy matrix", "POST", "/api/v1/toy", body(queries=[[0] * 1000] * 1000), {413, 422}),
    ("65x65 toy matrix", "POST", "/api/v1/toy", body(queries=[[0] * 65] * 65), {422}),
    ("ragged toy matrix", "POST", "/api/v1/toy", body(queries=[[1, 2], [3]]), {422}),
    ("toy weights of the wrong size", "POST", "/api/v1/toy", body(queries=[[1, 2]], weights={"o": [[1]]}), {422}),
    ("huge n_heads", "POST", "/api/v1/toy", body(n_heads=10**9), {422}),
    ("unknown encoding", "POST", "/api/v1/attention?encoding=xml", body(text="x"), {422}),
    ("summary size 0", "POST", "/api/v1/attention/summary", body(text="x", size=0), {422}),
    ("unknown path", "GET", "/api/v1/nothing", None, {404}),
    ("wrong method", "GET", "/api/v1/attention", None, {405}),
    ("static escape", "GET", "/static/..%2f..%2fapp/main.py", None, {404}),
    ("static escape, encoded dots", "GET", "/static/%2e%2e/%2e%2e/pyproject.toml", None, {404}),
    ("static escape, double encoding", "GET", "/static/%252e%252e/app/settings.py", None, {404}),
] + [
    (f"{name} text", "POST", "/api/v1/attention", body(text=text, layers=[0], heads=[0]),
     {200})
    for name, text in UNICODE.items()
] + [
    (f"{name} text, trace", "POST", "/api/v1/trace", body(text=text, layer=5, head=11),
     {200})
    for name, text in UNICODE.items()
] + [
    (f"{name} in page URL {page}", "GET", f"{page}?text={quote(text)}&pair={quote(text)}&layer=-1&head=999999999999",
     None, {200})
    for name, text in {**UNICODE, "script": "</script><script>alert(1)</script>", "template": "{{7*7}}"}.items()
    for page in ("/", "/steps", "/toy")
]


@pytest.fixture(scope="module")
def server(live_server):
    return live_server


@pytest.mark.parametrize("name, method, path, raw, accepted", CASES, ids=[c[0] for c in CASES])
def test_bad_input(server, name, method, path, raw, accepted):
    r = httpx.request(method, server.base + path, content=raw, headers=JSON if raw is not None else {}, timeout=60)
    assert r.status_code in accepted, r.text[:300]
    if 400 <= r.status_code < 500:  # every refusal: a sentence and the errors array, whoever answers it
        detail, errors = r.json()["detail"], r.json()["errors"]
        assert isinstance(detail, str) and len(detail) > 8
        assert errors and all({"loc", "msg", "type"} <= set(e) for e in errors)
    if r.headers.get("content-type", "").startswith("text/html"):  # pages never echo URL text server-side
        assert "alert(1)" not in r.text and "{{7*7}}" not in r.text and "\u200b" not in r.text


def test_server_still_answers_after_the_matrix(server):
    r = httpx.post(f"{server.base}/api/v1/attention", json={"text": "still here", "layers": [0], "heads": [0]})
    assert r.status_code == 200
    assert "Traceback" not in server.output() and " 500 " not in server.output()
