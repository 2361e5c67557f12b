"""Keyword search on a large store: the pages read (buffers) and the time of each keyword
search, with and without filters, with the indexes of the schema now and of an earlier
migration, alternated in one process.

    python -m benchmarks.keyword_scale --n 1000000 --users 500 --before 0013 --rounds 2

The store is keyword-only: the scale benchmark's generated memories written directly, without
vectors (no encoder, no graph: a million rows are stored in minutes), `--deleted` of them
soft-deleted at random as consolidation leaves a repetitive import. The filtered searches are
the scale benchmark's (one user, three memory types). A second, small project (`--small`,
2,000 memories) shares the table, as a new tenant does a large deployment's, and is searched
the same ways. Buffer counts come from
`pg_stat_database` of the benchmark's own database: they do not depend on what else the
machine is doing, where the times do. The searches reinforce what they return, as in
production.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks.common import percentiles, setup_django


def measure(project: Any, texts: list[str], with_filters: bool, seed: int) -> dict[str, Any]:
    from benchmarks.deleted_rows import buffers
    from benchmarks.scale import filtered
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    draws = random.Random(seed)
    before, samples = buffers(), []
    for text in texts:
        filters = MemoryFilters(**filtered(draws)) if with_filters else MemoryFilters()
        query = SearchQuery(text=text, mode="keyword", filters=filters, limit=10)
        started = time.perf_counter()
        memory_search(project=project, query=query)
        samples.append((time.perf_counter() - started) * 1000)
    return {"buffers": round((buffers() - before) / len(texts), 1), **percentiles(samples)}


def ensure_store(slug: str, n: int, seed: int, deleted: float, args: argparse.Namespace) -> Any:
    """The project `slug` holding n generated memories (`deleted` of them soft-deleted), built
    when it is missing or of another size."""
    from benchmarks.deleted_rows import soft_delete, store, stored_project

    def build(project: Any) -> None:
        print(f"storing {n} memories without vectors in {slug}, soft-deleting {deleted:.0%}...")
        started = time.perf_counter()
        store(project, n, seed, vectors=False, chunk=5000)
        soft_delete(project, deleted, args.term, seed)
        print(f"  built in {time.perf_counter() - started:.0f} s")

    return stored_project(slug, n, build)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="memories stored")
    parser.add_argument("--users", type=int, default=500)
    parser.add_argument("--deleted", type=float, default=0.15, help="share soft-deleted")
    parser.add_argument("--term", default="dinner", help="a term most of whose rows go")
    parser.add_argument("--before", default="0013", help="the migration to compare with")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--small", type=int, default=2000, help="memories of the small tenant")
    parser.add_argument("--build-only", action="store_true")
    args = parser.parse_args(argv)
    setup_django("bench_keyword_scale")
    from benchmarks import scale
    from benchmarks.deleted_rows import alternate_schemas, finish, migrate_to
    from memories.models import Memory
    from memories.selectors.search import keyword

    migrate_to(None)
    scale.USERS = args.users
    project = ensure_store(f"keyword-scale-{args.n}", args.n, args.seed, args.deleted, args)
    small = ensure_store(f"keyword-scale-small-{args.small}", args.small, args.seed + 1, 0.0, args)
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    print(f"{args.n} memories, {live} live; a small tenant of {args.small} beside them")
    if args.build_only:
        return 0
    texts = scale.queries(args.queries, random.Random(args.seed))

    def run(round_: int) -> dict[str, Any]:
        for text in texts[:20]:  # warm the caches after the index swap
            keyword.keyword_ranked(Memory.objects.filter(project=project), text, limit=10)
        return {
            f"{label}{' +filters' if with_filters else ''}": measure(
                tenant, texts, with_filters, round_
            )
            for label, tenant in (("keyword", project), ("small tenant", small))
            for with_filters in (False, True)
        }

    results = alternate_schemas(args.before, args.rounds, run)
    return finish(f"keyword-scale-{args.n}", args, live, results)


if __name__ == "__main__":
    raise SystemExit(main())
