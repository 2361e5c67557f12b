"""Keyword term branches with and without sequential scans, alternated in one process on the
store of `python -m benchmarks.scale --n N`: server-side latency of `memory_search`.

    MEMORY_EMBEDDED_DB_NAME=bench_search python -m benchmarks.keyword_plans --n 100000 \\
        --mode hybrid --rounds 3

Each round runs the same questions with both plans, in alternating order (the first of a
pair ran warmer caches); "allowed" swaps `keyword._fetch_without_sequential_scans` for a
plain cursor (the keyword statement as it ran before the sequential-scan setting).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from benchmarks.common import percentiles, setup_django, table, write_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--mode", choices=["keyword", "hybrid"], default="keyword")
    parser.add_argument("--filters", action="store_true", help="the scale benchmark's filters")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args(argv)
    setup_django("bench_search")
    from django.db import connections

    from benchmarks.scale import filtered, queries
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import keyword, memory_search
    from memories.selectors.search_types import SearchQuery
    from tenants.models import Project

    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        raise SystemExit(f"no store of {args.n}: run python -m benchmarks.scale --n {args.n}")

    def plain(using: str, sql: str, params: list[Any]) -> list[tuple]:
        with connections[using].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()

    plans = {"not allowed": keyword._fetch_without_sequential_scans, "allowed": plain}
    texts = queries(args.queries, random.Random(11))
    samples: dict[str, list[float]] = {name: [] for name in plans}
    try:
        for round_ in range(args.rounds):
            order = list(plans) if round_ % 2 else list(reversed(plans))
            for name in order:
                keyword._fetch_without_sequential_scans = plans[name]
                draws = random.Random(round_)
                for text in texts:
                    filters = MemoryFilters(**filtered(draws)) if args.filters else MemoryFilters()
                    query = SearchQuery(text=text, mode=args.mode, filters=filters, limit=10)
                    started = time.perf_counter()
                    memory_search(project=project, query=query)
                    samples[name].append((time.perf_counter() - started) * 1000)
    finally:
        keyword._fetch_without_sequential_scans = plans["not allowed"]
    out = {name: percentiles(values) for name, values in samples.items()}
    label = f"{args.mode}{' +filters' if args.filters else ''}"
    print(f"\n{label}, sequential scans in term branches (ms)")
    print(table(["plan", "p50", "p95", "p99", "n"], [[k, *v.values()] for k, v in out.items()]))
    path = write_results(f"keyword-plans-{args.n}", {"args": vars(args), "server_ms": out})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
