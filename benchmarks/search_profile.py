"""Where a search's time goes: every SQL statement of `POST /api/v1/memories/search/`, timed.

    MEMORY_EMBEDDED_DB_NAME=bench_scale python -m benchmarks.search_profile --n 100000
    python -m benchmarks.search_profile --n 100000 --mode keyword --rls false
    MEMORY_EMBEDDED_DB_NAME=bench_locomo python -m benchmarks.search_profile --locomo

`--locomo` searches the store `benchmarks.locomo` built (its conversations' turns, each
stored plainly) with the data set's questions, each within its conversation's run, as an
agent searches its own session: a store of a few thousand memories where every default stage
(dates, neighbours, the graph and session boosts) has work to do.

Searches the store of `benchmarks.scale --n N` with natural questions, one request at a time,
through the whole Django stack in process, with the default settings: row-level security on
(`--rls false` to compare), the default search mode (hybrid) and limit, no result cache (each
question is searched, not answered from the cache). Reported: the request's p50/p95, SQL time
and statements per search, and the statements by time per search (`benchmarks.store_profile`
groups them the same way).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.request_clock import Timings, timed_requests


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="the benchmarks.scale store")
    parser.add_argument("--queries", type=int, default=200, help="searches measured")
    parser.add_argument("--warmup", type=int, default=20, help="searches before measuring")
    parser.add_argument("--mode", default="hybrid", choices=["hybrid", "semantic", "keyword"])
    parser.add_argument("--rls", choices=["true", "false"], default="true")
    parser.add_argument("--top", type=int, default=15, help="statements listed")
    parser.add_argument("--seed", type=int, default=9)
    parser.add_argument(
        "--locomo", action="store_true", help="the benchmarks.locomo store and its questions"
    )
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

    slug = "locomo-plain" if args.locomo else f"scale-{args.n}"
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        built_by = "benchmarks.locomo" if args.locomo else f"benchmarks.scale --n {args.n}"
        raise SystemExit(f"no store {slug}: run {built_by} first")
    key = api_key_create(project=project, scopes=["read"]).raw_key
    client = Client(headers={"authorization": f"Bearer {key}"})
    count = args.warmup + args.queries
    if args.locomo:
        searches = locomo_questions(count, random.Random(args.seed))
    else:
        searches = [(text, {}) for text in queries(count, random.Random(args.seed))]
    print(f"{len(searches)} {args.mode} searches in {slug} ({args.warmup} warm-up)...")

    def search(index: int) -> None:
        text, filters = searches[index]
        body = {"query": text, "mode": args.mode, "limit": 10, **filters}
        response = client.post("/api/v1/memories/search/", body, "application/json")
        if response.status_code != 200:
            raise SystemExit(f"search failed: {response.status_code} {response.content[:300]!r}")
        timings.note_stages(response)

    timings = Timings()
    timed_requests(search, len(searches), args.warmup, timings=timings)
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
    stage_rows = timings.stage_rows()
    print("\nstages (Server-Timing; the semantic side's embed and vector run beside keyword)")
    print(table(["stage", "p50", "p95", "mean", "share"], stage_rows))
    print("\nstatements by time per search")
    print(table(["ms/search", "count/search", "statement"], statement_rows))
    name = "locomo" if args.locomo else args.n
    path = write_results(
        f"search-profile-{name}", {**summary, "stages": stage_rows, "statements": statement_rows}
    )
    print(f"\nresults: {path}")
    return 0


def locomo_questions(count: int, draws: random.Random) -> list[tuple[str, dict]]:
    """`count` questions of the LoCoMo data, each with the filter of its conversation's run."""
    from benchmarks.locomo import DEFAULT_DATA

    pairs = [
        (str(qa["question"]), {"run_id": sample["sample_id"]})
        for sample in json.loads(DEFAULT_DATA.read_text())
        for qa in sample["qa"]
    ]
    return [draws.choice(pairs) for _ in range(count)]


if __name__ == "__main__":
    raise SystemExit(main())
