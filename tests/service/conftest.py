import pytest

from bench.common import Server

from ..checkpoints import make_checkpoint


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """One real `attnscope serve` on a loopback port, shared by the service tests that only send requests;
    besides the packaged model it serves a tiny GPT-2 checkpoint ("tiny-gpt2"), so /api/v1/lens has a model."""
    gpt2 = make_checkpoint("gpt2", tmp_path_factory.mktemp("service-models") / "tiny-gpt2")
    with Server(ATTNSCOPE_MODEL_PATHS=str(gpt2)) as server:
        yield server
