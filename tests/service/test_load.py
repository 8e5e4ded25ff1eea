"""The short form of the mixed load test (the long form runs under `make bench`; memory over time is the soak's,
bench/soak.py)."""

from bench.common import Server
from bench.load import run_load


def test_short_mixed_load_has_no_errors_and_every_answer_computed_alike():
    # no cache: every answer is a forward computed while 32 clients' requests interleave on the server, so equal
    # answers to equal requests mean the concurrency changed nothing (not that the cache handed out a copy)
    with Server(ATTNSCOPE_CACHE_BYTES="0") as server:
        # a number of requests, not a rate: on a busy machine the run takes longer instead of failing
        result = run_load(server, clients=32, seconds=8, warmup=3, at_least=200)
    assert result.requests >= 200
    assert result.errors == []
    assert result.mismatches == []
