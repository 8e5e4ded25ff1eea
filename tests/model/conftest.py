import pytest

from model.checkpoints import LoadedModel, load


@pytest.fixture(scope="session")
def minilm() -> LoadedModel:
    return load("minilm")
