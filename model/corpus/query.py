"""Queries over a corpus index (layout.py) with DuckDB: one head's top texts by a metric or by two token
patterns, and every head's mean of two metrics. DuckDB and pyarrow only: no model is loaded to query.

Only the shards the manifest lists as finished are read, so an index still being written (or interrupted)
answers over the texts finished so far.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.corpus import layout
from model.errors import RuleError, checked_index

CORPUS_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "not_an_index": ((), "a directory without a corpus index's manifest (attnscope corpus index writes one)"),
    "unknown_metric": (("metric",), "a metric the index does not hold (the message lists those it does)"),
    "bad_pattern": (("pattern",), "a token pattern that is not a regular expression RE2 (DuckDB's dialect) takes"),
    "index_mismatch": ((), "an output directory that holds the index of another model, corpus or shard size"),
}


class CorpusError(RuleError):
    """A corpus index that is not one, or a query it cannot answer; `type` is one of CORPUS_RULES."""

    rules = CORPUS_RULES


@dataclass(frozen=True)
class Pair:
    """One of a head's strongest query -> key pairs on a text: token positions, readable tokens, weight."""

    query: int
    key: int
    query_token: str
    key_token: str
    weight: float


@dataclass(frozen=True)
class TopText:
    """A text a query found: its line in the corpus (0-based), the value it was ranked by and the pairs."""

    text_id: int
    text: str
    tokens: tuple[str, ...]
    value: float
    pairs: tuple[Pair, ...]


@dataclass(frozen=True)
class HeadPoint:
    """A head's mean over the corpus of two metrics."""

    layer: int
    head: int
    x: float
    y: float


def not_an_index(directory: Path) -> CorpusError:
    return CorpusError("not_an_index", "corpus", f"{directory} is not a corpus index (it has no {layout.MANIFEST}); "
                       "write one with `attnscope corpus index FILE --model ID --out DIR`")


class Corpus:
    """An open corpus index: `top`, `pattern` and `heads` query its finished shards."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        manifest = layout.read_manifest(self.directory)
        if manifest is None:
            raise not_an_index(self.directory)
        self.manifest = manifest
        self.model: str = str(manifest["model"])
        self.n_layers: int = int(manifest["n_layers"])
        self.n_heads: int = int(manifest["n_heads"])
        self.metrics: tuple[str, ...] = tuple(manifest["metrics"])
        shards = manifest.get("shards", [])
        self.texts: int = sum(int(s["texts"]) for s in shards)
        self.skipped: int = sum(int(n) for s in shards for n in s["skipped"].values())
        self._heads = layout.finished_paths(self.directory, manifest, layout.HEADS)
        self._texts = layout.finished_paths(self.directory, manifest, layout.TEXTS)
        # each shard's corpus lines [first, first + lines): where a text's rows are, so that fetching k texts'
        # pairs and words opens k files at most, not every shard
        self._starts = [int(s["first"]) for s in shards]
        self._ends = [int(s["first"]) + int(s["lines"]) for s in shards]
        import duckdb  # here, not at the top: a server without a corpus never loads it (about 12 MB)

        self._db = duckdb.connect(":memory:")
        self._db_error = duckdb.Error

    def _metric(self, name: str, field: str) -> str:
        if name not in self.metrics:
            known = ", ".join(self.metrics)
            why = layout.NOT_OFFERED.get(name)
            said = (f"{name!r} is not offered by this index of {self.model}: {why}" if why
                    else f"Unknown metric {name!r}")
            raise CorpusError("unknown_metric", field, f"{said}; use one of: {known}", metric=name)
        return name

    def check_pattern(self, expression: str, field: str) -> str:
        """`expression` when RE2 (the dialect DuckDB runs) takes it, else CorpusError bad_pattern naming `field`.
        The only check: the CLI, the Python API and the server refuse the same patterns with the same words."""
        try:
            self._db.execute("SELECT regexp_matches('', ?)", [expression]).fetchall()
        except self._db_error as error:
            reason = str(error).removeprefix("Invalid Input Error: ")
            raise CorpusError("bad_pattern", field, f"{field} {expression!r} is not a regular expression RE2 takes "
                              f"({reason}); RE2 has no lookaround and no backreferences", pattern=expression) from None
        return expression

    def _head(self, layer: int, head: int) -> None:
        checked_index(layer, self.n_layers, "layers", "layer")
        checked_index(head, self.n_heads, "heads", "head")

    def _rows(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self._db.execute(sql, list(params)).fetchall()

    def _shards_of(self, ids: Sequence[int]) -> list[int]:
        return sorted({n for i in ids for n, (a, b) in enumerate(zip(self._starts, self._ends, strict=True))
                       if a <= i < b})

    def _texts_of(self, ids: Sequence[int]) -> dict[int, tuple[str, tuple[str, ...]]]:
        if not ids:
            return {}
        files = [self._texts[n] for n in self._shards_of(ids)]
        rows = self._rows("SELECT text_id, text, tokens FROM read_parquet(?) WHERE list_contains(?, text_id)",
                          [files, list(ids)])
        return {int(i): (str(text), tuple(tokens)) for i, text, tokens in rows}

    def _pairs_of(self, layer: int, head: int, ids: Sequence[int]) -> dict[int, list[dict[str, Any]]]:
        if not ids:
            return {}
        files = [self._heads[n] for n in self._shards_of(ids)]
        rows = self._rows("SELECT text_id, pairs FROM read_parquet(?) WHERE layer = ? AND head = ? "
                          "AND list_contains(?, text_id)", [files, layer, head, list(ids)])
        return {int(i): pairs for i, pairs in rows}

    def top(self, layer: int, head: int, by: str, k: int = 20, lowest: bool = False) -> list[TopText]:
        """The k texts with the highest (lowest: the lowest) value of metric `by` for this head, ties in corpus
        order; texts where the metric is undefined (induction without a repeated token) are left out."""
        self._head(layer, head)
        metric = self._metric(by, "by")
        if not self._heads or k < 1:
            return []
        order = "ASC" if lowest else "DESC"
        # the metric column alone over every shard (one row group a shard for a head), then the k texts' pairs
        rows = self._rows(
            f"SELECT text_id, {metric} FROM read_parquet(?) WHERE layer = ? AND head = ? "  # noqa: S608
            f"AND {metric} IS NOT NULL AND NOT isnan({metric}) ORDER BY {metric} {order}, text_id LIMIT ?",
            [self._heads, layer, head, k])
        ids = [int(r[0]) for r in rows]
        texts, pairs = self._texts_of(ids), self._pairs_of(layer, head, ids)
        return [_found(i, texts[i], float(value), pairs[i]) for i, (_, value) in zip(ids, rows, strict=True)]

    def pattern(self, layer: int, head: int, query: str, key: str, k: int = 20) -> list[TopText]:
        """The k texts where one of this head's strongest pairs goes from a token matching `query` to one
        matching `key` (RE2 regular expressions, DuckDB's regexp_matches, searched in the readable token; "^he$"
        for the whole token), ranked by the heaviest such pair; each text's pairs are its matching pairs, heaviest
        first."""
        self._head(layer, head)
        self.check_pattern(query, "query")
        self.check_pattern(key, "key")
        if not self._heads or k < 1:
            return []
        rows = self._rows(
            "WITH p AS (SELECT text_id, unnest(pairs) AS pair FROM read_parquet(?) WHERE layer = ? AND head = ?), "
            "m AS (SELECT p.text_id, pair.query AS q, pair.key AS kk, pair.weight AS w FROM p "
            "JOIN read_parquet(?) t ON t.text_id = p.text_id "
            "WHERE regexp_matches(t.tokens[pair.query + 1], ?) AND regexp_matches(t.tokens[pair.key + 1], ?)), "
            "best AS (SELECT text_id, max(w) AS value FROM m GROUP BY text_id "
            "ORDER BY value DESC, text_id LIMIT ?) "
            "SELECT best.text_id, best.value, list({'query': q, 'key': kk, 'weight': w} ORDER BY w DESC, q, kk) "
            "FROM best JOIN m ON m.text_id = best.text_id GROUP BY best.text_id, best.value "
            "ORDER BY best.value DESC, best.text_id",
            [self._heads, layer, head, self._texts, query, key, k])
        texts = self._texts_of([int(r[0]) for r in rows])
        return [_found(int(text_id), texts[int(text_id)], float(value), pairs) for text_id, value, pairs in rows]

    def heads(self, x: str, y: str) -> list[HeadPoint]:
        """Each head's mean over the corpus of metrics `x` and `y`, by layer then head; a head where either is
        undefined on every text (induction on a corpus without repeated tokens) is left out."""
        mx, my = self._metric(x, "x"), self._metric(y, "y")
        if not self._heads:
            return []
        rows = self._rows(
            f"SELECT layer, head, avg({mx}), avg({my}) FROM read_parquet(?) "  # noqa: S608
            "GROUP BY layer, head ORDER BY layer, head", [self._heads])
        return [HeadPoint(int(layer), int(head), float(vx), float(vy)) for layer, head, vx, vy in rows
                if vx is not None and vy is not None]

    def close(self) -> None:
        self._db.close()


def _found(text_id: int, text: tuple[str, tuple[str, ...]], value: float, pairs: list[dict[str, Any]]) -> TopText:
    words, tokens = text
    return TopText(text_id, words, tokens, value, tuple(
        Pair(int(p["query"]), int(p["key"]), tokens[int(p["query"])], tokens[int(p["key"])], float(p["weight"]))
        for p in pairs))
