"""Importing many memories: consecutive bulk writes, more than one in flight.

`memories_import` cuts `items` into batches and stores each with `memories_create_bulk` (every
rule of a single write: exact duplicates, near-duplicate merges, history, graph; near-duplicates
may be left to consolidation, `near_duplicates`, and the HNSW inserts to the indexing job,
`vector_index`), keeping up to `in_flight` batches going at once, each on its own database
connection (platformcore.lib.db_threads). A bulk write embeds its texts before it takes its
scopes' locks, so on two cores the next batch is embedding while the current one holds the
locks and writes. Batches that share scopes still write one after the other (the locks); a batch may
commit before the one it follows when they share none.

Each batch is its own transaction. On the first failure no further batch starts, the ones in
flight finish, and `ImportFailed` says how many items were stored before it (the input order
up to the failed batch: re-run from there). Inside a transaction the batches run one by one.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from itertools import islice

from memories.services.bulk import MAX_BULK_ITEMS, bulk_option, memories_create_bulk
from memories.services.memories import CreateResult, MemoryInput
from platformcore.lib.actor import Actor
from platformcore.lib.db_threads import WORKERS, beside
from platformcore.lib.errors import InvalidInput
from tenants.models import Project

DEFAULT_BATCH = 500
DEFAULT_IN_FLIGHT = 2


@dataclass
class ImportSummary:
    items: int = 0  # stored, in input order, by the batches that finished
    created: int = 0
    existing: int = 0  # exact duplicates and near-duplicates merged into a memory
    failed_at: int | None = None  # index of the first item of the batch that failed
    error: str = ""


class ImportFailed(Exception):
    def __init__(self, summary: ImportSummary) -> None:
        super().__init__(f"batch starting at item {summary.failed_at} failed: {summary.error}")
        self.summary = summary


def memories_import(
    *,
    project: Project,
    items: Iterable[MemoryInput],
    actor: Actor,
    batch_size: int = DEFAULT_BATCH,
    in_flight: int = DEFAULT_IN_FLIGHT,
    progress: Callable[[int], object] | None = None,
    near_duplicates: str | None = None,
    vector_index: str | None = None,
) -> ImportSummary:
    """Store `items` (any iterable, read lazily) in batches; `progress(n)` after each batch
    of n items; `near_duplicates` and `vector_index` as in `memories_create_bulk`. Raises
    ImportFailed (with the summary so far) when a batch fails."""
    if not 1 <= batch_size <= MAX_BULK_ITEMS:
        raise InvalidInput(
            "batch_size out of range", fields={"batch_size": [f"between 1 and {MAX_BULK_ITEMS}"]}
        )
    if not 1 <= in_flight <= WORKERS:
        raise InvalidInput(
            "in_flight out of range", fields={"in_flight": [f"between 1 and {WORKERS}"]}
        )
    store = partial(  # the options are checked before any batch
        memories_create_bulk,
        project=project,
        actor=actor,
        near_duplicates=bulk_option(project, "near_duplicates", near_duplicates),
        vector_index=bulk_option(project, "vector_index", vector_index),
    )
    summary = ImportSummary()
    pending: deque[tuple[int, int, Future[list[CreateResult]]]] = deque()
    for start, batch in _batches(items, batch_size):
        if len(pending) >= in_flight and _collect(pending.popleft(), summary, progress):
            break  # no new batch after a failure; the ones in flight finish below
        pending.append((start, len(batch), beside(partial(store, items=batch))))
    while pending:
        _collect(pending.popleft(), summary, progress)
    if summary.failed_at is not None:
        raise ImportFailed(summary)
    return summary


def _batches(items: Iterable[MemoryInput], size: int) -> Iterator[tuple[int, list[MemoryInput]]]:
    iterator = iter(items)
    start = 0
    while batch := list(islice(iterator, size)):
        yield start, batch
        start += len(batch)


def _collect(
    entry: tuple[int, int, Future[list[CreateResult]]],
    summary: ImportSummary,
    progress: Callable[[int], object] | None,
) -> bool:
    """Account for one finished batch; True when it failed."""
    start, size, future = entry
    try:
        results = future.result()
    except Exception as exc:
        if summary.failed_at is None or start < summary.failed_at:
            summary.failed_at = start
            message = getattr(exc, "message", None) or str(exc)  # memories.3 → item 503
            summary.error = re.sub(
                r"memories\.(\d+)", lambda m: f"item {start + int(m.group(1))}", message
            )
        return True
    if summary.failed_at is None:  # what is stored in input order, up to the first failure
        summary.items += size
    created = sum(result.created for result in results)
    summary.created += created
    summary.existing += size - created
    if progress is not None:
        progress(size)
    return False
