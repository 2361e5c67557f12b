"""What soft-deleted memories cost a search: the buffers (pages read from PostgreSQL's cache
or disk) and the time of each mode on a store where a share of the rows is soft-deleted, as
consolidation leaves a repetitive import, with the indexes of the schema now and of an earlier
migration, alternated in one process.

    python -m benchmarks.deleted_rows --n 40000 --deleted 0.25 --before 0012 --rounds 2

The store is built directly (the scale benchmark's texts, users and types; random unit
vectors, so no encoder is needed), then `--deleted` of its rows are soft-deleted at random and
73% of those holding `--term` (dinner), as the session-14 store had it (docs/benchmarks.md).
Buffer counts come from `pg_stat_database` of the benchmark's own database: they do not
depend on what else the machine is doing, where the times do. Searches reinforce what they
return, as in production, so each round's store has moved a little from the one before.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from typing import Any

from benchmarks.common import percentiles, setup_django, table, write_results

MODES = (("keyword", False), ("keyword", True), ("semantic", False), ("semantic", True))
MODES += (("hybrid", False), ("hybrid", True))


def build(project: Any, args: argparse.Namespace) -> None:
    store(project, args.n, args.seed)
    soft_delete(project, args.deleted, args.term, args.seed)


def store(project: Any, n: int, seed: int, *, vectors: bool = True, chunk: int = 2000) -> None:
    """n generated memories (the scale benchmark's texts, users, types, tags and metadata),
    written directly; with random unit vectors, or none (a keyword-only store)."""
    import numpy as np

    from benchmarks.scale import generate
    from memories.models import Memory
    from memories.services.content import content_hash

    rng, draws = random.Random(seed), np.random.default_rng(seed)
    for start in range(0, n, chunk):
        items = generate(min(chunk, n - start), rng, start)
        if vectors:
            block = draws.normal(size=(len(items), 384)).astype("float32")
            block /= np.linalg.norm(block, axis=1, keepdims=True)
        Memory.objects.bulk_create(
            Memory(
                project=project,
                content=item.content,
                content_hash=content_hash(item.content),
                user_id=item.user_id,
                memory_type=item.memory_type,
                tags=item.tags,
                metadata=item.metadata,
                embedding=block[i].tolist() if vectors else None,
            )
            for i, item in enumerate(items)
        )
        done = min(start + chunk, n)
        if done % max(chunk, n // 20) < chunk or done == n:
            print(f"  {done}/{n} stored")


def soft_delete(project: Any, share: float, term: str, seed: int) -> None:
    """Soft-delete `share` of the rows at random and 73% of those holding `term`, as
    consolidation left the session-14 store; then VACUUM ANALYZE."""
    from django.db import connection
    from django.utils import timezone

    from memories.models import Memory

    rows = Memory.objects.filter(project=project)
    ids = list(rows.values_list("pk", flat=True))
    random.Random(seed + 1).shuffle(ids)
    gone = set(ids[: int(len(ids) * share)])
    held = list(rows.filter(content__icontains=term).values_list("pk", flat=True))
    gone |= set(held[: int(len(held) * 0.73)])
    gone_ids = list(gone)
    for start in range(0, len(gone_ids), 20000):
        rows.filter(pk__in=gone_ids[start : start + 20000]).update(deleted_at=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE memories_memory")


def buffers() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute(
            "SELECT blks_hit + blks_read FROM pg_stat_database WHERE datname = current_database()"
        )
        return int(cursor.fetchone()[0])


def measure(project: Any, args: argparse.Namespace, round_: int) -> dict[str, Any]:
    from benchmarks.scale import filtered, queries
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    draws = random.Random(round_)
    texts = queries(args.queries, draws) + [f"food preferences for team {args.term}s"] * 5
    out: dict[str, Any] = {}
    for mode, with_filters in MODES:
        before, samples = buffers(), []
        for text in texts:
            filters = MemoryFilters(**filtered(draws)) if with_filters else MemoryFilters()
            query = SearchQuery(text=text, mode=mode, filters=filters, limit=10)
            started = time.perf_counter()
            memory_search(project=project, query=query)
            samples.append((time.perf_counter() - started) * 1000)
        out[f"{mode}{' +filters' if with_filters else ''}"] = {
            "buffers": round((buffers() - before) / len(texts), 1),
            **percentiles(samples),
        }
    return out


def migrate_to(target: str | None) -> None:
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", "memories", *([target] if target else []), verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memories_memory")


def alternate_schemas(
    before: str, rounds: int, run: Callable[[int], dict[str, Any]]
) -> dict[str, list[Any]]:
    """{schema: [figures of each round]}: each round `run(round)` on the indexes of migration
    `before` of the memories app, then on the latest, each table printed; the latest schema
    is restored at the end, whatever happens."""
    results: dict[str, list[Any]] = {before: [], "now": []}
    try:
        for round_ in range(rounds):
            for name, target in ((before, before), ("now", None)):
                migrate_to(target)
                results[name].append(run(round_))
                rows = [[k, *v.values()] for k, v in results[name][-1].items()]
                print(f"\nround {round_ + 1}, schema {name}: per search")
                print(table(["search", "buffers", "p50 ms", "p95 ms", "p99 ms", "n"], rows))
    finally:
        migrate_to(None)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=40_000, help="memories stored")
    parser.add_argument("--deleted", type=float, default=0.25, help="share soft-deleted")
    parser.add_argument("--term", default="dinner", help="a term most of whose rows go")
    parser.add_argument("--before", default="0012", help="the migration to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    setup_django("bench_deleted_rows")
    from memories.models import Memory

    migrate_to(None)

    def build_store(project: Any) -> None:
        print(f"storing {args.n} memories, soft-deleting a share...")
        build(project, args)

    project = stored_project(f"deleted-rows-{args.n}", args.n, build_store)
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    print(f"{args.n} memories, {live} live")
    results = alternate_schemas(args.before, args.rounds, lambda r: measure(project, args, r))
    return finish(f"deleted-rows-{args.n}", args, live, results)


def stored_project(slug: str, n: int, build: Callable[[Any], None]) -> Any:
    """The project `slug` holding n memories, (re)built by `build(project)` when it is missing
    or of another size."""
    from memories.models import Memory
    from tenants.models import Project
    from tenants.services import project_create

    project = Project.objects.filter(slug=slug).first()
    if project is not None and Memory.objects.filter(project=project).count() == n:
        return project
    if project is not None:
        project.delete()
    project = project_create(slug=slug)
    build(project)
    return project


def finish(name: str, args: argparse.Namespace, live: int, results: dict[str, Any]) -> int:
    path = write_results(name, {"args": vars(args), "live": live, "rounds": results})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
