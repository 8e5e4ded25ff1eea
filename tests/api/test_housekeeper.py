"""When the server gives freed heap pages back to the OS (app/hub.py Housekeeper): after enough evicted bytes,
at once when no other job waits, else once the model worker has been idle; never while a job runs.

The trim itself (malloc_trim) is recorded by a stand-in so the schedule can be checked; that it keeps the
server's memory flat is measured on a real server in tests/service/test_faults.py.
"""

from __future__ import annotations

import threading

import pytest

import app.hub as hub
from app.hub import TRIM_AFTER_EVICTING, Housekeeper
from app.memory import release_free_memory

WAIT_S = 10.0  # a bound on waiting for the timer thread, not a timing assertion


class Trims:
    """Counts the trims the housekeeper asks for; `happened` is set at each."""

    def __init__(self) -> None:
        self.count = 0
        self.collected = 0
        self.happened = threading.Event()

    def __call__(self, collect: bool = False) -> None:
        self.count += 1
        self.collected += collect
        self.happened.set()


@pytest.fixture
def trims(monkeypatch) -> Trims:
    recorder = Trims()
    monkeypatch.setattr(hub, "release_free_memory", recorder)
    return recorder


def test_the_real_trim_runs_and_frees_what_only_a_cycle_held():
    """A tensor held only by a reference cycle (as a traceback holds a forward's frames) is freed by the idle
    trim's collection, however long the collector's own thresholds would have left it."""
    import gc
    import weakref

    import torch

    gc.disable()  # the automatic collector must not be what frees it
    try:
        node: dict = {"tensor": torch.zeros(1024)}
        node["self"] = node
        held = weakref.ref(node["tensor"])
        del node
        assert held() is not None  # only the cycle holds it
        release_free_memory(collect=True)  # glibc's malloc_trim, or nothing elsewhere: it must not raise
        assert held() is None
    finally:
        gc.enable()
    release_free_memory()


def test_nothing_is_trimmed_below_the_threshold(trims):
    keeper = Housekeeper(queued=lambda: 0, idle_s=0.01)
    keeper.evicted(TRIM_AFTER_EVICTING - 1)
    keeper.after_job()
    assert trims.count == 0


def test_a_trim_runs_at_once_after_a_job_when_nothing_waits(trims):
    keeper = Housekeeper(queued=lambda: 1)  # the job that just finished is still counted
    keeper.evicted(TRIM_AFTER_EVICTING)
    keeper.after_job()
    assert (trims.count, trims.collected) == (1, 0)  # on the worker's path: no garbage collection
    keeper.after_job()  # the evicted bytes were given back: nothing more to do
    assert trims.count == 1


def test_with_a_job_waiting_the_trim_waits_for_the_idle_worker(trims):
    queued = [2]  # this job and one behind it
    keeper = Housekeeper(queued=lambda: queued[0], idle_s=0.05)
    keeper.evicted(TRIM_AFTER_EVICTING)
    keeper.after_job()
    assert trims.count == 0  # not on the waiting job's path
    queued[0] = 0
    assert trims.happened.wait(WAIT_S), "the idle timer never trimmed"
    assert (trims.count, trims.collected) == (1, 1)  # idle: the trim collects cycles first
    keeper.close()


def test_the_timer_tries_again_while_the_worker_is_busy(trims):
    queued = [2]
    keeper = Housekeeper(queued=lambda: queued[0], idle_s=0.02)
    keeper.evicted(TRIM_AFTER_EVICTING)
    keeper.after_job()
    queued[0] = 1  # a job is running when the timer fires: it re-arms
    assert not trims.happened.wait(0.2)
    queued[0] = 0
    assert trims.happened.wait(WAIT_S), "the re-armed timer never trimmed"
    assert trims.count == 1
    keeper.close()


def test_close_cancels_a_pending_trim(trims):
    keeper = Housekeeper(queued=lambda: 2, idle_s=0.05)
    keeper.evicted(TRIM_AFTER_EVICTING)
    keeper.after_job()
    keeper.close()
    assert not trims.happened.wait(0.3)
    assert trims.count == 0


def test_a_later_job_trims_first_and_the_timer_finds_nothing_left(trims):
    queued = [2]
    keeper = Housekeeper(queued=lambda: queued[0], idle_s=0.1)
    keeper.evicted(TRIM_AFTER_EVICTING)
    keeper.after_job()
    keeper.after_job()  # still a job behind: the timer is armed again, not twice
    queued[0] = 1  # the last job ends with nothing behind it: the trim runs at once
    keeper.after_job()
    assert trims.count == 1
    trims.happened.clear()
    assert not trims.happened.wait(0.5)  # the timer fired, found nothing evicted since, and did nothing
    assert trims.count == 1


def test_after_an_analysis_the_trim_waits_until_both_lanes_are_idle(trims):
    queued = [1]  # a view's forward runs on the other lane
    keeper = Housekeeper(queued=lambda: queued[0], idle_s=0.05)
    keeper.after_analysis()  # no evicted bytes: the analysis's own scratch buffers are the reason
    assert not trims.happened.wait(0.2) and trims.count == 0  # never while a job runs
    queued[0] = 0
    assert trims.happened.wait(WAIT_S), "the idle timer never trimmed after the analysis"
    assert trims.count == 1
    keeper.close()
