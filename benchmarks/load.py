"""Sustained throughput under concurrent clients: a mixed workload against a running server.

    python -m benchmarks.load                             # 1,000 memories; 1, 8, 16, 32 clients
    python -m benchmarks.load --n 100000 --reuse          # the store of benchmarks.scale --n 100000
    python -m benchmarks.load --clients 32 --seconds 60   # one level, longer
    python -m benchmarks.load --env MEMORY_DB_POOL_SIZE=0 # the server with other settings
    python -m benchmarks.load --checkout ../old           # the server of another checkout
    python -m benchmarks.load --workers 2 --env REDIS_URL=redis://127.0.0.1:6379/11
                                                          # serve --workers 2 (needs Redis)
    python -m benchmarks.load --faults                    # SIGKILLs under writes: faults.py

The server is the one users run: `manage.py serve --no-worker` (daphne, the ASGI app with its
default settings) on 127.0.0.1, started by the benchmark on a free port and stopped at the end.
Each level runs `--clients` concurrent keep-alive clients for `--seconds` (or until
`--max-requests`), each sending, at random: 70 % hybrid searches (natural questions over the
store), 20 % stores of a new memory, 10 % updates (new content) or deletes of a memory that
client stored. Reported per level: requests/s by kind, latency p50/p95/p99, errors (5xx and
transport failures), load shed (503 with Retry-After, counted apart), and the CPU the server
process and PostgreSQL used (from /proc, in cores: 2.0 is both cores of this machine).

Loopback only, bounded in time and requests: it stops by itself.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import percentiles, setup_django, table, write_results
from benchmarks.scale import free_port

MIX = (("search", 70), ("store", 20), ("update", 10))
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="memories in the searched store")
    parser.add_argument(
        "--reuse", action="store_true", help="search the store of `benchmarks.scale --n N`"
    )
    parser.add_argument("--clients", default="1,8,16,32", help="concurrency levels, in order")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each level")
    parser.add_argument("--max-requests", type=int, default=20_000, help="cap for each level")
    parser.add_argument("--timeout", type=float, default=60.0, help="a request's client timeout")
    parser.add_argument(
        "--env", action="append", default=[], help="KEY=VALUE for the server (repeatable)"
    )
    parser.add_argument("--checkout", help="serve the code of this checkout (before/after runs)")
    parser.add_argument("--workers", type=int, default=1, help="server processes (serve --workers)")
    parser.add_argument("--seed", type=int, default=11)
    return parser.parse_args(argv)


@dataclass
class Level:
    clients: int
    seconds: float = 0.0
    samples: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    shed: int = 0
    error_examples: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)

    def record_error(self, kind: str, what: str) -> None:
        self.errors[kind] += 1
        if len(self.error_examples) < 5:
            self.error_examples.append(f"{kind}: {what[:200]}")

    def summary(self) -> dict[str, Any]:
        everything = [ms for samples in self.samples.values() for ms in samples]
        total = len(everything) + sum(self.errors.values()) + self.shed
        return {
            "clients": self.clients,
            "seconds": round(self.seconds, 1),
            "requests_per_s": round(len(everything) / self.seconds, 1) if self.seconds else 0.0,
            "per_kind_per_s": {
                kind: round(len(s) / self.seconds, 1) for kind, s in self.samples.items()
            },
            "latency_ms": percentiles(everything),
            "latency_ms_by_kind": {kind: percentiles(s) for kind, s in self.samples.items()},
            "errors": dict(self.errors),
            "error_rate": round(sum(self.errors.values()) / total, 4) if total else 0.0,
            "shed_503": self.shed,
            "error_examples": self.error_examples,
            "cpu_cores": self.cpu,
        }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--faults" in argv:  # processes killed under a write load (benchmarks/faults.py)
        from benchmarks.faults import main as faults

        return faults(argv)
    args = parse_args(argv)
    os.environ.setdefault("MEMORY_EMBEDDED_DB_NAME", "bench_search" if args.reuse else "bench_load")
    setup_django(os.environ["MEMORY_EMBEDDED_DB_NAME"])
    rng = random.Random(args.seed)
    project = store(args, rng)
    from platformcore.lib.project_scope import project_scope
    from tenants.services import api_key_create

    with project_scope(project.pk):  # the project's own row (row-level security, if on)
        key = api_key_create(project=project, scopes=["read", "write"], name="load").raw_key
    port = free_port()
    server = start_server(port, args.env, args.checkout, args.workers)
    levels = []
    try:
        url = f"http://127.0.0.1:{port}"
        wait_until_up(url, key)
        for clients in [int(c) for c in args.clients.split(",")]:
            level = asyncio.run(run_level(url, key, clients, args, rng))
            levels.append(level.summary())
            print_level(levels[-1])
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    print("\n" + summary_table(levels))
    path = write_results(
        "load",
        {"memories": args.n, "reuse": args.reuse, "server_env": args.env, "levels": levels},
    )
    print(f"\nresults: {path}")
    return 0


def store(args: argparse.Namespace, rng: random.Random) -> Any:
    """The searched project: benchmarks.scale's store with --reuse, else N memories of the same
    generator stored here (once; a later run reuses them)."""
    from benchmarks.scale import generate
    from memories.models import Memory
    from memories.services.importing import memories_import
    from platformcore.lib.actor import command
    from platformcore.lib.project_scope import project_scope
    from tenants.models import Project
    from tenants.services import project_create

    slug = f"scale-{args.n}" if args.reuse else f"load-{args.n}"
    project = Project.objects.filter(slug=slug).first()
    if args.reuse:
        if project is None:
            raise SystemExit(f"no store of {args.n}: run `python -m benchmarks.scale --n {args.n}`")
        return project
    project = project or project_create(slug=slug)
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    if live < args.n:
        print(f"storing {args.n - live} memories...")
        with project_scope(project.pk):  # as a job: one project's (on Citus: its shard)
            memories_import(
                project=project, items=generate(args.n - live, rng), actor=command("load")
            )
    return project


def start_server(
    port: int, env: list[str], checkout: str | None, workers: int = 1
) -> subprocess.Popen[bytes]:
    """`manage.py serve` as a user starts it (daphne), without the background worker, from
    `checkout` (its code first on the path) or this one."""
    from django.conf import settings

    extra = dict(item.split("=", 1) for item in env)
    # one API key sends every request: the per-key rate limits (3,000 searches a minute by
    # default) would measure the limiter, not the server; `--env` still sets them
    unlimited = {f"MEMORY_RATE_LIMIT_{kind}": "none" for kind in ("READ", "SEARCH", "WRITE")}
    environment = {**os.environ, "MEMORY_LOG_LEVEL": "WARNING", **unlimited, **extra}
    environment.setdefault("MEMORY_DATA_DIR", str(settings.DATA_DIR))  # the same database
    root = Path(checkout).resolve() if checkout else Path(__file__).resolve().parent.parent
    environment["PYTHONPATH"] = str(root)
    command = [sys.executable, str(root / "manage.py"), "serve", "--no-worker", "--no-migrate"]
    # with REDIS_URL, serve's default is a process per core: name the count whenever it is set
    named = workers > 1 or bool(environment.get("REDIS_URL"))
    command += ["--port", str(port)] + (["--workers", str(workers)] if named else [])
    return subprocess.Popen(command, env=environment, cwd=root, stderr=subprocess.DEVNULL)


def wait_until_up(url: str, key: str) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {key}"}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            response = httpx.post(
                f"{url}/api/v1/memories/search/",
                json={"query": "warm up the model"},
                headers=headers,
                timeout=30,
            )
            if response.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the benchmark server did not start")


async def run_level(
    url: str, key: str, clients: int, args: argparse.Namespace, rng: random.Random
) -> Level:
    import httpx

    level = Level(clients)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {key}"}
    budget = [args.max_requests]
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=args.timeout, limits=limits
    ) as http:
        before = cpu_seconds()
        started = time.perf_counter()
        deadline = started + args.seconds
        # each run's clients store texts no earlier run stored: a rerun on a reused store
        # would otherwise time exact duplicates (answered without a write) as stores
        seeds = [rng.randrange(1 << 30) ^ time.time_ns() for _ in range(clients)]
        await asyncio.gather(
            *(client(http, random.Random(s), deadline, budget, level) for s in seeds)
        )
        level.seconds = time.perf_counter() - started
        after = cpu_seconds()
    level.cpu = {
        name: round((after[name] - before.get(name, 0.0)) / level.seconds, 2) for name in after
    }
    return level


async def client(
    http: Any, rng: random.Random, deadline: float, budget: list[int], level: Level
) -> None:
    """One agent: requests one after the other until the level's time or budget runs out."""
    from benchmarks.scale import queries

    mine: list[str] = []  # ids this client stored, for its updates and deletes
    while time.perf_counter() < deadline and budget[0] > 0:
        budget[0] -= 1
        kind = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX])[0]
        if kind == "update" and not mine:
            kind = "store"
        method, path, body = request_for(kind, rng, mine, queries(1, rng)[0])
        started = time.perf_counter()
        try:
            response = await http.request(method, path, json=body)
        except Exception as exc:  # a timeout or a refused connection: the server failed us
            level.record_error(kind, f"{type(exc).__name__}: {exc}")
            continue
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code == 503 and "retry-after" in response.headers:
            level.shed += 1
            await asyncio.sleep(min(float(response.headers["retry-after"]), 1.0))
        elif response.status_code >= 500 or response.status_code >= 400:
            level.record_error(kind, f"{response.status_code} {response.text}")
        else:
            level.samples[kind].append(elapsed)
            if kind == "store":
                mine.append(response.json()["id"])


def request_for(
    kind: str, rng: random.Random, mine: list[str], question: str
) -> tuple[str, str, dict[str, Any] | None]:
    from benchmarks.scale import TEMPLATES, fill, user

    if kind == "search":
        return "POST", "/api/v1/memories/search/", {"query": question, "limit": 10}
    text = f"{fill(rng.choice(TEMPLATES), rng)} (load {rng.randrange(1 << 40)})"
    if kind == "store":
        body = {"content": text, "user_id": user(rng), "memory_type": "fact", "tags": ["load"]}
        return "POST", "/api/v1/memories/", body
    if rng.random() < 0.5:
        return "PATCH", f"/api/v1/memories/{mine[-1]}/", {"content": text}
    return "DELETE", f"/api/v1/memories/{mine.pop()}/", None


def cpu_seconds() -> dict[str, float]:
    """CPU seconds used so far by the benchmark's server (and its children) and by PostgreSQL."""
    totals = {"server": 0.0, "postgres": 0.0}
    nodes = _citus_postmasters()  # the local Citus cluster's nodes, counted apart too
    parents: dict[int, int] = {}
    postgres: dict[int, float] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        name = stat[stat.find("(") + 1 : stat.rfind(")")]
        seconds = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
        if name.startswith("postgres"):
            totals["postgres"] += seconds
            parents[int(entry.name)] = int(fields[1])
            postgres[int(entry.name)] = seconds
        elif (" serve " in f"{cmdline} " or "daphne --fd" in cmdline) and int(entry.name) != me:
            totals["server"] += seconds
    for pid, seconds in postgres.items():
        node = nodes.get(pid) or nodes.get(parents.get(pid, 0))
        if node:
            totals[f"citus {node}"] = totals.get(f"citus {node}", 0.0) + seconds
    return totals


def _citus_postmasters() -> dict[int, str]:
    """{postmaster pid: node} of the cluster benchmarks/citus/cluster.py runs (var/citus)."""
    found = {}
    root = Path(__file__).resolve().parent.parent / "var" / "citus"
    for pidfile in root.glob("*/postmaster.pid"):
        try:
            found[int(pidfile.read_text().split()[0])] = pidfile.parent.name
        except (OSError, ValueError, IndexError):
            continue
    return found


def print_level(level: dict[str, Any]) -> None:
    latency = level["latency_ms"]
    print(
        f"{level['clients']:>3} clients: {level['requests_per_s']:7.1f} req/s, "
        f"p50 {latency['p50']} / p95 {latency['p95']} / p99 {latency['p99']} ms, "
        f"errors {sum(level['errors'].values())}, shed {level['shed_503']}, "
        f"cpu {level['cpu_cores']}"
    )
    for example in level["error_examples"]:
        print(f"      {example}")


def summary_table(levels: list[dict[str, Any]]) -> str:
    headers = ["clients", "req/s", "search/s", "store/s", "update/s", "p50", "p95", "p99"]
    headers += ["errors", "503", "server cpu", "pg cpu"]
    rows = []
    for level in levels:
        kinds = level["per_kind_per_s"]
        latency = level["latency_ms"]
        rows.append(
            [
                level["clients"],
                level["requests_per_s"],
                kinds.get("search", 0.0),
                kinds.get("store", 0.0),
                kinds.get("update", 0.0),
                latency["p50"],
                latency["p95"],
                latency["p99"],
                sum(level["errors"].values()),
                level["shed_503"],
                level["cpu_cores"].get("server", 0.0),
                level["cpu_cores"].get("postgres", 0.0),
            ]
        )
    return table(headers, rows)


if __name__ == "__main__":
    sys.exit(main())
