"""The short form of the mixed load test (the long form runs under `make bench`)."""

from bench.common import Server
from bench.load import run_load


def test_short_mixed_load_has_no_errors_same_answers_and_flat_memory():
    with Server() as server:
        # a number of requests, not a rate: on a busy machine the run takes longer instead of failing
        result = run_load(server, clients=32, seconds=8, warmup=3, at_least=200)
    assert result.requests >= 200
    assert result.errors == []
    assert result.mismatches == []
    assert result.rss_end <= result.rss_warm * 1.1
