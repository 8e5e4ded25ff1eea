"""The induction-head lab at its defaults, over several seeds: how long until the circuit forms.

Each seed trains model/lab/induction.py's two-layer attention-only transformer at the default settings, as a
job of the server would (one intra-op thread), evaluating every 50 steps. Reported per seed: the step and the
seconds at which the repeated half's loss first falls below half of ln(vocab) (the drop), and at which every
target holds at once (the repeated half's loss at most 0.5 nats, the first half's within 0.1 of ln(vocab), a
layer-1 head with an induction score of at least 0.6, a layer-0 head with a previous-token score of at least
0.6), and the numbers at the last step. Goal: the targets within 3 minutes.

    .venv/bin/python -m bench.induction [SEEDS]
"""

from __future__ import annotations

import math
import sys

from bench.common import print_table, verdict

SEEDS = 5
GOAL_S = 180.0
LOSS_GOAL, SCORE_GOAL, FIRST_HALF_MARGIN = 0.5, 0.6, 0.1


def targets_met(report, ln_vocab: float) -> bool:
    return (report.loss_repeated_half <= LOSS_GOAL and abs(report.loss_first_half - ln_vocab) <= FIRST_HALF_MARGIN
            and float(report.induction[1].max()) >= SCORE_GOAL and float(report.previous_token[0].max()) >= SCORE_GOAL)


def one_seed(seed: int) -> list[object]:
    from app.jobs.threads import one_intra_op_thread
    from model.lab.induction import EvalReport, InductionConfig, Training

    one_intra_op_thread()
    config = InductionConfig(seed=seed)
    ln_vocab = math.log(config.vocab)
    drop = met = last = None
    for report in Training(config).run():
        if not isinstance(report, EvalReport):
            continue
        last = report
        if drop is None and report.loss_repeated_half < ln_vocab / 2:
            drop = report
        if met is None and targets_met(report, ln_vocab):
            met = report
    assert last is not None

    def when(r) -> str:
        return "never" if r is None else f"{r.step} ({r.seconds:.0f} s)"

    return [seed, when(drop), when(met), f"{last.loss_first_half:.2f}", f"{last.loss_repeated_half:.3f}",
            f"{float(last.previous_token[0].max()):.2f}", f"{float(last.induction[1].max()):.2f}",
            f"{last.seconds:.0f}", verdict(met is not None and met.seconds <= GOAL_S)]


def run(seeds: int = SEEDS) -> str:
    from model.lab.induction import InductionConfig

    rows = [one_seed(seed) for seed in range(seeds)]
    c = InductionConfig()
    return print_table(
        f"The induction-head lab at its defaults ({c.vocab} tokens, R R of {c.length}, {c.layers} layers x {c.heads} "
        f"heads, d_model {c.d_model}, {c.steps} steps of {c.batch} sequences, Adam {c.lr:g}): step (seconds) of the "
        "drop and of all targets; the last step's numbers",
        ["seed", "drop below ln(V)/2", "targets met", "first-half loss", "repeated-half loss",
         "best layer-0 previous-token", "best layer-1 induction", "seconds", f"targets <= {GOAL_S:.0f} s"], rows)


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else SEEDS)
