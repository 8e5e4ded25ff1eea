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


def read_lab_events(client, train: str, job: str) -> list[tuple[str, dict]]:
    """Every event of a lab job's stream (`train`: its POST path), to its end: (name, data)."""
    import json

    found, name = [], None
    with client.stream("GET", f"{train}/{job}/events") as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                found.append((name, json.loads(line.removeprefix("data: "))))
    return found


def train_lab(client, train: str, settings: dict) -> tuple[str, list[tuple[str, dict]]]:
    """Start a lab job with `settings` and read its events to the end: (job id, events)."""
    r = client.post(train, json=settings)
    assert r.status_code == 202, r.text
    assert r.json()["events"] == f"{train}/{r.json()['job']}/events"
    return r.json()["job"], read_lab_events(client, train, r.json()["job"])
