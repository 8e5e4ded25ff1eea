"""The encoder-decoder lab at its defaults, over several seeds: how fast attention learns each task, and how it aligns.

Each seed trains model/lab/seq2seq.py's GRU encoder-decoder with additive attention at the default settings, as
a job of the server would (one intra-op thread), once per task. Reported per seed and task: the step at which
the exact-match rate on the run's 500 held-out examples first reaches 95 % (evaluated every `eval_every` steps),
with the wall seconds and the training thread's CPU seconds until then; the last step's exact match and alignment
share (the attention mass on the right source positions; for reverse, position n − 1 − t). For reverse, the same
defaults without attention are trained for the same CPU seconds as the attention model took (more steps: its steps
are cheaper), and both are scored on 500 further strings of 25-30 letters (the bottleneck's hardest lengths).

Goals: 95 % within 3 minutes of training; on 25-30 letters, attention at least 30 points above no attention; an
alignment share of at least 0.8 at the end. The machine may be shared: the CPU seconds of the training thread are
what a quiet machine's wall clock would show, so the time goal is judged on them, with the wall seconds, the
steps per second and the load average (os.getloadavg, 1 minute, at the end of the run) beside them.

    .venv/bin/python -m bench.seq2seq [SEEDS [FIRST]]     (seeds FIRST .. FIRST + SEEDS - 1; FIRST 0)
"""

from __future__ import annotations

import os
import random
import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from bench.common import print_table, verdict

SEEDS = 5
GOAL_S = 180.0
ACCURACY_GOAL, GAP_GOAL, SHARE_GOAL = 0.95, 0.30, 0.8
LONG_EXAMPLES, LONG_FROM, LONG_TO = 500, 25, 30


@dataclass
class Run:
    """One training run's outcome."""

    training: Any  # model.lab.seq2seq.Training
    reached: tuple[int, float, float] | None  # step, wall s, CPU s of the first report at >= ACCURACY_GOAL
    last: Any  # the last model.lab.seq2seq.EvalReport
    wall_s: float
    cpu_s: float
    steps: int  # steps trained
    load: float


def train(config: Any, cpu_budget_s: float | None = None) -> Run:
    """Trains `config` to its last step, or until the thread's CPU seconds pass cpu_budget_s."""
    from model.lab.seq2seq import CancelledReport, EvalReport, Training

    training = Training(config)
    cpu0, wall0 = time.thread_time(), time.perf_counter()

    def stop() -> bool:
        return cpu_budget_s is not None and time.thread_time() - cpu0 >= cpu_budget_s

    reached = last = None
    steps = config.steps
    for report in training.run(stop):
        if isinstance(report, CancelledReport):
            steps = report.step
        if not isinstance(report, EvalReport):
            continue
        last = report
        if reached is None and report.accuracy >= ACCURACY_GOAL:
            reached = (report.step, time.perf_counter() - wall0, time.thread_time() - cpu0)
    return Run(training, reached, last, time.perf_counter() - wall0, time.thread_time() - cpu0, steps,
               os.getloadavg()[0])


def long_accuracy(run: Run, seed: int) -> float:
    from model.lab.seq2seq import exact_match
    from model.lab.seq2seq_data import draw_reverse

    rng = random.Random(f"bench/seq2seq/long/{seed}")
    examples = [draw_reverse(rng, LONG_FROM, LONG_TO) for _ in range(LONG_EXAMPLES)]
    hits = exact_match(run.training.model, examples)
    return sum(hits) / len(hits)


def when(run: Run) -> str:
    if run.reached is None:
        return "never"
    step, wall, cpu = run.reached
    return f"{step} ({cpu:.0f} s CPU, {wall:.0f} s wall)"


def common(run: Run) -> list[object]:
    share = run.last.alignment_share
    return [when(run), f"{run.last.accuracy:.3f}", "-" if share is None else f"{share:.2f}",
            f"{run.steps / run.wall_s:.1f}", f"{run.cpu_s:.0f} / {run.wall_s:.0f}", f"{run.load:.1f}"]


def meets(run: Run) -> bool:
    share = run.last.alignment_share
    return run.reached is not None and run.reached[2] <= GOAL_S and share is not None and share >= SHARE_GOAL


def run(seeds: int = SEEDS, first: int = 0) -> str:
    from app.jobs.threads import one_intra_op_thread
    from model.lab.seq2seq import Seq2SeqConfig

    one_intra_op_thread()
    reverse_rows, dates_rows = [], []
    for seed in range(first, first + seeds):
        config = Seq2SeqConfig(task="reverse", seed=seed)
        attended = train(config)
        bottleneck = train(replace(config, attention=False, steps=config.steps * 4), cpu_budget_s=attended.cpu_s)
        with_attention, without = long_accuracy(attended, seed), long_accuracy(bottleneck, seed)
        reverse_rows.append([seed, *common(attended), f"{with_attention:.3f}",
                             f"{without:.3f} ({bottleneck.steps} steps)",
                             verdict(meets(attended) and with_attention - without >= GAP_GOAL)])
        print(reverse_rows[-1], flush=True)
        dated = train(Seq2SeqConfig(task="dates", seed=seed))
        dates_rows.append([seed, *common(dated), verdict(meets(dated))])
        print(dates_rows[-1], flush=True)
    config = Seq2SeqConfig()
    settings = (f"hidden {config.hidden}, {config.steps} steps of {config.batch}, Adam {config.lr:g}, "
                f"evaluated every {config.eval_every} steps")
    columns = ["seed", f"step at >= {ACCURACY_GOAL:.0%}", "last exact match", "last alignment share", "steps/s (wall)",
               "CPU s / wall s", "load (1 min)"]
    goals = (f"{ACCURACY_GOAL:.0%} <= {GOAL_S:.0f} s CPU, share >= {SHARE_GOAL}")
    out = print_table(f"The encoder-decoder lab, reverse, at its defaults ({settings}); 25-30 letters: "
                      f"{LONG_EXAMPLES} held-out strings, no attention trained for the same CPU seconds",
                      columns + ["25-30 letters, attention", "25-30 letters, no attention",
                                 f"{goals}, gap >= {GAP_GOAL:.0%}"], reverse_rows)
    out += print_table(f"The encoder-decoder lab, dates, at its defaults ({settings})", columns + [goals], dates_rows)
    return out


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
