"""Every answer of the golden set (tests/golden) is what it was when recorded: the model layer can be
rearranged without changing a number."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings
from tests.golden import ask, differences, load, requests

ANSWERS = load()


@pytest.fixture(scope="module")
def golden_client(checkpoint_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=list(checkpoint_dirs.values()))
    with TestClient(create_app(settings)) as c:
        yield c


def test_the_set_is_the_recorded_one():
    assert {name for name, *_ in requests()} == set(ANSWERS)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_answer_unchanged(golden_client, name):
    recorded = ANSWERS[name]
    got = ask(golden_client, recorded["method"], recorded["path"], recorded["body"])
    found = differences(recorded["answer"], got, name)
    assert not found, "\n".join(found[:10])


def test_a_changed_number_is_found():
    recorded = ANSWERS["attention minilm 0"]["answer"]
    changed = {**recorded, "attention": [[[[w + 2e-5 for w in row] for row in head] for head in layer]
                                         for layer in recorded["attention"]]}
    assert differences(recorded, changed)
    assert not differences(recorded, recorded)
