import pytest

from bench.common import Server


@pytest.fixture(scope="session")
def live_server(checkpoint_dirs):
    """One real `attnscope serve` on a loopback port, shared by the service tests that only send requests;
    besides the packaged model it serves a tiny GPT-2 checkpoint ("tiny-gpt2"), so /api/v1/lens has a model."""
    with Server(ATTNSCOPE_MODEL_PATHS=str(checkpoint_dirs["gpt2"])) as server:
        yield server
