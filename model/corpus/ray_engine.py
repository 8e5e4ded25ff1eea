"""The Ray engine of the corpus index: the same per-batch function (rows.index_batch) run by Ray Data workers.

The driver reads and tokenizes the corpus (to skip and count the lines it cannot index, as the local engine
does) and groups each shard's texts into the same batches as the local engine (batch.batches: similar lengths
together). Each group is one Ray Data row; `map_batches` hands it to an `Indexer` actor, which loads the model
once and returns the group's text rows. With `preserve_order` the rows come back in corpus order, so the driver
writes each shard (shards.write_shard) as soon as its last group arrives, exactly as the local engine does.

`ray.init()` joins the cluster named by RAY_ADDRESS when it is set, else starts a local instance; a caller that
has already called `ray.init(...)` (a test, a notebook) keeps its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from model.checkpoints.batch import batches
from model.corpus.layout import RayMissing
from model.corpus.rows import Item, index_batch, text_rows_schema

if TYPE_CHECKING:
    from model.corpus.index import IndexSettings, Shard

def require_ray() -> None:
    """RayMissing unless ray and Ray Data import."""
    try:
        import ray.data  # noqa: F401
    except ImportError:
        raise RayMissing() from None


class Indexer:
    """A Ray Data worker: loads the model once, then turns each group of texts into text rows."""

    def __init__(self, model_source: str, device: str, pairs: int, threads: int) -> None:
        import torch

        from model.checkpoints import load

        torch.set_num_threads(max(threads, 1))
        self.model = load(model_source, device)
        self.pairs = pairs

    def __call__(self, batch: pa.Table) -> pa.Table:
        tables = []
        for ids, texts in zip(batch.column("text_ids").to_pylist(), batch.column("texts").to_pylist(), strict=True):
            items = [Item(i, t, self.model.tokenizer.encode(t)) for i, t in zip(ids, texts, strict=True)]
            tables.append(index_batch(self.model, items, self.pairs))
        return pa.concat_tables(tables) if tables else text_rows_schema(self.pairs).empty_table()


def _groups(shards: list[Shard], batch_size: int) -> list[dict[str, Any]]:
    rows = []
    for shard in shards:
        for group in batches([len(item.encoded) for item in shard.items], batch_size):
            chosen = [shard.items[i] for i in group]
            rows.append({"text_ids": [item.text_id for item in chosen], "texts": [item.text for item in chosen]})
    return rows


def ray_rows(model_source: str, shards: Iterable[Shard], settings: IndexSettings,
             count: Callable[[int, Shard], None]) -> Iterator[tuple[Shard, pa.Table]]:
    """Each shard with its text rows, in shard order, computed by `settings.workers` Ray actors."""
    require_ray()
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    pending = list(shards)
    groups = _groups(pending, settings.batch_size)
    for shard in pending:
        shard.items = []  # the groups hold what the workers need: the driver keeps no tokens of a large corpus
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    finished: Iterator[pa.Table] = iter(())
    if groups:
        dataset = ray.data.from_items(groups).map_batches(
            Indexer, fn_constructor_args=(model_source, settings.device, settings.pairs, 1), batch_size=1,
            batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=max(settings.workers, 1)), num_cpus=1)
        finished = iter(dataset.iter_batches(batch_size=None, batch_format="pyarrow"))
    waiting: list[pa.Table] = []
    have = 0
    for shard in pending:
        while have < shard.texts:
            table = next(finished)
            waiting.append(table)
            have += table.num_rows
            count(min(have, shard.texts), shard)
        rows = pa.concat_tables(waiting) if waiting else text_rows_schema(settings.pairs).empty_table()
        mine, rest = rows.slice(0, shard.texts), rows.slice(shard.texts)
        waiting, have = ([rest] if rest.num_rows else []), rest.num_rows
        yield shard, mine
