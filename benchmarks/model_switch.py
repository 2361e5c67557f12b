"""A live store moved to another embedding model while it is searched and written: how long
`manage.py reembed --model` takes, and what searches and stores see meanwhile.

    python -m benchmarks.model_switch --n 100000 --model quality   # fast -> quality
    MEMORY_EMBEDDED_DB_NAME=bench_scale python -m benchmarks.scale --n 100000 --reuse \\
        --model quality --no-maintenance                           # then search the result

The store is a copy of `benchmarks.scale`'s (`--source`, bench_scale: build it first with
`benchmarks.scale --n N --near-duplicates consolidation --vector-index deferred`), made as
`<source>_<model>` (CREATE DATABASE ... TEMPLATE), the database `benchmarks.scale --model`
reads, so the switched store is then measured as any other. A server (`manage.py serve`, as
`benchmarks.load` starts it) answers `--searchers` clients, each searching every
`--search-every` seconds, and one client storing a memory every `--store-every` seconds,
from before `reembed` starts until after it ends. Reported: the switch's time and stages,
every request's outcome (an error or a search with no result is a failure), latency per
stage, and, at the end, that the store holds every memory written meanwhile with a vector of
the new model.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.common import machine, percentiles, table, write_results


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="the scale store's size")
    parser.add_argument("--model", default="quality", help="preset or model to switch to")
    parser.add_argument("--source", default="bench_scale", help="the scale store's database")
    parser.add_argument("--fresh", action="store_true", help="copy the source store again")
    parser.add_argument("--searchers", type=int, default=1)
    parser.add_argument(
        "--search-every", type=float, default=0.2, help="pause after each search (seconds)"
    )
    parser.add_argument("--store-every", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=7)
    return parser.parse_args(argv)


def copy_store(source: str, target: str, fresh: bool) -> None:
    """`target` as a copy of `source` (kept if it exists, unless `fresh`)."""
    import psycopg
    from django.db import connection

    connection.ensure_connection()  # starts the embedded server
    host = connection.settings_dict["HOST"]
    connection.close()
    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as db:
        exists = db.execute("SELECT 1 FROM pg_database WHERE datname = %s", [target]).fetchone()
        if exists and not fresh:
            print(f"{target}: kept (--fresh copies {source} again)")
            return
        db.execute(f'DROP DATABASE IF EXISTS "{target}"')
        started = time.perf_counter()
        db.execute(f'CREATE DATABASE "{target}" TEMPLATE "{source}"')
        print(f"{target}: copied from {source} in {time.perf_counter() - started:.1f} s")


def setup(args: argparse.Namespace) -> tuple[str, str]:
    """Django on the copy, configured with the source's model; the model to switch to."""
    from benchmarks.models import preset_model

    target_model = preset_model(args.model)
    suffix = args.model if args.model in ("fast", "quality") else Path(args.model).name
    target = f"{args.source}_{suffix.lower().replace('-', '_')}"
    os.environ["MEMORY_EMBEDDED_DB_NAME"] = args.source
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")
    os.environ.setdefault("MEMORY_ROW_LEVEL_SECURITY", "false")
    os.environ.setdefault("MEMORY_SEARCH_CACHE_SECONDS", "0")
    import django
    from django.db import connection

    django.setup()
    copy_store(args.source, target, args.fresh)
    os.environ["MEMORY_EMBEDDED_DB_NAME"] = target
    connection.settings_dict["NAME"] = target
    return target, target_model


class Outcomes:
    """Every request's latency, with the switch's stage when it was sent."""

    def __init__(self) -> None:
        self.samples: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.failures: list[str] = []
        self.stored: list[str] = []
        self.stage = "before"


async def searcher(
    http: Any, rng: random.Random, every: float, out: Outcomes, done: asyncio.Event
) -> None:
    from benchmarks.scale import queries

    while not done.is_set():
        stage = out.stage
        started = time.perf_counter()
        try:
            response = await http.post(
                "/api/v1/memories/search/", json={"query": queries(1, rng)[0], "limit": 10}
            )
        except Exception as exc:
            out.failures.append(f"search: {type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200 or not response.json()["results"]:
            out.failures.append(f"search: {response.status_code} {response.text[:200]}")
        else:
            out.samples[("search", stage)].append(elapsed)
        await asyncio.sleep(every)


async def writer(http: Any, every: float, out: Outcomes, done: asyncio.Event) -> None:
    from benchmarks.scale import TEMPLATES, fill

    rng, sent = random.Random(11), 0
    while not done.is_set():
        sent += 1
        stage = out.stage
        body = {
            "content": f"{fill(rng.choice(TEMPLATES), rng)} (during the switch {sent})",
            "user_id": "switch-writer",
        }
        started = time.perf_counter()
        try:
            response = await http.post("/api/v1/memories/", json=body)
        except Exception as exc:
            out.failures.append(f"store: {type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 201:
            out.failures.append(f"store: {response.status_code} {response.text[:200]}")
        else:
            out.samples[("store", stage)].append(elapsed)
            out.stored.append(response.json()["id"])
        await asyncio.sleep(every)


async def watch_stage(out: Outcomes, done: asyncio.Event) -> None:
    """The switch's stage as the platform records it (the `next` embedding-space row)."""
    from asgiref.sync import sync_to_async

    from memories.models import EmbeddingSpace

    @sync_to_async
    def stage() -> str | None:
        row = EmbeddingSpace.objects.filter(key="next").only("stage").first()
        return row.stage if row else None

    while not done.is_set():
        now = await stage()
        if now is not None:
            out.stage = now
        elif out.stage != "before":
            out.stage = "after"
        await asyncio.sleep(0.5)


async def run(url: str, key: str, args: argparse.Namespace, target_model: str) -> dict[str, Any]:
    import httpx

    out, done = Outcomes(), asyncio.Event()
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        rng = random.Random(args.seed)
        tasks = [
            asyncio.create_task(
                searcher(http, random.Random(rng.random()), args.search_every, out, done)
            )
            for _ in range(args.searchers)
        ]
        tasks += [
            asyncio.create_task(writer(http, args.store_every, out, done)),
            asyncio.create_task(watch_stage(out, done)),
        ]
        await asyncio.sleep(10)  # a baseline before the switch
        started = time.perf_counter()
        command = [sys.executable, "manage.py", "reembed", "--model", target_model]
        process = await asyncio.create_subprocess_exec(*command, cwd=Path(__file__).parent.parent)
        code = await process.wait()
        seconds = time.perf_counter() - started
        out.stage = "after"
        await asyncio.sleep(10)  # and after it
        done.set()
        await asyncio.gather(*tasks)
    return {"reembed_exit": code, "reembed_seconds": round(seconds, 1), "outcomes": out}


def check(project: Any, stored: list[str], target_model: str) -> dict[str, Any]:
    """Every memory stored during the switch is there; every live memory has a vector of the
    recorded model, which is the target."""
    from memories.models import Memory
    from memories.services.embedding_space import recorded_space

    space = recorded_space()
    live = Memory.objects.filter(project=project, deleted_at__isnull=True)
    return {
        "recorded_model": space.model_name if space else None,
        "is_target": bool(space and Path(space.model_name).name == Path(target_model).name),
        "dimensions": space.dimensions if space else None,
        "stored_during": len(stored),
        "stored_during_found": Memory.objects.filter(pk__in=stored).count(),
        "live": live.count(),
        "live_without_vector": live.filter(embedding__isnull=True).count(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    target, target_model = setup(args)
    from benchmarks.load import start_server, wait_until_up
    from benchmarks.scale import free_port
    from platformcore.lib.project_scope import project_scope
    from tenants.models import Project
    from tenants.services import api_key_create

    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        raise SystemExit(f"no store of {args.n} in {args.source}: run benchmarks.scale first")
    with project_scope(project.pk):
        key = api_key_create(project=project, scopes=["read", "write"], name="switch").raw_key
    port = free_port()
    server = start_server(port, [], None)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, key)
        result = asyncio.run(run(url, key, args, target_model))
    finally:
        server.terminate()
        server.wait(timeout=30)
    out: Outcomes = result.pop("outcomes")
    stages = list(dict.fromkeys(stage for _, stage in out.samples))
    rows = []
    for kind in ("search", "store"):
        for stage in stages:
            figures = percentiles(out.samples.get((kind, stage), []))
            rows.append([kind, stage, figures["n"], figures["p50"], figures["p95"]])
    print("\n" + table(["request", "stage", "n", "p50 ms", "p95 ms"], rows))
    verdict = check(project, out.stored, target_model)
    failures = len(out.failures)
    print(
        f"\nreembed to {target_model}: exit {result['reembed_exit']} in "
        f"{result['reembed_seconds']} s; {failures} failed requests"
        + (f" (first: {out.failures[0]})" if failures else "")
    )
    print(f"after: {verdict}")
    path = write_results(
        "model_switch",
        {
            "machine": machine(),
            "database": target,
            "model": target_model,
            **result,
            "failures": out.failures[:20],
            "failed": failures,
            "latency": {f"{k}/{s}": percentiles(v) for (k, s), v in out.samples.items()},
            "after": verdict,
        },
    )
    print(f"results: {path}")
    ok = result["reembed_exit"] == 0 and not failures and verdict["is_target"]
    ok = ok and verdict["stored_during_found"] == verdict["stored_during"]
    return 0 if ok and not verdict["live_without_vector"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
