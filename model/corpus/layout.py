"""The corpus index on disk, shared by the writer (index.py) and the queries (query.py); no torch here.

    DIR/manifest.json               what was indexed: model, layers x heads, metrics, shard size, finished shards
    DIR/heads/shard-00000.parquet   one row per (text, layer, head): text_id, layer, head, one float32 column per
                                    metric, pairs: list<struct<query, key, weight>> (strongest first)
    DIR/texts/shard-00000.parquet   one row per indexed text: text_id, text, tokens (readable), n_tokens

Shard i holds the corpus lines [i * shard_size, (i + 1) * shard_size); `text_id` is the line's 0-based index
in the corpus file, so ids are stable whatever lines were skipped. Heads rows are sorted by (layer, head,
text_id) and written in row groups of a few heads (shards.ROW_GROUP), so a query for one head reads one or two
row groups of each shard (DuckDB skips the others by their min/max statistics). A pair's tokens are not repeated
in the heads rows: they are the text's tokens at the pair's positions (query.py resolves them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FORMAT = "attnscope-corpus"
VERSION = 1
MANIFEST = "manifest.json"
HEADS = "heads"
TEXTS = "texts"
SKIP_REASONS = ("too_long", "empty", "bad_line")  # why a corpus line was not indexed
# The metrics an index of some models leaves out of its manifest (rows.offered_metrics), and why: on those
# models their value is 0.0000 on every text. The shards keep the columns; queries offer the manifest's metrics.
NOT_OFFERED = {
    "to_cls": "the model puts no special token first ([CLS])",
    "to_sep": "the model inserts no special token after the first ([SEP])",
    "to_next": "a causal model never attends to the next token",
}


class RayMissing(RuntimeError):
    """The Ray engine was asked for where ray is not installed."""

    def __init__(self) -> None:
        super().__init__("--engine ray needs Ray: pip install 'attnscope[ray]'")


def shard_name(number: int) -> str:
    return f"shard-{number:05d}.parquet"


def read_manifest(directory: Path) -> dict[str, Any] | None:
    """The index's manifest, or None when `directory` holds none (or one that is not an attnscope index's)."""
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    return manifest


def write_manifest(directory: Path, manifest: dict[str, Any]) -> None:
    """Writes the manifest atomically: a temporary file, then a rename over the old one."""
    path = Path(directory) / MANIFEST
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    temporary.replace(path)


def finished_paths(directory: Path, manifest: dict[str, Any], table: str) -> list[str]:
    """The finished shards' files of one table (HEADS or TEXTS), in shard order."""
    return [str(Path(directory) / table / shard_name(int(s["shard"]))) for s in manifest.get("shards", [])]
