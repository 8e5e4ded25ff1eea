import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="session")
def client():
    with TestClient(create_app(Settings(allowed_hosts=["testserver"]))) as c:
        yield c


def attention(client, **body):
    return client.post("/api/v1/attention", json=body)


@pytest.fixture(scope="session")
def local_dirs(checkpoint_dirs):
    """The BERT-style and GPT-2-style test checkpoints (tests/conftest.py), served as "tiny-bert" and "tiny-gpt2"."""
    return {kind: checkpoint_dirs[kind] for kind in ("bert", "gpt2")}


@pytest.fixture(scope="session")
def local_client(local_dirs):
    settings = Settings(allowed_hosts=["testserver"], model_paths=list(local_dirs.values()))
    with TestClient(create_app(settings)) as c:
        yield c
