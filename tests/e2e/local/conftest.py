"""The tests in this folder open their pages on the local-models server (../conftest.py local_models_server:
MiniLM, "tiny-bert" and "tiny-gpt2"): these fixtures stand in for the default server's."""

from __future__ import annotations

import httpx
import pytest


@pytest.fixture
def live_server(local_models_server) -> str:
    """conftest's browser_log checks that every request went to this server: here, the local-models one."""
    return local_models_server.base


@pytest.fixture(scope="session")
def local_context(open_context, local_models_server):
    """One browser whose relative URLs open on the local-models server (../conftest.py open_context)."""
    context = open_context(local_models_server.base)
    yield context
    context.close()


@pytest.fixture
def context(local_context):
    return local_context


@pytest.fixture(scope="module")
def local_api(local_models_server):
    with httpx.Client(base_url=local_models_server.base, trust_env=False, timeout=60) as client:
        yield client
