"""Background training jobs of the labs (app/jobs/labs.py: the Iris transformer, the induction-head lab): bounded,
cancellable, their events kept for late clients, and the same for every worker process of a server.

The jobs live in a directory, the store: Settings.jobs_dir, which `attnscope serve --workers N` creates
for its worker processes, or a private temporary one when none is set (one process). Each job is a
subdirectory named by its id:

    settings.json  its lab, the lab's settings, when it started, and the process that trains it (host, pid)
    events         one line per event, "<id> <name> <JSON data>", appended by that process only
    latest.bin     the parameters after the latest evaluation, rewritten after each one (a lab's /predict)
    cancel         created when a client asks to cancel

The process that accepts a lab's POST …/train trains the job on a thread of its own, never on the hub's model
worker, so attention requests keep being answered while a job trains. Any process streams a job's events
by following its file (a client that connects late, or reconnects with Last-Event-ID, gets them from the
start, or from that id on), cancels it by creating `cancel` (the training loop looks for it before each
batch) and predicts from latest.bin. At most `max_running` jobs train at once across the processes
sharing the store (more: JobsBusy, answered 429 with an estimate of when one ends); the `keep` most
recently started finished jobs stay, older ones are removed and their ids remembered in `dropped/`
(UnknownJob with evicted=True: "train again"). Starting a job and removing old ones hold an exclusive
flock on `lock`, so two workers never both take the last free place. A job whose training process has
died (a worker killed, say by the OOM killer) gets an `error` event from the next process that looks
at it: its clients are not left waiting and it no longer counts as running.
"""

from .registry import KEEP_FINISHED, MAX_RUNNING, JobRegistry
from .threads import one_intra_op_thread

__all__ = ["KEEP_FINISHED", "MAX_RUNNING", "JobRegistry", "one_intra_op_thread"]
