import pytest

from bench.common import Server


@pytest.fixture(scope="session")
def live_server():
    """One real `attnscope serve` on a loopback port, shared by the service tests that only send requests."""
    with Server() as server:
        yield server
