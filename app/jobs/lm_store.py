"""The directory of the models trained on the server (Settings.lm_dir): one checkpoint directory per model, named
by its id ("lm-" and 8 hex digits), as model/lab/lm.py saves it (a GPT-2-shaped Hugging Face checkpoint whose
config.json carries "attnscope": {"trained": true, ...}).

A model is written under a hidden name (".new-<id>") and renamed to its id once complete, so a directory found
under an id is whole; a removed one is renamed away (".old-<id>") before it is deleted, so it is at once no longer
found. The hub loads every kept one at start-up (a trained model survives a restart); `kept` lists them oldest
first, by the time their config.json was written.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from pathlib import Path
from typing import Any

MODEL_ID = re.compile(r"lm-[0-9a-f]{8}")


def new_id(root: Path) -> str:
    """An id no kept model has."""
    while True:
        mid = f"lm-{secrets.token_hex(4)}"
        if not (root / mid).exists():
            return mid


def trained_config(directory: Path) -> dict[str, Any] | None:
    """The checkpoint's config.json when it is a model trained by attnscope (its "attnscope" block says so)."""
    try:
        config = json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return None
    block = config.get("attnscope") if isinstance(config, dict) else None
    return config if isinstance(block, dict) and block.get("trained") is True else None


def kept(root: Path) -> list[Path]:
    """The kept models' directories, oldest first (none when the directory does not exist yet)."""
    if not root.is_dir():
        return []
    found = [path for path in root.iterdir()
             if path.is_dir() and MODEL_ID.fullmatch(path.name) and trained_config(path) is not None]
    return sorted(found, key=lambda path: ((path / "config.json").stat().st_mtime, path.name))


def remove(directory: Path) -> None:
    """Delete a kept model's directory: first renamed away (no longer found), then removed."""
    gone = directory.with_name(f".old-{directory.name}-{secrets.token_hex(2)}")
    try:
        directory.rename(gone)
    except FileNotFoundError:
        return
    shutil.rmtree(gone, ignore_errors=True)


def describe(directory: Path, model_id: str, name: str) -> dict[str, Any]:
    """What GET /api/v1/labs/lm/models says of one kept model (app/schemas/lm.py TrainedModel)."""
    config = trained_config(directory) or {}
    block = config.get("attnscope", {})
    settings = block.get("settings")
    return {
        "id": model_id, "name": name, "n_layers": config.get("n_layer", 0), "n_heads": config.get("n_head", 0),
        "d_model": config.get("n_embd", 0), "context": config.get("n_positions", 0),
        "vocab_size": config.get("vocab_size", 0), "characters": block.get("characters"),
        "text_sha256": block.get("text_sha256"), "final_val_loss": block.get("final_val_loss"),
        "unigram_entropy": block.get("unigram_entropy"), "bigram_entropy": block.get("bigram_entropy"),
        "settings": settings if isinstance(settings, dict) else None,
        "created": (directory / "config.json").stat().st_mtime if (directory / "config.json").exists() else 0.0,
    }
