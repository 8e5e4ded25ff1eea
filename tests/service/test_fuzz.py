"""Schemathesis against the OpenAPI schema of a real uvicorn server, with every check.

positive_data_acceptance (a schema-valid request must be accepted) runs too, with one narrow
exception. Some rules cannot be written in the schema because they depend on the model or on
the server's settings: the model ids, a model's token limit, its layer and head ranges,
text_pair only for models with pairs, the toy's matrices agreeing with each other and n_heads
dividing d_model, the positions table's d_model (even for sinusoidal and RoPE, the model's own
for learned), and the JSON answer cap. One rule of the request models JSON Schema cannot
state either: a strict integer field refuses 3.0, which JSON Schema counts as an integer
(API.md: `3.0` is not an int). The routes document these, and the server refuses them with a
4xx whose `errors[].type` names the rule. `accepting_only_documented_rules` lets exactly those
answers through, and only with the rule's documented status and a message naming the rule; any
other refusal of schema-valid data fails as positive_data_acceptance would. Everything the
schema can state (non-blank text, distinct and non-negative indices, matrix sizes, number
limits, n_heads' range), it states, so a refusal for one of those fails the test. Likewise
negative_data_rejection counts a documented 413 (a text over a small model's token limit, refused
before a field only the route checks) as the rejection it is (`rejecting_with_documented_rules`).

Time is bounded by EXAMPLES_PER_OPERATION examples per operation and mode, with no example
database; the whole module took 91-117 s on this 2-core machine (server start included), five labs' training
routes among its operations.
"""

import json

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS, negative_data_rejection, positive_data_acceptance

from app.main import create_app
from tests.properties import examples

EXAMPLES_PER_OPERATION = 100
# Schema-valid requests that each cost seconds of the model (integrated gradients: up to 128 forward and backward
# passes of MiniLM): fewer of them, so the module's time stays bounded; invalid ones stay at the full count.
COSTLY_VALID = {("POST", "/api/v1/attribution"): 20,
                ("POST", "/api/v1/attribution/continuation"): 5,  # integrated gradients of every continuation token
                ("POST", "/api/v1/sequence/reach"): 5}  # seconds at its largest sizes (d copies of the GRU)

# rule type -> (status, words its detail holds): the rules the schema cannot state (see the routes)
DOCUMENTED_RULES = {
    "unknown_model": (404, "use one of"),
    "too_many_tokens": (413, "tokens but the model takes at most"),
    "answer_too_large": (413, "over the JSON cap"),
    "pair_not_supported": (422, "takes one text"),
    "index_out_of_range": (422, "out of range; this"),  # this model has layers ..., this input has positions ...
    "no_lm_head": (422, "has no LM head"),
    # /attribution: a token id for an encoder or a text for an LM-head model, an id beyond the model's vocabulary
    "target_kind": (422, "wrong kind of target"),
    "target_out_of_range": (422, "outside this model's vocabulary"),
    "not_single_token": (422, "not one; send a text that is a single token"),  # /token: a text of 0 or 2+ tokens
    # /attribution's baseline: a baseline text of another token count; a pad or mask baseline the tokenizer lacks
    "baseline_token_count": (422, "both need the same count"),
    "baseline_unavailable": (422, "is unavailable; choose"),
    # /patch (model/analysis/patching.py PATCH_RULES): texts of different token counts, answer tokens that do not fit
    # the model (none for an LM head, any for an encoder, an id beyond the vocabulary, a text of 0 or 2+ tokens, the
    # same token twice), and texts whose metrics are exactly equal (nothing to restore)
    "token_counts_differ": (422, "both need the same count"),
    "answer_missing": (422, "send answer [good, bad]"),
    "answer_not_allowed": (422, "remove answer"),
    "answer_out_of_range": (422, "is not in the vocabulary"),  # /logit-attribution's too (its ANSWER_RULES)
    "answer_not_single_token": (422, "must be a single token"),
    "answer_same": (422, "send two different tokens"),
    "metric_unchanged": (422, "nothing for a patch to restore"),
    "patch_too_large": (422, "shorten both texts"),
    # /generate: the input's tokens and max_new_tokens together over the model's limit (GENERATE_RULES)
    "generate_too_long": (422, "exceed the model's limit"),
    # /attribution/continuation (model/analysis/continuation.py CONTINUATION_RULES): an id beyond the vocabulary, the
    # text and the continuation together over the model's limit
    "continuation_out_of_range": (422, "is not in the vocabulary"),
    "continuation_too_long": (422, "exceed the model's limit"),
    # the toy's rules between fields (model/errors.py TOY_RULES; the others the schema states); the loc is checked below
    **{rule: (422, "") for rule in ("toy_no_queries", "toy_ragged", "toy_columns", "toy_value_rows",
                                    "toy_odd_d_model", "toy_heads_divide", "toy_weight_shape", "toy_weight_widths",
                                    "toy_head_width", "toy_straight_through", "toy_additive_variant",
                                    "toy_additive_shape", "toy_additive_width", "toy_hidden_key", "toy_sinusoidal_odd",
                                    "toy_rope_odd", "toy_upstream_shape", "toy_linear_alibi", "toy_factor_variant",
                                    "toy_probsparse_short", "toy_probsparse_hidden", "toy_probsparse_causal",
                                    "toy_scale_variant", "toy_delta_length", "toy_linear_delta", "toy_tau_range")},
    # /flash's own (model/errors.py FLASH_RULES): a head the layer lacks, an upstream not the head's output shape
    "flash_head": (422, "out of range; this layer has heads"),
    "flash_upstream_shape": (422, "one row per query"),
    "int_type": (422, "Input should be a valid integer"),  # in positive data: only a number like 3.0
    # an /attention edit's hidden key beyond the input's tokens (model/nets/edit.py EDIT_RULES)
    "edit_hidden_key": (422, "out of range; this input has tokens"),
    # a ProbSparse edit with another kind's fields, or of an input of one token (a decoder's)
    "edit_probsparse_alone": (422, "leave"),
    "edit_probsparse_short": (422, "send a text of at least 2 tokens"),
    # GET /positions: rules between its parameters or on the model (model/nets/positions.py POSITION_RULES)
    "positions_odd_d_model": (422, "must be even"),
    "positions_learned_d_model": (422, "learned table is"),
    "positions_learned_length": (422, "learned positions"),
    # GET /cost: rules between its parameters or on the model (model/lab/cost.py COST_RULES)
    "cost_heads_divide": (422, "does not divide d_model"),
    "cost_kv_heads_divide": (422, "does not divide n_heads"),
    "cost_not_exact": (422, "largest integer a JSON client keeps exact"),
    "cost_model_sizes": (422, "is fixed by model"),
    "cost_model_seq_len": (422, "takes at most"),
    # the induction lab's settings that depend on each other (model/lab/induction.py): even, divisible, enough
    # tokens; the encoder-decoder's text to predict (its task's characters and lengths)
    "lab_setting": (422, ""),
    # model/analysis/work.py: a job (or a model's work) estimated over the server's budget, e.g. the largest network
    # the Informer lab's schema allows trained for thousands of steps
    "work_too_large": (422, "GFLOP, more than the"),
    # the training jobs: ids the server never made (the fuzzer holds none of its ids), and the cap on running jobs
    "unknown_job": (404, "Unknown job"),
    "jobs_busy": (429, "training jobs are running"),
    # the corpus index's routes on a server started without a corpus (the fuzzed one): every request; with a
    # corpus (tests/api/test_corpus_routes.py), a metric the index lacks and a token regex that does not compile
    "no_corpus": (409, "attnscope serve --corpus"),
    "unknown_metric": (422, "use one of"),
    "bad_pattern": (422, "regular expression"),
    # POST /api/v1/labs/lm/train: a text over the server's upload cap (the schema cannot know the cap)
    "lm_text_too_large": (413, "over this server's limit"),
}
TOY_FIELDS = {"queries", "keys", "values", "n_heads", "weights", "d_keys", "d_values", "straight_through",
              "additive", "hidden_keys", "positions", "upstream", "variant", "factor", "scale", "tau", "delta"}
POSITIONS_FIELDS = {"d_model", "length"}
# the induction lab's settings checked together; a predicted text; the Informer lab's window and horizon against the
# series' parts and the attention's memory, and a watched window beyond the job's test windows
LAB_FIELDS = {"length", "d_model", "text", "window", "horizon", "index", "file"}
COST_FIELDS = {"d_model", "n_heads", "n_kv_heads", "n_layers", "seq_len"}


def documented_rule(status: int, body: object) -> str | None:
    """The rule a 4xx answer says the request broke when every error it lists is one of
    DOCUMENTED_RULES, with that rule's status and a message naming it; else None."""
    if not isinstance(body, dict) or not body.get("detail") or not body.get("errors"):
        return None
    rules = set()
    for error in body["errors"]:
        rule = DOCUMENTED_RULES.get(error.get("type"))
        if rule is None or rule[0] != status or rule[1] not in error.get("msg", ""):
            return None
        loc = error.get("loc", [])
        if error["type"].startswith("toy_") and (len(loc) < 2 or loc[0] != "body" or loc[1] not in TOY_FIELDS):
            return None
        if error["type"].startswith("positions_") and (len(loc) < 2 or loc[0] != "query"
                                                         or loc[1] not in POSITIONS_FIELDS):
            return None
        if error["type"] == "lab_setting" and (len(loc) < 2 or loc[0] != "body" or loc[1] not in LAB_FIELDS):
            return None
        if error["type"].startswith("cost_") and (len(loc) < 2 or loc[0] != "query" or loc[1] not in COST_FIELDS):
            return None
        rules.add(error["type"])
    return ",".join(sorted(rules))


def accepting_only_documented_rules(ctx, response, case):
    """positive_data_acceptance, except for a documented model- or settings-dependent refusal."""
    if 400 <= response.status_code < 500:
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if documented_rule(response.status_code, body) is not None:
            return True
    return positive_data_acceptance(ctx, response, case)


def rejecting_with_documented_rules(ctx, response, case):
    """negative_data_rejection, where a documented 413 also counts as a rejection: a schema-violating field that
    only the route checks (a negative /lens position: the schema states the minimum, the model the maximum) comes
    after the tokens, and a text over a small model's limit is refused first as too_many_tokens."""
    if response.status_code == 413:
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if documented_rule(response.status_code, body) is not None:
            return True
    return negative_data_rejection(ctx, response, case)


WRAPPED = {positive_data_acceptance: accepting_only_documented_rules,
           negative_data_rejection: rejecting_with_documented_rules}
FUZZ_CHECKS = [WRAPPED.get(c, c) for c in CHECKS.get_all()]


@pytest.fixture(scope="module")
def fuzz_server(live_server):
    return live_server


@pytest.fixture(scope="module")
def api_schema(fuzz_server):
    return schemathesis.openapi.from_url(f"{fuzz_server.base}/openapi.json")


# Every operation of the schema (a test below keeps this list whole). Operations with inputs are
# fuzzed with valid and with invalid data; those without inputs have no invalid data to send.
OPERATIONS = [
    ("GET", "/api/v1/models"), ("POST", "/api/v1/attention"), ("POST", "/api/v1/attention/summary"),
    ("POST", "/api/v1/trace"), ("POST", "/api/v1/toy"), ("POST", "/api/v1/toy/backward"), ("POST", "/api/v1/flash"),
    ("POST", "/api/v1/sequence/reach"),
    ("POST", "/api/v1/aggregate"), ("POST", "/api/v1/metrics"), ("POST", "/api/v1/contributions"),
    ("POST", "/api/v1/lens"), ("POST", "/api/v1/logit-attribution"), ("POST", "/api/v1/generate"),
    ("GET", "/api/v1/positions"), ("GET", "/api/v1/cost"),
    ("POST", "/api/v1/attribution"), ("POST", "/api/v1/attribution/continuation"), ("POST", "/api/v1/token"),
    ("POST", "/api/v1/patch"),
    ("POST", "/api/v1/edit/effect"),
    ("POST", "/api/v1/iris/train"), ("GET", "/api/v1/iris/train/{job}/events"), ("DELETE", "/api/v1/iris/train/{job}"),
    ("POST", "/api/v1/iris/predict"), ("GET", "/api/v1/iris/data"),
    ("POST", "/api/v1/labs/induction/train"), ("GET", "/api/v1/labs/induction/train/{job}/events"),
    ("DELETE", "/api/v1/labs/induction/train/{job}"), ("POST", "/api/v1/labs/seq2seq/train"),
    ("GET", "/api/v1/labs/seq2seq/train/{job}/events"), ("DELETE", "/api/v1/labs/seq2seq/train/{job}"),
    ("POST", "/api/v1/labs/seq2seq/predict"), ("POST", "/api/v1/labs/informer/train"),
    ("GET", "/api/v1/labs/informer/train/{job}/events"), ("DELETE", "/api/v1/labs/informer/train/{job}"),
    ("POST", "/api/v1/labs/informer/watch"), ("GET", "/api/v1/labs/informer/series"),
    ("POST", "/api/v1/labs/glimpse/train"), ("GET", "/api/v1/labs/glimpse/train/{job}/events"),
    ("DELETE", "/api/v1/labs/glimpse/train/{job}"),
    ("POST", "/api/v1/labs/lm/train"), ("GET", "/api/v1/labs/lm/train/{job}/events"),
    ("DELETE", "/api/v1/labs/lm/train/{job}"), ("GET", "/api/v1/labs/lm/models"),
    ("DELETE", "/api/v1/labs/lm/models/{model}"), ("GET", "/lm"),
    ("GET", "/healthz"), ("GET", "/"), ("GET", "/steps"), ("GET", "/toy"), ("GET", "/flash"), ("GET", "/positions"),
    ("GET", "/sequence"),
    ("GET", "/iris"), ("GET", "/induction"), ("GET", "/seq2seq"), ("GET", "/informer"), ("GET", "/glimpse"),
    ("GET", "/cost"),
    ("GET", "/compare"),
    ("GET", "/learn"), ("GET", "/learn/{chapter}"),
    ("GET", "/api/v1/corpus"), ("GET", "/api/v1/corpus/top"), ("GET", "/api/v1/corpus/pattern"),
    ("GET", "/api/v1/corpus/heads"), ("GET", "/corpus"),
]
TRAIN = {("POST", "/api/v1/iris/train"), ("POST", "/api/v1/labs/induction/train"),
         ("POST", "/api/v1/labs/seq2seq/train"), ("POST", "/api/v1/labs/informer/train"),
         ("POST", "/api/v1/labs/glimpse/train"), ("POST", "/api/v1/labs/lm/train")}
# Operations on a job: the fuzzer never holds the id of a job the server made, so each schema-valid
# request is a documented 404 (unknown_job); the API tests (tests/api/test_iris.py, test_labs.py) cover real jobs.
ON_A_JOB = {("GET", "/api/v1/iris/train/{job}/events"), ("DELETE", "/api/v1/iris/train/{job}"),
            ("POST", "/api/v1/iris/predict"), ("GET", "/api/v1/labs/induction/train/{job}/events"),
            ("DELETE", "/api/v1/labs/induction/train/{job}"), ("GET", "/api/v1/labs/seq2seq/train/{job}/events"),
            ("DELETE", "/api/v1/labs/seq2seq/train/{job}"), ("POST", "/api/v1/labs/seq2seq/predict"),
            ("GET", "/api/v1/labs/informer/train/{job}/events"), ("DELETE", "/api/v1/labs/informer/train/{job}"),
            ("POST", "/api/v1/labs/informer/watch"), ("GET", "/api/v1/labs/glimpse/train/{job}/events"),
            ("DELETE", "/api/v1/labs/glimpse/train/{job}"), ("GET", "/api/v1/labs/lm/train/{job}/events"),
            ("DELETE", "/api/v1/labs/lm/train/{job}"),
            # the fuzzer holds no trained model's id: each schema-valid delete is a documented 404 (unknown_model)
            ("DELETE", "/api/v1/labs/lm/models/{model}")}
# The corpus routes: the fuzzed server has no corpus, so each request is a documented 409 (no_corpus), invalid
# data too (the corpus is looked for first); tests/api/test_corpus_routes.py covers a served index.
WITHOUT_A_CORPUS = {("GET", "/api/v1/corpus/top"), ("GET", "/api/v1/corpus/pattern"), ("GET", "/api/v1/corpus/heads")}
WITH_INPUTS = {op for op in OPERATIONS if op[0] == "POST"} | ON_A_JOB | {("GET", "/api/v1/positions"),
                                                                         ("GET", "/api/v1/cost"),
                                                                         ("GET", "/api/v1/labs/informer/series"),
                                                                         ("GET", "/learn/{chapter}")}
WITH_INPUTS |= WITHOUT_A_CORPUS
# Operations with only a few valid requests: /learn/{chapter} has sixteen (1 to 16), all sent when fuzzing positively;
# fuzzed negatively, any other chapter is the path's page answered 404.
FEW_VALID = {("GET", "/learn/{chapter}")}
CASES = [(m, p, GenerationMode.POSITIVE) for m, p in OPERATIONS] + [
    (m, p, GenerationMode.NEGATIVE) for m, p in OPERATIONS if (m, p) in WITH_INPUTS
]


@pytest.mark.parametrize("method, path, mode", CASES, ids=[f"{m} {p} {g.value}" for m, p, g in CASES])
def test_api_conforms_to_its_schema(api_schema, fuzz_server, method, path, mode):
    operation = api_schema[path][method]
    costly = mode is GenerationMode.POSITIVE and (method, path) in COSTLY_VALID
    count = COSTLY_VALID[(method, path)] if costly else EXAMPLES_PER_OPERATION

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(examples(count), database=None, suppress_health_check=list(HealthCheck))
    def fuzz(case):
        response = case.call_and_validate(base_url=fuzz_server.base, checks=FUZZ_CHECKS)
        calls.append(response.status_code)
        if (method, path) in TRAIN and response.status_code == 202:  # a real training started: stop it at once
            stopped = httpx.delete(f"{fuzz_server.base}{path}/{response.json()['job']}", timeout=30)
            assert stopped.status_code == 204

    calls = []
    fuzz()
    if (method, path) in FEW_VALID and mode is GenerationMode.POSITIVE:
        assert len(set(calls)) == 1 and len(calls) >= 12  # every chapter, answered 200
    elif (method, path) in WITH_INPUTS:  # operations without inputs have fewer distinct requests to send
        assert len(calls) >= count
    if mode is GenerationMode.POSITIVE and (method, path) in WITH_INPUTS - ON_A_JOB - WITHOUT_A_CORPUS:
        accepted = 202 if (method, path) in TRAIN else 200
        assert accepted in calls, f"no schema-valid request to {path} was answered {accepted}"


def test_every_operation_is_fuzzed(api_schema):
    in_schema = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert in_schema == set(OPERATIONS)


def test_every_check_runs():
    names = {c.__name__ for c in FUZZ_CHECKS}
    assert {"not_a_server_error", "status_code_conformance", "response_schema_conformance",
            "content_type_conformance", "rejecting_with_documented_rules", "accepting_only_documented_rules"} <= names
    assert len(FUZZ_CHECKS) == len(CHECKS.get_all())  # the two data checks only wrapped, nothing dropped


def _answer(detail, *errors):
    return {"detail": detail, "errors": [{"loc": loc, "msg": msg, "type": type_} for loc, msg, type_ in errors]}


@pytest.mark.parametrize(
    "status, body, rule",
    [
        (404, _answer("Unknown model 'x'; use one of: minilm.",
                      (["body", "model"], "Unknown model 'x'; use one of: minilm", "unknown_model")), "unknown_model"),
        (422, _answer("values: x.", (["body", "values"], "keys have 2 rows but values have 1", "toy_value_rows")),
         "toy_value_rows"),
        (422, _answer("layers.0: Input should be a valid integer",
                      (["body", "layers", "0"], "Input should be a valid integer", "int_type"),
                      (["body", "layers", "1"], "Input should be a valid integer", "int_type")), "int_type"),
        # not documented rules: refused as positive_data_acceptance would
        (422, _answer("text: must not be blank", (["body", "text"], "must not be blank", "value_error")), None),
        (422, _answer("layers.0: ...", (["body", "layers", "0"], "Input should be a valid integer",
                                        "int_type"), (["body", "text"], "must not be blank", "value_error")),
         None),  # one undocumented error is enough to refuse
        (422, _answer("Unknown model", (["body", "model"], "Unknown model 'x'; use one of: minilm", "unknown_model")),
         None),  # the documented status of unknown_model is 404
        (422, _answer("layers [7]", (["body", "layers", "1"], "layers [7] is wrong", "index_out_of_range")),
         None),  # the message does not name the range
        (422, _answer("x", (["body", "text"], "text is odd", "toy_odd_d_model")), None),  # not a toy field
        (422, _answer("d_model is 7.", (["query", "d_model"], "d_model is 7; rope pairs dimensions, so d_model must "
                                        "be even (send 6 or 8)", "positions_odd_d_model")), "positions_odd_d_model"),
        (422, _answer("x", (["body", "d_model"], "must be even", "positions_odd_d_model")), None),  # not a query
        (422, _answer("x", (["body", "queries", "0", "0"], "too big", "toy_magnitude")), None),  # a schema rule
        (422, {"detail": "x"}, None),
    ],
)
def test_only_documented_rules_are_excused(status, body, rule):
    assert documented_rule(status, body) == rule


def _routes(routes):
    """Every route, also inside included routers (FastAPI >= 0.16x keeps them as router objects)."""
    for route in routes:
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from _routes(inner.routes)  # this app includes its routers without a prefix
        else:
            yield route


def test_every_api_route_is_in_the_schema(fuzz_server):
    documented = httpx.get(f"{fuzz_server.base}/openapi.json").json()["paths"]
    routes = {(route.path, method) for route in _routes(create_app().routes)
              for method in getattr(route, "methods", ()) if route.path.startswith("/api/") or route.path == "/healthz"}
    assert {path for path, _ in routes} >= {"/api/v1/models", "/api/v1/attention", "/api/v1/toy", "/healthz"}
    for path, method in routes:
        if method != "HEAD":
            assert method.lower() in documented.get(path, {}), f"{method} {path} is not in the OpenAPI schema"


def test_no_server_error_after_fuzzing(fuzz_server):
    assert "Traceback" not in fuzz_server.output()
    assert httpx.get(f"{fuzz_server.base}/healthz").status_code == 200
