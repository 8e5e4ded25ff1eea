"""REST API v1, the corpus index (`attnscope serve --corpus DIR`): one head's top texts over a whole corpus by a
metric or by two token patterns, and every head by two metrics. model/corpus/query.py answers from the index's
Parquet files with DuckDB; a server started without a corpus answers 409 `no_corpus`."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated, cast

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from model.corpus.query import Corpus, CorpusError, TopText

from .. import serialize
from ..schemas.common import documented_error
from ..schemas.corpus import (
    CorpusHead,
    CorpusHeadsResponse,
    CorpusInfo,
    CorpusPair,
    CorpusPatternResponse,
    CorpusText,
    CorpusTopResponse,
    HeadsQuery,
    PatternQuery,
    TopQuery,
)

START_WITH_A_CORPUS = "start the server with `attnscope serve --corpus DIR`, DIR an index written by " \
                      "`attnscope corpus index FILE --model ID --out DIR`"


class NoCorpus(LookupError):
    """A corpus route asked of a server started without a corpus (ATTNSCOPE_CORPUS unset)."""

    type = "no_corpus"
    message = f"This server has no corpus open; {START_WITH_A_CORPUS}"


async def no_corpus(request: Request, exc: Exception) -> JSONResponse:
    """409: the route exists, but this server was started without the corpus it queries."""
    assert isinstance(exc, NoCorpus)
    item = {"loc": ["query"], "msg": exc.message, "type": exc.type}
    return JSONResponse({"detail": f"{exc.message}.", "errors": [item]}, status_code=409)


def open_corpus(directory: Path | None) -> Corpus | None:
    """The index the server answers from, or None without one; CorpusError (not_an_index) for a directory that
    is not an index."""
    return None if directory is None else Corpus(directory)


# One query at a time per process: the corpus holds one DuckDB connection (a query over the tests' 60-text index
# took 7-22 ms).
_QUERIES = threading.Lock()


async def _corpus(request: Request) -> Corpus:
    corpus = getattr(request.app.state, "corpus", None)
    if corpus is None:
        raise NoCorpus()
    return cast(Corpus, corpus)


OpenCorpus = Annotated[Corpus, Depends(_corpus)]

NO_CORPUS = documented_error(f"The server was started without a corpus (`no_corpus`); {START_WITH_A_CORPUS}.")
BAD_QUERY = documented_error(
    "A query parameter is invalid; `detail` says which and what to send instead, `errors` gives its path (`loc`, "
    "e.g. [\"query\", \"layer\"]) and the rule broken (`type`): besides the schema's bounds, `index_out_of_range` "
    "for a layer or head the corpus's model lacks, `unknown_metric` for a metric the index does not hold, "
    "`bad_pattern` for a pattern that is not a regular expression RE2 (DuckDB's dialect) takes.")

router = APIRouter(prefix="/api/v1/corpus", tags=["corpus"], responses={409: NO_CORPUS, 422: BAD_QUERY})


def _texts(found: list[TopText]) -> list[CorpusText]:
    return [CorpusText(text_id=t.text_id, text=t.text, tokens=list(t.tokens), value=t.value,
                       pairs=[CorpusPair(query=p.query, key=p.key, query_token=p.query_token, key_token=p.key_token,
                                         weight=p.weight) for p in t.pairs])
            for t in found]


@router.get(
    "",
    response_model=CorpusInfo,
    summary="The corpus index this server answers from: its model, size and metrics",
)
def corpus_info(corpus: OpenCorpus) -> Response:
    return serialize.json_response(CorpusInfo(model=corpus.model, n_layers=corpus.n_layers, n_heads=corpus.n_heads,
                                              texts=corpus.texts, skipped=corpus.skipped,
                                              metrics=list(corpus.metrics)))


@router.get(
    "/top",
    response_model=CorpusTopResponse,
    summary="One head's k texts with the highest (or lowest) value of a metric",
    description=(
        "Each text with the head's value of `by` on it, its tokens and the head's strongest query -> key pairs "
        "on it (token positions, tokens and weights). Ties keep the corpus's order."
    ),
)
def top_texts(query: Annotated[TopQuery, Query()], corpus: OpenCorpus) -> Response:
    with _QUERIES:
        found = corpus.top(query.layer, query.head, query.by, query.k, lowest=query.lowest)
    return serialize.json_response(CorpusTopResponse(layer=query.layer, head=query.head, by=query.by,
                                                     lowest=query.lowest, results=_texts(found)))


@router.get(
    "/pattern",
    response_model=CorpusPatternResponse,
    summary="One head's k texts where a strongest pair goes from a token matching `query` to one matching `key`",
    description=(
        "Texts where one of the head's strongest query -> key pairs has a query token whose readable text "
        "matches the RE2 regular expression `query` and a key token matching `key`, the heaviest such pair "
        "first; `value` is that pair's weight."
    ),
)
def pattern_texts(query: Annotated[PatternQuery, Query()], corpus: OpenCorpus) -> Response:
    with _QUERIES:
        found = corpus.pattern(query.layer, query.head, query.query, query.key, query.k)
    return serialize.json_response(CorpusPatternResponse(layer=query.layer, head=query.head, query=query.query,
                                                         key=query.key, results=_texts(found)))


@router.get(
    "/heads",
    response_model=CorpusHeadsResponse,
    summary="Every head by two metrics, each its mean over the corpus (a HeadVis-style scatter)",
)
def heads(query: Annotated[HeadsQuery, Query()], corpus: OpenCorpus) -> Response:
    with _QUERIES:
        points = corpus.heads(query.x, query.y)
    return serialize.json_response(CorpusHeadsResponse(
        x=query.x, y=query.y, points=[CorpusHead(layer=p.layer, head=p.head, x=p.x, y=p.y) for p in points]))


__all__ = ["CorpusError", "NoCorpus", "no_corpus", "open_corpus", "router"]
