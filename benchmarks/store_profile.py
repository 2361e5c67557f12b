"""Where a single store's time goes: every SQL statement of `POST /api/v1/memories/`, timed.

    MEMORY_EMBEDDED_DB_NAME=bench_scale python -m benchmarks.store_profile --n 100000
    python -m benchmarks.store_profile --n 100000 --stores 300 --rls false

Stores `--stores` new memories, one request at a time, into the project of
`benchmarks.scale --n N` (build it first), through the whole Django stack in process (Django's
test client: authentication, middleware, the view, the service, on-commit work), with the
default settings (row-level security on unless `--rls false`). Each statement the request
runs is timed from the client side of the connection and grouped by its shape (literals
removed). Reported: the request's p50/p95, its SQL time and statement count, the encoder's
time for the same texts, and the statements by total time per store. The stored memories are
deleted at the end (hard delete; memories a store merged into are kept, with the merge).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import time

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.request_clock import Timings, timed_requests


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="the benchmarks.scale store")
    parser.add_argument("--stores", type=int, default=200, help="memories stored one by one")
    parser.add_argument("--warmup", type=int, default=20, help="stores before measuring")
    parser.add_argument("--rls", choices=["true", "false"], default="true")
    parser.add_argument("--top", type=int, default=25, help="statements listed")
    parser.add_argument(
        "--cprofile", type=int, default=0, help="also print this many functions by own time"
    )
    parser.add_argument("--seed", type=int, default=5)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ["MEMORY_ROW_LEVEL_SECURITY"] = args.rls
    os.environ.setdefault("MEMORY_SEARCH_CACHE_SECONDS", "60")  # the default
    setup_django("bench_scale")
    from platformcore.lib.project_scope import all_projects

    # the benchmark's own reads and writes (the project, a key, the clean-up) as an operator;
    # each request narrows itself to its key's project, as in production
    with all_projects("benchmark: store profile"):
        return profile(args)


def profile(args: argparse.Namespace) -> int:
    from django.test import Client

    from benchmarks.scale import generate
    from memories.models import Memory
    from memories.services.embedding import embed_or_none
    from tenants.models import Project
    from tenants.services import api_key_create

    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        raise SystemExit(f"no store of {args.n}: run benchmarks.scale --n {args.n} first")
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    key = api_key_create(project=project, scopes=["read", "write"]).raw_key
    client = Client(headers={"authorization": f"Bearer {key}"})
    items = generate(args.warmup + args.stores, random.Random(args.seed), start=args.n * 20)
    bodies = [
        {"content": item.content, "user_id": item.user_id, "memory_type": item.memory_type}
        for item in items
    ]
    created: list[str] = []
    print(f"storing {len(bodies)} memories one by one into {live} ({args.warmup} warm-up)...")
    profiler = cProfile.Profile()
    timings = Timings()

    def store(index: int) -> None:
        response = client.post("/api/v1/memories/", bodies[index], "application/json")
        if response.status_code >= 300:
            raise SystemExit(f"store failed: {response.status_code} {response.content[:300]!r}")
        timings.note_stages(response)
        body = response.json()
        if body["created"]:  # a merge answers with the older memory's id
            created.append(body["id"])
        if (index + 1) % 50 == 0:
            print(f"  {index + 1}/{len(bodies)}")

    measuring = profiler.enable if args.cprofile else None
    timed_requests(store, len(bodies), args.warmup, measuring, timings)
    profiler.disable()
    texts = [body["content"] for body in bodies[args.warmup :]]
    encode = []
    for text in texts:
        started = time.perf_counter()
        embed_or_none([text])
        encode.append((time.perf_counter() - started) * 1000)
    Memory.objects.filter(pk__in=created).delete()

    wall, measured = timings.wall, len(timings.wall)
    statement_rows = timings.statement_rows(args.top)
    summary = {
        "memories": live,
        "stores": measured,
        "row_level_security": args.rls,
        "request_ms": percentiles(wall),
        "sql_ms_per_store": round(statistics.median(timings.sql), 2),
        "statements_per_store": round(statistics.median(timings.statements), 1),
        "encode_ms": percentiles(encode),
        "stores_per_s": round(measured / (sum(wall) / 1000), 1),
    }
    print(f"\na store into {live} memories, {measured} measured (ms)")
    print(table(["", "p50", "p95", "p99", "n"], [["request", *summary["request_ms"].values()]]))
    print(
        f"SQL per store: median {summary['sql_ms_per_store']} ms in "
        f"{summary['statements_per_store']} statements; encoder p50 "
        f"{summary['encode_ms']['p50']} ms; {summary['stores_per_s']} stores/s sequential"
    )
    stage_rows = timings.stage_rows()
    print("\nstages before the answer (Server-Timing; the graph's extraction runs after it)")
    print(table(["stage", "p50", "p95", "mean", "share"], stage_rows))
    print("\nstatements by time per store")
    print(table(["ms/store", "count/store", "statement"], statement_rows))
    if args.cprofile:
        print("\nPython functions by own time (all stores)")
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.cprofile)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.cprofile)
    path = write_results(
        f"store-profile-{args.n}", {**summary, "stages": stage_rows, "statements": statement_rows}
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
