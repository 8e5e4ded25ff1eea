"""Pages, docs and headers that every answer carries."""

import re

import pytest

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)


@pytest.mark.parametrize("path", ["/", "/steps", "/toy", "/flash", "/positions", "/iris", "/cost", "/compare", "/docs",
                                  "/learn", "/learn/7", "/?text=%3Cscript%3E&layer=1&head=2",
                                  "/steps?text=%3C/script%3E&query=1"])
def test_html_pages_carry_the_exact_csp(client, path):
    r = client.get(path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert r.headers["content-security-policy"] == CSP
    assert r.headers["x-content-type-options"] == "nosniff"
    assert "<script>" not in r.text  # no inline scripts
    for src in re.findall(r'(?:src|href)="([^"]+)"', r.text):
        assert src.startswith("/"), f"{path} loads {src} from another host"


def test_docs_are_served_offline(client):
    html = client.get("/docs").text
    for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', html):
        assert client.get(asset).status_code == 200, asset
    assert client.get("/openapi.json").status_code == 200


def test_vendored_assets(client):
    r = client.get("/static/vendor/plotly.min.js")
    assert r.status_code == 200 and "plotly.js v4." in r.text[:200]
    assert client.get("/favicon.ico").headers["content-type"] == "image/x-icon"


def test_openapi_documents_the_contract(client):
    spec = client.get("/openapi.json").json()
    paths = spec["paths"]
    assert {"/api/v1/models", "/api/v1/attention", "/healthz"} <= set(paths)
    post = paths["/api/v1/attention"]["post"]
    assert {"404", "413", "422"} <= set(post["responses"])
    (encoding,) = [p for p in post["parameters"] if p["name"] == "encoding"]
    assert "json" in spec["components"]["schemas"]["Encoding"]["enum"]
    assert encoding["in"] == "query"


def test_cors_is_off_by_default(client):
    r = client.options("/api/v1/attention", headers={"Origin": "http://evil.example",
                                                     "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in r.headers
    r = client.post("/api/v1/toy", json={}, headers={"Origin": "http://evil.example"})
    assert "access-control-allow-origin" not in r.headers


def test_cors_allows_only_the_configured_origins():
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    with TestClient(create_app(Settings(cors_origins=["http://127.0.0.1:3000"], allowed_hosts=["testserver"]))) as c:
        ok = c.options("/api/v1/toy",
                       headers={"Origin": "http://127.0.0.1:3000", "Access-Control-Request-Method": "POST"})
        assert ok.headers["access-control-allow-origin"] == "http://127.0.0.1:3000"
        assert "access-control-allow-credentials" not in ok.headers
        bad = c.post("/api/v1/toy", json={}, headers={"Origin": "http://evil.example"})
        assert "access-control-allow-origin" not in bad.headers


def test_binds_loopback_by_default_and_warns_for_all_interfaces(monkeypatch):
    from app.settings import Settings
    from attnscope.cli import bind_warning

    monkeypatch.delenv("ATTNSCOPE_HOST", raising=False)
    assert Settings().host == "127.0.0.1"
    assert bind_warning("127.0.0.1") is None
    assert "every network" in bind_warning("0.0.0.0")
    assert "every network" in bind_warning("::")


def test_every_answer_has_nosniff_and_referrer_policy(client):
    for r in (client.get("/api/v1/models"), client.get("/static/css/app.css"), client.get("/nope"),
              client.post("/api/v1/attention", json={"text": " "})):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
