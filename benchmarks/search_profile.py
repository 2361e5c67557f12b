"""Where a search's time goes: every SQL statement of `POST /api/v1/memories/search/`, timed.

    MEMORY_EMBEDDED_DB_NAME=bench_scale python -m benchmarks.search_profile --n 100000
    python -m benchmarks.search_profile --n 100000 --mode keyword --rls false

Searches the store of `benchmarks.scale --n N` with natural questions, one request at a time,
through the whole Django stack in process, with the default settings: row-level security on
(`--rls false` to compare), the default search mode (hybrid) and limit, no result cache (each
question is searched, not answered from the cache). Reported: the request's p50/p95, SQL time
and statements per search, and the statements by time per search (`benchmarks.store_profile`
groups them the same way).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.request_clock import timed_requests


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="the benchmarks.scale store")
    parser.add_argument("--queries", type=int, default=200, help="searches measured")
    parser.add_argument("--warmup", type=int, default=20, help="searches before measuring")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "semantic", "keyword"])
    parser.add_argument("--rls", choices=["true", "false"], default="true")
    parser.add_argument("--top", type=int, default=15, help="statements listed")
    parser.add_argument("--seed", type=int, default=9)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ["MEMORY_ROW_LEVEL_SECURITY"] = args.rls
    os.environ["MEMORY_SEARCH_CACHE_SECONDS"] = "0"
    setup_django("bench_scale")
    from platformcore.lib.project_scope import all_projects

    with all_projects("benchmark: search profile"):  # the project and a key, as an operator
        return profile(args)


def profile(args: argparse.Namespace) -> int:
    from django.test import Client

    from benchmarks.scale import queries
    from tenants.models import Project
    from tenants.services import api_key_create

    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        raise SystemExit(f"no store of {args.n}: run benchmarks.scale --n {args.n} first")
    key = api_key_create(project=project, scopes=["read"]).raw_key
    client = Client(headers={"authorization": f"Bearer {key}"})
    texts = queries(args.warmup + args.queries, random.Random(args.seed))
    print(f"{len(texts)} {args.mode} searches ({args.warmup} warm-up)...")

    def search(index: int) -> None:
        body = {"query": texts[index], "mode": args.mode, "limit": 10}
        response = client.post("/api/v1/memories/search/", body, "application/json")
        if response.status_code != 200:
            raise SystemExit(f"search failed: {response.status_code} {response.content[:300]!r}")

    timings = timed_requests(search, len(texts), args.warmup)
    wall, measured = timings.wall, len(timings.wall)
    statement_rows = timings.statement_rows(args.top)
    summary = {
        "mode": args.mode,
        "row_level_security": args.rls,
        "request_ms": percentiles(wall),
        "sql_ms_per_search": round(statistics.mean(timings.sql), 2),
        "statements_per_search": round(statistics.mean(timings.statements), 1),
    }
    print(f"\n{args.mode} search, row-level security {args.rls}, {measured} measured (ms)")
    print(table(["", "p50", "p95", "p99", "n"], [["request", *summary["request_ms"].values()]]))
    print(
        f"SQL per search: mean {summary['sql_ms_per_search']} ms in "
        f"{summary['statements_per_search']} statements (the semantic side runs beside the "
        "keyword side on its own connection: its statements are not in these figures)"
    )
    print("\nstatements by time per search")
    print(table(["ms/search", "count/search", "statement"], statement_rows))
    path = write_results(f"search-profile-{args.n}", {**summary, "statements": statement_rows})
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
