"""The tests in this folder open their pages on the local-models server (../conftest.py local_models_server:
MiniLM, "tiny-bert" and "tiny-gpt2"): these fixtures stand in for the default server's. The Llama family's tests
share one server of small Llama, Mistral and Gemma 2 checkpoints (llama_family_server)."""

from __future__ import annotations

import os

import httpx
import pytest

from bench.common import Server


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


@pytest.fixture(scope="session")
def llama_family_server(llama_dirs):
    """A real server of MiniLM and small random Llama ("tiny-llama": 4 query heads sharing 2 key-value heads, RoPE
    with llama3 scaling), Mistral (a sliding window) and Gemma 2 checkpoints (tests/conftest.py llama_dirs)."""
    server = Server(ATTNSCOPE_MODEL_PATHS=os.pathsep.join(str(llama_dirs[kind]) for kind in ("llama", "mistral", "gemma2")))
    try:
        server.start()
    except RuntimeError as exc:  # fail, never skip
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()
