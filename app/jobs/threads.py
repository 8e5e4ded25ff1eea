"""A job's thread runs torch with one OpenMP and MKL thread of its own. The training's
tensors are tiny (16 x 4 x 8), and with two intra-op threads every matrix product and softmax
paid a fork and join: measured on this 2-core machine while other processes kept it busy, 60
epochs took 20-73 s with two threads and 1.2-2.1 s with one. torch.set_num_threads would also
change the default of every thread started later, so the job thread sets only its own count,
through the OpenMP and MKL libraries torch is linked with (`one_intra_op_thread`).
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import torch


def one_intra_op_thread() -> bool:
    """Make torch on the calling thread use one OpenMP and one MKL thread; True when it worked.

    torch's OpenMP thread count is the calling thread's own setting (omp_set_num_threads), once torch
    has set it up for the thread (the torch.get_num_threads() call); MKL's is
    MKL_Set_Num_Threads_Local. Without the libraries (another torch build) nothing changes: training
    is then only slower when the machine is busy.
    """
    torch.get_num_threads()  # torch initialises this thread's count first, else it would overwrite ours
    lib = Path(torch.__file__).resolve().parent / "lib"
    try:
        ctypes.CDLL(str(lib / "libgomp.so.1")).omp_set_num_threads(1)
        ctypes.CDLL(str(lib / "libtorch_cpu.so")).MKL_Set_Num_Threads_Local(1)
    except (OSError, AttributeError):
        return False
    return torch.get_num_threads() == 1


_LIGHT = threading.local()


def light_thread() -> None:
    """Once per thread, one_intra_op_thread: for every thread but the model worker that runs torch ops (the event
    loop, anyio's worker threads picking and pooling maps). A second OpenMP team of two threads beside the model
    worker's makes libgomp count more threads than cores and stop spinning between parallel regions, and every
    later forward pays the wake-ups: after one /api/v1/attention/summary (pooled on an anyio thread) each token
    of a 0.5B model's generation took 120 ms instead of 93."""
    if not getattr(_LIGHT, "done", False):
        one_intra_op_thread()
        _LIGHT.done = True



class ViewsFirst:
    """Where work that can wait gives way to the views: a long analysis between two of its slices, a lab's training
    between two batches. While a view's forward waits for the interactive lane or runs on it, `give_way` waits,
    at most `max_wait_s` at a time, so that the long work still advances under a steady stream of views. The work
    that gave way runs on its own thread with one intra-op thread, so a view never queues behind it: at worst it
    shares the cores with the one slice or batch under way (measured in bench/fair.py)."""

    def __init__(self, max_wait_s: float = 0.25) -> None:
        self.max_wait_s = max_wait_s
        self._views = 0  # view jobs waiting or running
        self._changed = threading.Condition()
        self.waits = 0  # times some work gave way (for /healthz)

    def view_queued(self) -> None:
        with self._changed:
            self._views += 1

    def view_done(self) -> None:
        with self._changed:
            self._views -= 1
            if self._views == 0:
                self._changed.notify_all()

    def give_way(self) -> None:
        with self._changed:
            if self._views:
                self.waits += 1
                self._changed.wait_for(lambda: self._views == 0, timeout=self.max_wait_s)
