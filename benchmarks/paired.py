"""Paired HTTP latency: two or more servers on one benchmark store, every question sent to
each of them in turn.

    MEMORY_EMBEDDED_DB_NAME=bench_s10 python -m benchmarks.paired --n 100000 \\
        before=/path/to/old/checkout after=. int8=.:MEMORY_EMBEDDING_QUERY_PRECISION=int8

On a shared VM a single pass moves by several ms within an hour (the machine's share of its
host changes), so two passes run an hour apart cannot tell a 2 ms change from the weather.
Here every question goes to each server in a random order before the next question, so drift
hits all of them alike: the difference between their figures is what differs between them.
With `--block N` each server answers N questions in a row (servers in a random order per
block): work a server leaves running after its responses (the reinforcement UPDATE) then
stays out of the other servers' timings, and drift still hits them alike within a block.

Each server is a uvicorn process serving `memoryplatform.asgi`, started from its checkout
(its code; `.` is this one) with optional environment overrides (`NAME=DIR:VAR=VALUE,...`),
on the store of `benchmarks.scale --n N` (run that first). Prints p50/p95/p99 per kind of
search and server, and writes JSON to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.scale import (
    KINDS,
    free_port,
    fresh,
    queries,
    search_body,
    start_server,
    wait_for_server,
)


def server_spec(text: str) -> tuple[str, str, dict[str, str]]:
    """`NAME=DIR[:VAR=VALUE,...]` as (name, checkout directory, environment overrides)."""
    name, sep, rest = text.partition("=")
    checkout, _, overrides = rest.partition(":")
    if not sep or not name or not checkout or not Path(checkout, "manage.py").is_file():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=CHECKOUT[:VAR=VALUE,...]")
    env = dict(pair.split("=", 1) for pair in overrides.split(",") if "=" in pair)
    return name, str(Path(checkout).resolve()), env


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("servers", nargs="+", type=server_spec, help="NAME=CHECKOUT[:VAR=VAL,...]")
    parser.add_argument("--n", type=int, default=100_000, help="the store of scale --n N")
    parser.add_argument("--queries", type=int, default=400, help="questions per kind")
    parser.add_argument("--kinds", default="hybrid,hybrid +filters", help=f"of {', '.join(KINDS)}")
    parser.add_argument(
        "--block",
        type=int,
        default=1,
        help="questions each server answers in a row before the next takes them (1: each "
        "question to every server in turn). More than 1 keeps what one server leaves running "
        "after its responses (the reinforcement UPDATE) out of the others' timings",
    )
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    args.kinds = [kind.strip() for kind in args.kinds.split(",")]
    if args.block < 1:
        parser.error("--block must be at least 1")
    unknown = sorted(set(args.kinds) - set(KINDS))
    if unknown:
        parser.error(f"unknown kinds: {', '.join(unknown)}")
    if len({name for name, _, _ in args.servers}) != len(args.servers):
        parser.error("server names must differ")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    setup_django("bench_search")
    import httpx

    from platformcore.lib.project_scope import project_scope
    from tenants.models import Project
    from tenants.services import api_key_create

    project = Project.objects.filter(slug=f"scale-{args.n}").first()
    if project is None:
        print(f"no store of {args.n}: run `python -m benchmarks.scale --n {args.n}` first")
        return 1
    with project_scope(project.id):  # a key row is the project's (row-level security when on)
        key = api_key_create(project=project, scopes=["read"]).raw_key
    servers, clients = [], {}
    try:
        for name, checkout, env in args.servers:
            port = free_port()
            servers.append(start_server(port, checkout=checkout, env=env))
            clients[name] = httpx.Client(
                base_url=f"http://127.0.0.1:{port}",
                headers={"Authorization": f"Bearer {key}"},
                timeout=60,
            )
        for client in clients.values():
            wait_for_server(client)
            for _ in range(5):  # model loaded, connections open
                client.post("/api/v1/memories/search/", json={"query": "warm up the model"})
        results = measure(clients, args)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    rows = [
        [kind, *(f"{s['p50']} / {s['p95']} / {s['p99']}" for s in by_server.values())]
        for kind, by_server in results.items()
    ]
    print(f"\nHTTP latency p50 / p95 / p99 (ms), paired, {args.queries} questions a kind")
    print(table(["search", *clients], rows))
    servers_json = [{"name": n, "checkout": c, "env": e} for n, c, e in args.servers]
    path = write_results(f"paired-{args.n}", {"servers": servers_json, "http_ms": results})
    print(f"\nresults: {path}")
    return 0


def measure(clients: dict[str, Any], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    rng = random.Random(args.seed)
    texts = queries(args.queries, rng)
    results: dict[str, dict[str, Any]] = {}
    for kind in args.kinds:
        samples: dict[str, list[float]] = {name: [] for name in clients}
        bodies = [search_body(text, kind, rng) for text in fresh(texts, rng)]
        for start in range(0, len(bodies), args.block):
            order = list(clients)
            rng.shuffle(order)
            for name in order:
                for body in bodies[start : start + args.block]:
                    started = time.perf_counter()
                    response = clients[name].post("/api/v1/memories/search/", json=body)
                    samples[name].append((time.perf_counter() - started) * 1000)
                    response.raise_for_status()
        results[kind] = {name: percentiles(values) for name, values in samples.items()}
        print(kind, {name: results[kind][name]["p95"] for name in clients}, flush=True)
    return results


if __name__ == "__main__":
    sys.exit(main())
