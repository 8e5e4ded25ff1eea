"""The OpenAPI schema of a real server: every request example works, and the rules it can state are stated."""

import json
import re
import sys

import httpx
import jsonschema_rs
import pytest

from app.schemas.common import NON_BLANK
from model.analysis.patching import PATCH_RULES
from model.errors import TOY_RULES


@pytest.fixture(scope="module")
def spec(live_server):
    return httpx.get(f"{live_server.base}/openapi.json").json()


def _component(spec, ref_or_schema):
    ref = ref_or_schema.get("$ref", "")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[-1]] if ref else ref_or_schema


def _bodies(spec):
    """(method, path, media type entry, request schema) of every operation with a request body."""
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                media = operation["requestBody"]["content"]["application/json"]
                yield method, path, media, _component(spec, media["schema"])


def test_every_request_body_documents_examples(spec):
    bodies = list(_bodies(spec))
    assert {path for _, path, _, _ in bodies} == {"/api/v1/attention", "/api/v1/attention/summary",
                                                  "/api/v1/trace", "/api/v1/toy", "/api/v1/toy/backward",
                                                  "/api/v1/flash", "/api/v1/sequence/reach",
                                                  "/api/v1/iris/train", "/api/v1/iris/predict",
                                                  "/api/v1/labs/induction/train", "/api/v1/labs/seq2seq/train",
                                                  "/api/v1/labs/seq2seq/predict",
                                                  "/api/v1/aggregate", "/api/v1/metrics", "/api/v1/contributions",
                                                  "/api/v1/lens", "/api/v1/logit-attribution",
                                                  "/api/v1/generate", "/api/v1/attribution",
                                                  "/api/v1/attribution/continuation",
                                                  "/api/v1/token", "/api/v1/patch", "/api/v1/edit/effect",
                                                  "/api/v1/labs/informer/train", "/api/v1/labs/informer/watch",
                                                  "/api/v1/labs/glimpse/train", "/api/v1/labs/lm/train"}
    for method, path, media, schema in bodies:
        assert schema.get("examples"), f"{method} {path}: the schema has no examples"
        # Swagger UI's "Try it out" starts from the first named example of the body
        assert [e["value"] for e in media["examples"].values()] == schema["examples"], path


def _ended(base: str, train: str, job: str) -> str:
    """Wait for a job's last event; its name."""
    with httpx.stream("GET", f"{base}{train}/{job}/events", timeout=60) as events:
        for line in events.iter_lines():
            if line in ("event: done", "event: cancelled", "event: error"):
                return line.removeprefix("event: ")
    raise AssertionError(f"training {job} did not finish")


def _trained_job(base: str, train: str = "/api/v1/iris/train", settings: dict | None = None) -> str:
    """The id of a finished training (Iris: 2 epochs): a /predict's examples name a job the server made."""
    job = httpx.post(f"{base}{train}", json=settings or {"epochs": 2}, timeout=30).json()["job"]
    assert _ended(base, train, job) == "done"
    return job


def test_every_documented_example_is_answered_200(spec, live_server):
    posted = 0
    jobs = {"/api/v1/iris/predict": _trained_job(live_server.base),
            "/api/v1/labs/seq2seq/predict": _trained_job(live_server.base, "/api/v1/labs/seq2seq/train",
                                                         {"steps": 1, "hidden": 8}),
            "/api/v1/labs/informer/watch": _trained_job(live_server.base, "/api/v1/labs/informer/train",
                                                        {"series": "sunspots", "window": 22, "horizon": 5, "steps": 1,
                                                         "d_model": 8})}
    for method, path, media, schema in _bodies(spec):
        validator = jsonschema_rs.Draft202012Validator({**media["schema"], "components": spec["components"]})
        for example in schema["examples"]:
            assert validator.is_valid(example), f"{path}: example {example} does not match its own schema"
            body = {**example, "job": jobs[path]} if path in jobs else example
            r = httpx.request(method, live_server.base + path, json=body, timeout=60)
            accepted = 202 if path.endswith("/train") else 200  # a training starts; its answer says where
            assert r.status_code == accepted, f"{method} {path} {json.dumps(body)} -> {r.status_code} {r.text[:300]}"
            if accepted == 202:  # stopped, and its place free again before the next example starts one
                assert httpx.delete(f"{live_server.base}{path}/{r.json()['job']}").status_code == 204
                _ended(live_server.base, path, r.json()["job"])
            posted += 1
    assert posted >= 25


def _field(spec, schema_name, field):
    prop = spec["components"]["schemas"][schema_name]["properties"][field]
    return [s for s in prop.get("anyOf", [prop]) if s.get("type") != "null"][0]


def test_the_schema_states_the_rules_it_can(spec):
    for name in ("AttentionRequest", "SummaryRequest", "TraceRequest", "AggregateRequest", "MetricsRequest",
                 "ContributionsRequest", "LensRequest", "LogitAttributionRequest"):
        for field in ("text", "text_pair"):
            text = _field(spec, name, field)
            assert text["minLength"] == 1 and text["pattern"] == NON_BLANK
    for name in ("AttentionRequest", "SummaryRequest", "ContributionsRequest"):
        for field in ("layers", "heads"):
            indices = _field(spec, name, field)
            assert indices["uniqueItems"] is True and indices["minItems"] == 1 and indices["items"]["minimum"] == 0
    assert _field(spec, "TraceRequest", "layer")["minimum"] == 0
    assert _field(spec, "TraceRequest", "head")["minimum"] == 0
    top_k = _field(spec, "LensRequest", "top_k")
    assert (top_k["minimum"], top_k["maximum"]) == (1, 20)
    assert _field(spec, "LensRequest", "position")["minimum"] == 0
    residual = _field(spec, "AggregateRequest", "residual")
    assert (residual["minimum"], residual["maximum"]) == (0, 1)
    assert _field(spec, "AggregateRequest", "kind")["enum"] == ["mean", "rollout"]
    summary_size = _field(spec, "SummaryRequest", "size")
    assert (summary_size["minimum"], summary_size["maximum"]) == (1, 64)
    n_heads = _field(spec, "ToyRequest", "n_heads")
    assert (n_heads["minimum"], n_heads["maximum"]) == (1, 64)
    for field in ("queries", "keys", "values"):
        matrix = _field(spec, "ToyRequest", field)
        assert (matrix["minItems"], matrix["maxItems"]) == (1, 64)
        assert (matrix["items"]["minItems"], matrix["items"]["maxItems"]) == (1, 64)
        number = matrix["items"]["items"]
        assert (number["minimum"], number["maximum"]) == (-1e6, 1e6)
    for name in ("AttentionRequest", "SummaryRequest", "TraceRequest", "ToyRequest", "ToyWeights",
                 "AggregateRequest", "MetricsRequest", "ContributionsRequest", "AttributionRequest",
                 "TokenRequest", "PatchRequest", "LogitAttributionRequest"):
        assert spec["components"]["schemas"][name]["additionalProperties"] is False
    for field in ("clean", "corrupted"):
        assert (_field(spec, "PatchRequest", field)["minLength"], _field(spec, "PatchRequest", field)["pattern"]) == (
            1, NON_BLANK)
    assert _field(spec, "PatchRequest", "target")["enum"] == ["heads", "residual", "head_position", "pattern", "mlp"]
    answer = _field(spec, "PatchRequest", "answer")
    assert (answer["minItems"], answer["maxItems"]) == (2, 2)


def test_model_dependent_rules_are_documented_on_the_routes(spec):
    paths = spec["paths"]
    for path in ("/api/v1/attention", "/api/v1/attention/summary", "/api/v1/trace", "/api/v1/contributions"):
        text = paths[path]["post"]["description"]
        for rule in ("max_tokens", "n_layers", "n_heads", "pairs", "unknown_model", "index_out_of_range"):
            assert rule in text, f"{path} does not document {rule}"
    patch = paths["/api/v1/patch"]["post"]["description"]
    for rule in ("max_tokens", "unknown_model", "too_many_tokens", *PATCH_RULES):
        assert rule in patch, f"/api/v1/patch does not document {rule}"
    toy = paths["/api/v1/toy"]["post"]["description"]
    for rule in ("as long as its first row", "as many values as keys", "divides d_model", *TOY_RULES):
        assert rule in toy


def test_the_corpus_routes_state_their_bounds_and_the_409(spec):
    """The corpus's own ranges (layers, heads, metrics) are the server's to check; the schema states the rest."""
    for path in ("/api/v1/corpus/top", "/api/v1/corpus/pattern"):
        params = {p["name"]: p["schema"] for p in spec["paths"][path]["get"]["parameters"]}
        assert params["layer"]["minimum"] == 0 and params["head"]["minimum"] == 0
        assert (params["k"]["minimum"], params["k"]["maximum"], params["k"]["default"]) == (1, 100, 20)
    top = {p["name"]: p["schema"] for p in spec["paths"]["/api/v1/corpus/top"]["get"]["parameters"]}
    assert top["lowest"]["type"] == "boolean" and top["by"]["pattern"] == "^[a-z][a-z0-9_]*$"
    pattern = {p["name"]: p["schema"] for p in spec["paths"]["/api/v1/corpus/pattern"]["get"]["parameters"]}
    assert (pattern["query"]["minLength"], pattern["query"]["maxLength"]) == (1, 200)
    for path in ("/api/v1/corpus", "/api/v1/corpus/top", "/api/v1/corpus/pattern", "/api/v1/corpus/heads"):
        answers = spec["paths"][path]["get"]["responses"]
        assert "attnscope serve --corpus DIR" in answers["409"]["description"]
        if path != "/api/v1/corpus":
            assert "unknown_metric" in answers["422"]["description"]


def test_the_blank_pattern_is_the_servers_rule(live_server):
    """NON_BLANK matches exactly the strings that are not all whitespace to Python (str.isspace)."""
    pattern = re.compile(NON_BLANK)
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        if not 0xD800 <= code <= 0xDFFF:
            assert bool(pattern.search(c)) == (not c.isspace()), hex(code)
    for text in ("\u2003", "\x1c\u3000", " \t\n"):
        r = httpx.post(f"{live_server.base}/api/v1/attention", json={"text": text})
        assert r.status_code == 422 and "blank" in r.json()["detail"]
    assert httpx.post(f"{live_server.base}/api/v1/attention", json={"text": "\u200b", "layers": [0], "heads": [0]}
                      ).status_code == 200  # zero-width space is not whitespace to either
