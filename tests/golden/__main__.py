"""python -m tests.golden DIR: record the golden answers (tests/golden/__init__.py says what they are)."""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from tests.golden import ANSWERS, ask, requests


def rounded(value: Any) -> Any:
    """Floats kept to 9 significant digits (float32 has about 7), so the file stays small; the rounding
    (≤ 5e-9 relative) is far inside GOLDEN_TOLERANCE."""
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, list):
        return [rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def main(argv: list[str]) -> None:
    """Record the golden answers; argv[0]: a directory for the test checkpoints."""
    from fastapi.testclient import TestClient

    from app.main import create_app
    from app.settings import Settings
    from tests.checkpoints import KINDS, make_checkpoint

    root = Path(argv[0])
    dirs = [make_checkpoint(kind, root / f"tiny-{kind}") for kind in KINDS]
    settings = Settings(allowed_hosts=["testserver"], model_paths=dirs)
    with TestClient(create_app(settings)) as client:
        answers = {name: {"method": method, "path": path, "body": body,
                          "answer": rounded(ask(client, method, path, body))}
                   for name, method, path, body in requests()}
    with gzip.open(ANSWERS, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(answers, f, ensure_ascii=False, sort_keys=True)
    print(f"{len(answers)} answers recorded in {ANSWERS}")


main(sys.argv[1:])
