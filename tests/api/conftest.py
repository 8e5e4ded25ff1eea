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
