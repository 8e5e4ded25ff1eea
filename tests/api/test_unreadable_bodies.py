"""A body that is not UTF-8 (or not JSON) on every route that takes one: a 4xx that carries the `errors` array
(app/errors.py) and says what to send, never a 500. The routes are read from the app's OpenAPI schema, so a new one
is checked too."""

from __future__ import annotations

import re

BODIES = [  # (headers, body)
    ({"content-type": "application/json"}, b'{"text": "caf\xe9 \xff\xfe"}'),  # Latin-1 inside JSON
    ({"content-type": "application/json"}, b"\xff\xfe\x00{"),  # a byte-order mark and garbage
    ({"content-type": "application/json"}, b'{"text": "\xed\xa0\x80"}'),  # a surrogate encoded (CESU-8)
    ({}, b"\xff"),  # no content type at all
    ({"content-type": "text/plain"}, b"caf\xe9"),
]


def body_routes(app) -> list[tuple[str, str]]:
    """(method, path) of every route that reads a request body, path parameters filled with a placeholder."""
    return [
        (method.upper(), re.sub(r"\{[^}]+\}", "x", path))
        for path, operations in app.openapi()["paths"].items()
        for method in operations if method in ("post", "put", "patch")
    ]


def test_every_route_refuses_a_body_that_is_not_utf8_json_with_the_errors_array(client):
    routes = body_routes(client.app)
    assert len(routes) >= 20, routes  # the app's routes were found
    wrong = []
    for method, path in routes:
        for headers, body in BODIES:
            response = client.request(method, path, content=body, headers=headers)
            answer = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
            errors = answer.get("errors")
            fine = (
                400 <= response.status_code < 500
                and isinstance(errors, list) and errors
                and all({"loc", "msg", "type"} <= set(item) for item in errors)
                and isinstance(answer.get("detail"), str) and answer["detail"]
            )
            if not fine:
                wrong.append((method, path, headers, response.status_code, response.text[:160]))
    assert wrong == []


def test_a_body_without_a_json_content_type_is_told_what_to_send(client):
    response = client.post("/api/v1/attention", content=b"\xff", headers={"content-type": "text/plain"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body"]
    assert "UTF-8" in response.json()["detail"] and "application/json" in response.json()["detail"]
