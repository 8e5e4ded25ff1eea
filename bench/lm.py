"""The small GPT grown from a text (model/lab/lm.py) at its defaults: three seeds on an English and a Chinese text.

The texts are the project's own prose (MIT, shipped with it): the string values (not the keys) of
static/js/i18n/en.js then learn-en.js, and of zh.js then learn-zh.js, one value a line, cut to the first
TEXT_BYTES bytes of UTF-8 (`i18n_text`; en.js's and zh.js's values are 129 KB each, so the 100 KB cut keeps only
theirs, and a shorter limit the first values only). Each run trains at LmSettings' defaults on one intra-op
thread, as the server's job does, and reports its wall seconds and final held-out loss beside the text's unigram
and bigram entropies (nats per character). Goal: every run's val loss at most TARGET × the unigram entropy,
within GOAL_S seconds.

    .venv/bin/python -m bench.lm [--seeds 3] [--out static/data/lm-bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import time
from dataclasses import asdict
from pathlib import Path

from bench.common import print_table, verdict

ROOT = Path(__file__).resolve().parent.parent
I18N = ROOT / "static" / "js" / "i18n"
SOURCES = {"en": ("en.js", "learn-en.js"), "zh": ("zh.js", "learn-zh.js")}
TEXT_BYTES = 100_000
TARGET = 0.75  # the val loss goal, a fraction of the unigram entropy
GOAL_S = 180.0
SEEDS = 3
OUT = ROOT / "static" / "data" / "lm-bench.json"

# One entry of an i18n module: "key": "value", each a JavaScript string literal in double quotes.
ENTRY = re.compile(r'^\s*"(?:[^"\\]|\\.)*"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,?\s*$')


def string_values(source: str) -> list[str]:
    """The values of the `"key": "value",` lines of an i18n module, their escapes decoded (\\" \\n \\u…)."""
    values = []
    for line in source.splitlines():
        found = ENTRY.match(line)
        if found:
            literal = found.group(1).replace("\\'", "'")  # JavaScript's \' is not JSON's
            values.append(json.loads(f'"{literal}"'))
    return values


def i18n_text(language: str, limit: int = TEXT_BYTES) -> str:
    """The language's i18n values, one a line, cut to at most `limit` bytes of UTF-8 (at a character)."""
    values = [v for name in SOURCES[language] for v in string_values((I18N / name).read_text(encoding="utf-8"))]
    text = "\n".join(values) + "\n"
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def one_run(language: str, seed: int) -> dict[str, object]:
    from app.jobs.threads import one_intra_op_thread
    from model.lab.lm import LmSettings, LmTraining

    one_intra_op_thread()
    text = i18n_text(language)
    training = LmTraining(text, LmSettings(seed=seed))
    started = time.perf_counter()
    last = training.run(lambda e: print(f"  {language} seed {seed} step {e.step}: train {e.train_loss:.3f} "
                                        f"val {e.val_loss:.3f} ({e.seconds:.0f} s) {e.sample[:40]!r}", flush=True))
    seconds = time.perf_counter() - started
    goal = TARGET * training.unigram_entropy
    return {"text": language, "seed": seed, "bytes": len(text.encode("utf-8")), "characters": len(text),
            "vocabulary": len(training.vocabulary), "seconds": round(seconds, 1),
            "train_loss": round(last.train_loss, 4), "val_loss": round(last.val_loss, 4),
            "unigram_entropy": round(training.unigram_entropy, 4), "bigram_entropy": round(training.bigram_entropy, 4),
            "goal": round(goal, 4), "met": last.val_loss <= goal and seconds <= GOAL_S, "sample": last.sample}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--note", default="", help="what else ran on the machine meanwhile")
    args = parser.parse_args()
    from model.lab.lm import LmSettings

    runs = [one_run(language, seed) for language in SOURCES for seed in range(args.seeds)]
    settings = LmSettings()
    rows = [[r["text"], r["seed"], r["characters"], r["vocabulary"], r["seconds"], r["train_loss"], r["val_loss"],
             r["unigram_entropy"], r["bigram_entropy"], r["goal"], verdict(bool(r["met"]))] for r in runs]
    table = print_table(
        f"At the defaults ({settings.layers} layers x {settings.heads} heads, d_model {settings.d_model}, context "
        f"{settings.context}, batch {settings.batch}, {settings.steps} steps, lr {settings.lr}), one thread; "
        f"losses and entropies in nats per character; goal: val ≤ {TARGET} × unigram within {GOAL_S:.0f} s",
        ["text", "seed", "characters", "vocabulary", "seconds", "train loss", "val loss", "unigram", "bigram",
         "goal", "met"], rows)
    body = {
        "what": "model/lab/lm.py at its defaults on the project's own English and Chinese prose (bench/lm.py)",
        "command": "python -m bench.lm --out static/data/lm-bench.json",
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(), "threads": 1,
                    "load_average_end": [round(x, 2) for x in os.getloadavg()], "note": args.note},
        "settings": asdict(settings), "target": TARGET, "goal_s": GOAL_S,
        "units": "nats per character", "runs": runs, "table": table,
        "met": all(bool(r["met"]) for r in runs),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
