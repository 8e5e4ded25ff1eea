"""The short form of the soak (bench/soak.py; `python -m bench.soak --minutes 30` is the long one): every operation
from separate client processes, streams left early, the labs trained and cancelled. No memory threshold here (the
benchmark measures memory); only that nothing fails and the answers equal a fresh server's."""

from bench import soak


def test_short_soak_has_no_errors_no_5xx_and_the_answers_of_a_fresh_server():
    ok, report = soak.run(soak.SMOKE_MINUTES, smoke=True, maps_clients=1)
    assert ok, report
