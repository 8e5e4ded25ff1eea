"""Schemathesis against the OpenAPI schema of a real uvicorn server.

Every check runs except positive_data_acceptance: some limits depend on the
model and cannot be written in the schema (its token limit, its layer and head
ranges, n_heads dividing d_model), so schema-valid data may rightly get a 4xx.
Those answers are documented in the schema instead.
"""

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, positive_data_acceptance

from app.main import create_app
from bench.common import Server

EXAMPLES_PER_OPERATION = 100
FUZZ_CHECKS = [check for check in CHECKS.get_all() if check is not positive_data_acceptance]


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory):
    with Server() as server:
        yield server


@pytest.fixture(scope="module")
def api_schema(fuzz_server):
    return schemathesis.openapi.from_url(f"{fuzz_server.base}/openapi.json")


# Every operation of the schema (a test below keeps this list whole). Operations with inputs are
# fuzzed with valid and with invalid data; those without inputs have no invalid data to send.
OPERATIONS = [
    ("GET", "/api/v1/models"), ("POST", "/api/v1/attention"), ("POST", "/api/v1/attention/summary"),
    ("POST", "/api/v1/trace"), ("POST", "/api/v1/toy"), ("GET", "/healthz"),
    ("GET", "/"), ("GET", "/steps"), ("GET", "/toy"),
]
CASES = [(m, p, GenerationMode.POSITIVE) for m, p in OPERATIONS] + [
    (m, p, GenerationMode.NEGATIVE) for m, p in OPERATIONS if m == "POST"
]


@pytest.mark.parametrize("method, path, mode", CASES, ids=[f"{m} {p} {g.value}" for m, p, g in CASES])
def test_api_conforms_to_its_schema(api_schema, fuzz_server, method, path, mode):
    operation = api_schema[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def fuzz(case):
        calls.append(case)
        case.call_and_validate(base_url=fuzz_server.base, checks=FUZZ_CHECKS)

    calls = []
    fuzz()
    if method == "POST":  # operations without inputs have fewer distinct requests to send
        assert len(calls) >= EXAMPLES_PER_OPERATION


def test_every_operation_is_fuzzed(api_schema):
    in_schema = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert in_schema == set(OPERATIONS)


def test_the_checks_are_all_but_one():
    names = {c.__name__ for c in FUZZ_CHECKS}
    assert "positive_data_acceptance" not in names
    assert {"not_a_server_error", "status_code_conformance", "response_schema_conformance",
            "content_type_conformance", "negative_data_rejection"} <= names


def test_every_api_route_is_in_the_schema(fuzz_server):
    documented = httpx.get(f"{fuzz_server.base}/openapi.json").json()["paths"]
    routes = {(route.path, method) for route in create_app().routes
              for method in getattr(route, "methods", ()) if route.path.startswith("/api/") or route.path == "/healthz"}
    assert routes, "no API routes found"
    for path, method in routes:
        assert method.lower() in documented.get(path, {}), f"{method} {path} is not in the OpenAPI schema"


def test_no_server_error_after_fuzzing(fuzz_server):
    assert "Traceback" not in fuzz_server.output()
    assert httpx.get(f"{fuzz_server.base}/healthz").status_code == 200
