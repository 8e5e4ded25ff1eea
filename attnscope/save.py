"""Saving results: `save(results, path)` writes one result or a list of them as NumPy's .npz or as Parquet, by
the path's suffix, in a form that plain numpy or pyarrow reads back without attnscope.

A result takes part by defining `_arrays()` (every array by name) and `_meta()` (a JSON-able dict: "kind",
"model", "text", "tokens" as display strings, and the settings that made it); `result.save(path)` is
`save([result], path)`.

".npz" (numpy.savez_compressed): result i's array `name` is the entry "<i>/<name>" ("0/maps", "1/maps", ...; a
single result is "0/..."), and the entry "meta.json" is a uint8 array holding UTF-8 JSON: {"format": "attnscope",
"version": 1, "results": [meta of result 0, meta of result 1, ...]}, each meta with "arrays", the names of its
arrays. Read it back with `z = numpy.load(path)`, `json.loads(z["meta.json"].tobytes())`, `z["0/maps"]`.

".parquet" (pyarrow): one row per result. For each array `name`: the column `name`, its values flattened in C
order as a list (the array's own element type: float32 as float, int64 as int64), and `name.shape`, a list of
int64; a result without that array has nulls there. For each meta key: the column "meta.<key>" ("meta.kind",
"meta.model", "meta.text", "meta.tokens", ...) holding the value (a string, number or bool, a list of them, or
nested lists); a key whose values arrow cannot give one type across the rows (a dict, mixed types) holds JSON text
instead. The column "meta.json" holds each row's whole meta as JSON text. Read it back with
`rows = pyarrow.parquet.read_table(path).to_pylist()`, then
`numpy.asarray(rows[i]["maps"], dtype=numpy.float32).reshape(rows[i]["maps.shape"])`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

FORMAT = "attnscope"
VERSION = 1
META = "meta.json"


@runtime_checkable
class Saveable(Protocol):
    def _arrays(self) -> dict[str, np.ndarray]: ...

    def _meta(self) -> dict[str, Any]: ...


def _plain(value: object) -> Any:
    """numpy scalars and arrays, tuples and non-finite floats as JSON has them (NaN and infinities: None)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _items(results: Saveable | Iterable[Saveable]) -> list[Saveable]:
    if isinstance(results, Saveable):
        return [results]
    items = list(results)
    for i, item in enumerate(items):
        if not isinstance(item, Saveable):
            raise TypeError(f"results[{i}] is a {type(item).__name__}, not an attnscope result; save the results "
                            "of attnscope.Model's methods")
    if not items:
        raise ValueError("nothing to save: results is empty")
    return items


def _metas(items: list[Saveable]) -> list[dict[str, Any]]:
    return [{**_plain(item._meta()), "arrays": list(item._arrays())} for item in items]


def save(results: Saveable | Iterable[Saveable], path: str | Path) -> Path:
    """Write `results` (one result or several) to `path`: ".npz" or ".parquet" by its suffix (the module's
    docstring gives both layouts). Returns the path. ValueError for another suffix or no results."""
    target = Path(path).expanduser()
    suffix = target.suffix.lower()
    if suffix not in (".npz", ".parquet"):
        raise ValueError(f"cannot save as {target.suffix or 'a file without a suffix'!r}: name the file *.npz (numpy) "
                         "or *.parquet (pyarrow)")
    items = _items(results)
    if suffix == ".npz":
        _npz(items, target)
    else:
        _parquet(items, target)
    return target


def _npz(items: list[Saveable], target: Path) -> None:
    entries: dict[str, np.ndarray] = {}
    for i, item in enumerate(items):
        for name, array in item._arrays().items():
            entries[f"{i}/{name}"] = np.asarray(array)
    header = {"format": FORMAT, "version": VERSION, "results": _metas(items)}
    entries[META] = np.frombuffer(json.dumps(header, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)
    with target.open("wb") as out:  # a file object: numpy adds no ".npz" of its own
        np.savez_compressed(out, **entries)  # type: ignore[arg-type]


def _column(values: list[Any]) -> Any:
    """One meta column: arrow's own type when it finds one for every row, else each value as JSON text."""
    import pyarrow as pa

    if not any(isinstance(v, dict) for v in values):
        try:
            return pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            pass
    return pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values], type=pa.string())


def _parquet(items: list[Saveable], target: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    metas = _metas(items)
    arrays = [{name: np.asarray(a) for name, a in item._arrays().items()} for item in items]
    columns: dict[str, Any] = {}
    for key in dict.fromkeys(k for meta in metas for k in meta):
        columns[f"meta.{key}"] = _column([meta.get(key) for meta in metas])
    columns[META] = pa.array([json.dumps(meta, ensure_ascii=False) for meta in metas], type=pa.string())
    for name in dict.fromkeys(n for found in arrays for n in found):
        dtype = next(found[name].dtype for found in arrays if name in found)
        kind = pa.list_(pa.from_numpy_dtype(dtype))
        columns[name] = pa.array([found[name].astype(dtype).ravel() if name in found else None for found in arrays],
                                 type=kind)
        columns[f"{name}.shape"] = pa.array([list(found[name].shape) if name in found else None for found in arrays],
                                            type=pa.list_(pa.int64()))
    pq.write_table(pa.table(columns), target)
