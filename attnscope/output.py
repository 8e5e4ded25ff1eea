"""The files `attnscope attention` writes: .npz (numpy arrays) or .json, each written whole or not at all.

Both are written to a temporary file beside the target and renamed onto it once complete, so an
interrupted or failed run leaves no half-written file (and an existing file is replaced only by a
complete one). The layout of each is in docs/cli.md.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import orjson

from .api import Attention

SUFFIXES = (".npz", ".json")


@contextlib.contextmanager
def atomic(path: Path) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` when the block ends without an error; otherwise it is removed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    try:
        with open(tmp, "xb") as f:  # created as open() creates any file (the umask applies)
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def token_arrays(answer: Attention) -> dict[str, np.ndarray]:
    """One input's tokens as arrays of length T (offsets (T, 2), -1 for inserted tokens)."""
    tokens = answer.tokens
    return {
        "tokens": np.array([t.text for t in tokens], dtype=str),
        "display": np.array([t.display for t in tokens], dtype=str),
        "ids": np.array(answer.ids, dtype=np.int64),
        "offsets": np.array([[-1 if t.start is None else t.start, -1 if t.end is None else t.end] for t in tokens],
                            dtype=np.int64).reshape(len(tokens), 2),
        "special": np.array([t.special for t in tokens], dtype=bool),
        "segments": np.array([t.segment for t in tokens], dtype=np.int64),
    }


class NpzWriter:
    """Arrays into an .npz (a zip of .npy files, as numpy.savez writes it, uncompressed), one at a time, so
    that a batch's maps are on disk before the next batch is computed."""

    def __init__(self, f: BinaryIO) -> None:
        self._zip = zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def add(self, name: str, array: np.ndarray) -> None:
        with self._zip.open(name + ".npy", mode="w", force_zip64=True) as entry:
            np.lib.format.write_array(entry, np.asanyarray(array), allow_pickle=False)

    def header(self, model: str, layers: list[int], heads: list[int]) -> None:
        self.add("model", np.array(model, dtype=str))
        self.add("layers", np.array(layers, dtype=np.int64))
        self.add("heads", np.array(heads, dtype=np.int64))

    def single(self, answer: Attention) -> None:
        """The arrays of a run on one text: `maps`, `tokens`, ..., `text` (and `pair` when there is one)."""
        self.add("maps", answer.maps)
        for name, array in token_arrays(answer).items():
            self.add(name, array)
        self.add("text", np.array(answer.text, dtype=str))
        if answer.pair is not None:
            self.add("pair", np.array(answer.pair, dtype=str))

    def item(self, index: int, answer: Attention) -> None:
        """The arrays of sentence `index` of a --file run: `maps_{index}`, `tokens_{index}`, ..."""
        self.add(f"maps_{index}", answer.maps)
        for name, array in token_arrays(answer).items():
            self.add(f"{name}_{index}", array)

    def sentences(self, texts: list[str], lines: list[int]) -> None:
        self.add("texts", np.array(texts, dtype=str))
        self.add("lines", np.array(lines, dtype=np.int64))

    def close(self) -> None:
        self._zip.close()


def json_item(answer: Attention, line: int | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {"text": answer.text, "pair": answer.pair}
    if line is not None:
        item["line"] = line
    item["ids"] = answer.ids
    item["tokens"] = [{"text": t.text, "display": t.display, "start": t.start, "end": t.end, "special": t.special,
                       "segment": t.segment, "unknown": t.unknown} for t in answer.tokens]
    item["maps"] = np.ascontiguousarray(answer.maps)
    return item


def json_bytes(model: str, layers: list[int], heads: list[int], items: list[dict[str, Any]]) -> bytes:
    """The .json file: {model, layers, heads, items: [{text, pair, line?, ids, tokens, maps}]}; maps are
    nested lists [layer][head][query][key] of the float32 weights (shortest round-trip decimal form)."""
    return orjson.dumps({"model": model, "layers": layers, "heads": heads, "items": items},
                        option=orjson.OPT_SERIALIZE_NUMPY)
