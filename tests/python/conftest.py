"""The Python API beside the REST API: the same models loaded by `attnscope.load` and served by the app in this
process (a TestClient on app.main's app), so that a test sends one input to both and compares the answers."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import attnscope
from app.main import create_app
from app.settings import Settings


@pytest.fixture(scope="session")
def minilm() -> attnscope.Model:
    return attnscope.load("minilm")


@pytest.fixture(scope="session")
def gpt2(checkpoint_dirs) -> attnscope.Model:
    return attnscope.load(checkpoint_dirs["gpt2"])


@pytest.fixture(scope="session")
def rest(checkpoint_dirs):
    """The server with MiniLM and the tiny GPT-2 checkpoint ("tiny-gpt2"), reached as a local client is."""
    settings = Settings(model_paths=[checkpoint_dirs["gpt2"]])
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture(scope="session")
def models(minilm, gpt2) -> dict[str, attnscope.Model]:
    return {"minilm": minilm, "tiny-gpt2": gpt2}
