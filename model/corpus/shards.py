"""Text rows (rows.py) of one shard -> the index's two Parquet tables (layout.py), written atomically."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from model.corpus import layout
from model.corpus.rows import CORPUS_METRICS

COMPRESSION = "zstd"
# Rows per row group of the heads table: a few heads' rows of a 1,000-text shard. A query for one head reads the
# row group(s) holding it in each shard (DuckDB skips the rest by their layer/head statistics); smaller groups
# read fewer rows but cost more metadata per file: over 100,000 texts a top-k query took 0.45 CPU s with a group
# per head (1,000 rows), 0.24 with 4,096 rows, 0.17 with 16,384 and 0.25 with one group per shard.
ROW_GROUP = 16384


def _order(rows: pa.Table) -> np.ndarray:
    """The text rows' order by text_id (the engines give them in batch order: by length)."""
    ids = np.asarray(rows.column("text_id").to_numpy(), dtype=np.int64)
    return np.argsort(ids, kind="stable")


def _values(rows: pa.Table, column: str, count: int, width: int) -> np.ndarray:
    """A flat-list column of text rows as an (N, width) array, rows by text_id."""
    flat = pc.list_flatten(rows.column(column).combine_chunks())
    values: np.ndarray = np.asarray(flat.to_numpy(zero_copy_only=False)).reshape(count, width)
    ordered: np.ndarray = values[_order(rows)]
    return ordered


def heads_table(rows: pa.Table, n_layers: int, n_heads: int, k: int) -> pa.Table:
    """One row per (layer, head, text), sorted so: text_id, layer, head, the metrics (null where undefined), and
    pairs list<struct<query, key, weight>> heaviest first (empty slots dropped)."""
    count, per_text = rows.num_rows, n_layers * n_heads
    ids = rows.column("text_id").to_numpy()[_order(rows)]
    columns: dict[str, pa.Array] = {
        "text_id": pa.array(np.tile(ids, per_text), type=pa.int64()),
        "layer": pa.array(np.repeat(np.arange(n_layers, dtype=np.int16), n_heads * count), type=pa.int16()),
        "head": pa.array(np.tile(np.repeat(np.arange(n_heads, dtype=np.int16), count), n_layers), type=pa.int16()),
    }
    for name in CORPUS_METRICS:
        values = _values(rows, name, count, per_text).T.reshape(-1)  # (L*H*N,): head-major, then text
        columns[name] = pa.array(values, type=pa.float32(), mask=np.isnan(values))
    def slots(column: str) -> np.ndarray:
        return _values(rows, column, count, per_text * k).reshape(count, per_text, k).transpose(1, 0, 2)  # (L*H, N, K)

    query, key, weight = slots("pair_query"), slots("pair_key"), slots("pair_weight")
    used = query >= 0  # (L*H, N, K): filled slots come first in each list
    offsets = np.concatenate([[0], np.cumsum(used.reshape(per_text * count, k).sum(axis=-1))]).astype(np.int32)
    pairs = pa.StructArray.from_arrays(
        [pa.array(query[used], type=pa.int16()), pa.array(key[used], type=pa.int16()),
         pa.array(weight[used], type=pa.float32())], names=["query", "key", "weight"])
    columns["pairs"] = pa.ListArray.from_arrays(pa.array(offsets), pairs)
    return pa.table(columns)


def texts_table(rows: pa.Table) -> pa.Table:
    return rows.select(["text_id", "text", "tokens", "n_tokens"]).take(pa.array(_order(rows)))


def _write(table: pa.Table, path: Path, row_group_size: int) -> None:
    """Writes to a temporary name beside `path`, flushes it to disk, then renames it over `path`: a reader (or
    a resumed run) sees the whole file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, temporary, row_group_size=max(row_group_size, 1), compression=COMPRESSION)
    with open(temporary, "rb") as handle:
        os.fsync(handle.fileno())
    temporary.replace(path)


def write_shard(directory: Path, number: int, rows: pa.Table, n_layers: int, n_heads: int, k: int) -> None:
    """Both tables of shard `number` from its text rows."""
    name = layout.shard_name(number)
    _write(heads_table(rows, n_layers, n_heads, k), Path(directory) / layout.HEADS / name, ROW_GROUP)
    _write(texts_table(rows), Path(directory) / layout.TEXTS / name, rows.num_rows)
