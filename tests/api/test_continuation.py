"""POST /api/v1/attribution/continuation through HTTP: the answer equals model/analysis/continuation.py called on the
same checkpoint (its numbers are tested against transformers in tests/model/test_continuation.py), and every refusal
names the rule and the field to change."""

from __future__ import annotations

import pytest

from model.analysis import continuation
from model.checkpoints import load

TEXT = "The cat sat on the"
PATH = "/api/v1/attribution/continuation"


def test_the_answer_equals_the_model_function(local_client, local_dirs):
    r = local_client.post(PATH, json={"text": TEXT, "continuation": {"new_tokens": 3}, "steps": 32})
    assert r.status_code == 200, r.text
    got = r.json()
    model = load(local_dirs["gpt2"])
    found = continuation.attribute_continuation(model, model.tokenizer.encode(TEXT), new_tokens=3, steps=32)
    assert (got["model"], got["generated"], got["output_name"], got["baseline"]) == (
        "tiny-gpt2", True, "log_probability", "mean")
    assert [t["id"] for t in got["continuation"]] == list(found.ids[found.prompt:])
    assert [t["index"] for t in got["continuation"]] == [5, 6, 7]
    for row, want in zip(got["rows"], found.rows, strict=True):
        assert row["scores"] == pytest.approx(list(want.scores), rel=1e-6, abs=1e-9)
        assert len(row["scores"]) == want.index
        assert row["output"] == pytest.approx(want.output, abs=1e-7)
        assert row["completeness"]["ok"] is want.completeness.ok and row["warning"] == want.warning
    given = local_client.post(PATH, json={"text": TEXT, "continuation": {"ids": list(found.ids[found.prompt:])},
                                          "steps": 32}).json()
    assert not given["generated"] and [row["scores"] for row in given["rows"]] == [row["scores"] for row in got["rows"]]


@pytest.mark.parametrize("body, kind, loc", [
    ({"text": TEXT, "continuation": {"ids": [10 ** 6]}}, "continuation_out_of_range",
     ["body", "continuation", "ids", "0"]),
    ({"text": TEXT, "continuation": {"new_tokens": 62}}, "continuation_too_long",
     ["body", "continuation", "new_tokens"]),
    ({"text": TEXT, "model": "tiny-bert", "continuation": {"new_tokens": 1}}, "no_lm_head", ["body", "model"]),
    ({"text": TEXT, "continuation": {"new_tokens": 1}, "baseline": "pad"}, "baseline_unavailable",
     ["body", "baseline"]),
    ({"text": TEXT, "continuation": {"new_tokens": 1}, "baseline": {"text": "a"}}, "literal_error",
     ["body", "baseline"]),
    ({"text": TEXT, "continuation": {"new_tokens": continuation.MAX_CONTINUATION + 1}}, "less_than_equal", None),
    ({"text": TEXT, "continuation": {"ids": []}}, "too_short", None),
    ({"text": TEXT, "continuation": {}}, "continuation_type", ["body", "continuation"]),
    ({"text": TEXT, "continuation": {"ids": [3, 4.0]}}, "int_type", ["body", "continuation", "given", "ids", "1"]),
])
def test_refusals(local_client, body, kind, loc):
    r = local_client.post(PATH, json=body)
    assert r.status_code == 422, r.text
    (error,) = r.json()["errors"]  # one error: the continuation's field says which kind it is
    assert error["type"] == kind
    if loc is not None:
        assert error["loc"] == loc


def test_work_over_the_budget_is_refused_before_any_work(local_dirs):
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings

    settings = Settings(allowed_hosts=["testserver"], model_paths=[local_dirs["gpt2"]], work_budget=2.0)  # 32 steps fit
    with TestClient(create_app(settings)) as client:
        r = client.post(PATH, json={"text": TEXT, "continuation": {"new_tokens": 20}, "steps": 512})
    assert r.status_code == 422, r.text
    error = r.json()["errors"][0]
    assert (error["type"], error["loc"], error["ctx"]["budget_gflop"]) == ("work_too_large", ["body", "steps"], 2.0)
    assert 32 <= error["ctx"]["largest"] < 128
