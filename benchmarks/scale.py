"""Search at scale: latency of every mode, with and without filters, server-side and through
HTTP; HNSW recall@10 against exact search; ingest throughput against the raw encoder.

    MEMORY_EMBEDDED_DB_NAME=bench_search python -m benchmarks.scale --n 10000
    python -m benchmarks.scale --n 100000 --reuse        # search again without re-ingesting
    python -m benchmarks.scale --n 100000 --near-duplicates consolidation  # then consolidate
    python -m benchmarks.scale --n 100000 --vector-index deferred  # then index the vectors
    python -m benchmarks.scale --n 100000 --reuse --small 2000  # and a small tenant beside

N synthetic memories are generated from varied templates (people, projects, tools, places,
times; 10 memory types, tags, metadata, 50 users), stored through `memories_import` (bulk
writes of `--batch`, `--in-flight` at once, as `manage.py import_memories` does; each one
`memories_create_bulk`, the service behind the API's bulk endpoint); as ~15% of them merge
into near-duplicates, more are generated and stored until N are live (`top_up`, outside the
ingest figures); the searched tables are vacuumed and analysed (`settle`); then the N are
searched with natural questions. HTTP latency comes from a
live uvicorn server on 127.0.0.1 started by the benchmark, one keep-alive client, a bounded
request loop; it includes authentication, query embedding, search, serialisation and the
reinforcement UPDATE.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import time
from functools import partial
from typing import Any

from benchmarks.common import (
    Timer,
    add_model_argument,
    percentiles,
    setup_django,
    table,
    write_results,
)

PEOPLE = [
    "Alice",
    "Bob",
    "Chen",
    "Dana",
    "Elif",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
]
PROJECTS = [
    "billing",
    "search",
    "onboarding",
    "payments",
    "mobile app",
    "data pipeline",
    "auth service",
    "analytics",
    "checkout",
    "notifications",
    "reporting",
    "CRM sync",
]
TOOLS = [
    "PostgreSQL",
    "Redis",
    "Kafka",
    "React",
    "Django",
    "Kubernetes",
    "Terraform",
    "Rust",
    "TypeScript",
    "Airflow",
    "Grafana",
    "Sentry",
    "pgvector",
    "Celery",
    "GraphQL",
    "Go",
]
PLACES = ["Berlin", "Lisbon", "Nairobi", "Osaka", "Toronto", "Lima", "Oslo", "Seoul", "Austin"]
TIMES = [
    "on Monday",
    "last week",
    "in March",
    "before the release",
    "after the outage",
    "during the offsite",
    "this quarter",
    "yesterday",
    "at the retro",
    "in the standup",
]
TEMPLATES = [
    "{p} decided to move the {j} to {t} {w}",
    "{p} prefers {t} over {t2} for the {j} because it is easier to operate",
    "The {j} failed {w} because {t} ran out of connections",
    "To deploy the {j}, run the {t} migration first and then restart the workers",
    "{p} lives in {l} and works on the {j} team",
    "{p} learned that {t} caches must be warmed before load tests of the {j}",
    "Pattern: the {j} slows down every time {t} compacts its storage",
    "{p} and {p2} met in {l} {w} to plan the {j} roadmap",
    "The {j} error rate doubled {w} after the {t} upgrade",
    "{p} observed that {t} dashboards for the {j} lag by five minutes",
    "Procedure for rotating {t} credentials used by the {j}: revoke, issue, redeploy",
    "{p} is allergic to peanuts and prefers vegetarian food at team dinners in {l}",
]
TYPES = [
    "fact",
    "decision",
    "preference",
    "error",
    "procedure",
    "observation",
    "learning",
    "pattern",
    "relation",
    "episode",
]
QUERIES = [
    "why did the {j} fail",
    "what database does the {j} use",
    "who works on the {j} team",
    "how do I deploy the {j}",
    "what does {p} prefer",
    "where does {p} live",
    "problems with {t} {w}",
    "how to rotate credentials",
    "food preferences for team dinners",
    "{t} performance issues in the {j}",
]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--n", type=int, default=10_000, help="memories to store (more are generated: see top_up)"
    )
    parser.add_argument("--reuse", action="store_true", help="keep an existing ingest of N")
    parser.add_argument("--queries", type=int, default=200, help="searches per measurement")
    parser.add_argument("--batch", type=int, default=500, help="memories per bulk create")
    parser.add_argument(
        "--in-flight", type=int, default=2, help="bulk writes in flight (memories_import)"
    )
    parser.add_argument("--single", type=int, default=200, help="memories stored one by one")
    parser.add_argument("--recall-queries", type=int, default=400)
    parser.add_argument(
        "--more",
        type=int,
        default=0,
        help="then store this many more into the N already there (ingest cost at size N)",
    )
    parser.add_argument(
        "--near-duplicates",
        choices=["inline", "consolidation"],
        default="inline",
        help="bulk writes merge near-duplicates (inline) or leave them to consolidation, "
        "which is then run and timed after the ingest",
    )
    parser.add_argument(
        "--vector-index",
        choices=["inline", "deferred", "build"],
        default="inline",
        help="bulk writes insert into the HNSW index (inline) or leave it to the indexing job "
        "(deferred), which is then run and timed after the ingest; or (build) the graph is "
        "dropped before the ingest and built once after it, as for an initial load",
    )
    parser.add_argument(
        "--no-top-up",
        action="store_true",
        help="measure the live memories the N left (no further ones stored to make up merges)",
    )
    parser.add_argument(
        "--no-consolidation",
        action="store_true",
        help="with --near-duplicates consolidation: measure the store as the import left it, "
        "before the consolidation job merges its near-duplicates (a million in one session)",
    )
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument(
        "--no-maintenance",
        action="store_true",
        help="measure the graph as the ingest left it (no vector_index_health check)",
    )
    parser.add_argument(
        "--users",
        type=int,
        default=USERS,
        help="users the memories belong to (50; more keeps each user's share at larger N)",
    )
    parser.add_argument(
        "--small",
        type=int,
        default=0,
        help="also store a small tenant of this many memories beside the N (default writes) "
        "and measure its searches server-side",
    )
    parser.add_argument("--seed", type=int, default=7)
    add_model_argument(parser)
    return parser.parse_args(argv)


USERS = 50  # the users memories belong to (--users): near-duplicates are found within one


def user(rng: random.Random) -> str:
    return f"user-{rng.randrange(USERS)}"


def fill(template: str, rng: random.Random) -> str:
    people = rng.sample(PEOPLE, 2)
    tools = rng.sample(TOOLS, 2)
    return template.format(
        p=people[0],
        p2=people[1],
        j=rng.choice(PROJECTS),
        t=tools[0],
        t2=tools[1],
        l=rng.choice(PLACES),
        w=rng.choice(TIMES),
    )


def generate(n: int, rng: random.Random, start: int = 0) -> list[Any]:
    from memories.services.memories import MemoryInput

    items = []
    for index in range(start, start + n):
        text = f"{fill(rng.choice(TEMPLATES), rng)} (note {index})"
        items.append(
            MemoryInput(
                content=text,
                user_id=user(rng),
                memory_type=rng.choice(TYPES),
                tags=rng.sample(["ops", "team", "infra", "food", "plan", "bug", "howto"], 2),
                metadata={"priority": rng.randrange(1, 6), "team": rng.choice(PROJECTS)},
                source="scale-benchmark",
            )
        )
    return items


def raw_encoder_rate(texts: list[str]) -> float:
    from memories.embeddings import get_embedder

    embedder = get_embedder()
    embedder.embed_batch(texts[:32])  # load the model outside the clock
    with Timer() as timer:
        embedder.embed_batch(texts)
    return len(texts) / timer.seconds


def ingest(project: Any, items: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    from django.conf import settings
    from django.utils import timezone

    from memories.services.importing import memories_import
    from memories.services.memories import memory_create
    from platformcore.lib.actor import command

    actor = command("bench")
    sample = [item.content for item in items[: min(len(items), 2000)]]
    raw = raw_encoder_rate(sample)
    single = items[: args.single]
    with Timer() as one_by_one:
        for item in single:
            memory_create(project=project, data=item, actor=actor)
    rest = items[args.single :]
    done = 0

    def report(count: int) -> None:
        nonlocal done
        done += count
        if done % (args.batch * 4) == 0:
            print(f"  {done}/{len(rest)} stored ({done / bulk_elapsed(bulk):.0f}/s)")

    started = timezone.now()
    if args.vector_index == "build":
        drop_graph()
    with Timer() as bulk:
        memories_import(
            project=project,
            items=rest,
            actor=actor,
            batch_size=args.batch,
            in_flight=args.in_flight,
            progress=report,
            near_duplicates=args.near_duplicates,
            vector_index=import_mode(args),
        )
    bulk_rate = len(rest) / bulk.seconds if rest else 0.0
    after = raw_encoder_rate(sample)  # again: one reading is easily disturbed by the machine
    raw = (raw + after) / 2
    deferred = deferred_jobs(project, started, len(rest), bulk.seconds, raw, args)
    return {
        "raw_encoder_per_s": round(raw, 1),
        "raw_encoder_before_after_per_s": [round(raw * 2 - after, 1), round(after, 1)],
        "single_per_s": round(len(single) / one_by_one.seconds, 1) if single else 0.0,
        "bulk_per_s": round(bulk_rate, 1),
        "bulk_vs_raw": round(bulk_rate / raw, 3) if raw else 0.0,
        "bulk_seconds": round(bulk.seconds, 1),
        "bulk_batch": args.batch,
        "bulk_in_flight": args.in_flight,
        "graph_extraction": getattr(settings, "MEMORY_GRAPH_EXTRACTION", "n/a"),
        "dedup_threshold": getattr(settings, "MEMORY_DEDUP_THRESHOLD", "n/a"),
        "near_duplicates": args.near_duplicates,
        "vector_index": args.vector_index,
        **deferred,
    }


def deferred_jobs(
    project: Any, started: Any, count: int, bulk_seconds: float, raw: float, args: Any
) -> dict[str, Any]:
    """The work the options moved out of the writes, done and timed as the jobs would do it:
    the indexing of deferred vectors, then the consolidation run that covers the ingest; and
    the rate with them counted in."""
    if not count or (args.near_duplicates, args.vector_index) == ("inline", "inline"):
        return {}
    from memories.services.consolidation import memories_consolidate
    from memories.services.vector_index import index_pending_vectors
    from platformcore.lib.actor import command

    out: dict[str, Any] = {}
    seconds = bulk_seconds
    if args.vector_index == "build":
        print("building the vector index once over the ingest...")
        with Timer() as timer:
            out["build"] = build_graph(project)
        out["indexing_seconds"] = round(timer.seconds, 1)
        seconds += timer.seconds
    if args.vector_index == "deferred":
        print("indexing the deferred vectors...")
        with Timer() as timer:
            out["indexed"] = index_pending_vectors(project=project).indexed
        out["indexing_seconds"] = round(timer.seconds, 1)
        seconds += timer.seconds
    if args.near_duplicates == "consolidation" and not args.no_consolidation:
        print("consolidating what the ingest stored...")
        with Timer() as timer:
            report = memories_consolidate(project=project, actor=command("bench"), since=started)
        out["consolidation_seconds"] = round(timer.seconds, 1)
        out["consolidation_merged"] = report.memories_merged
        seconds += timer.seconds
    out["bulk_with_jobs_per_s"] = round(count / seconds, 1)
    out["bulk_with_jobs_vs_raw"] = round(count / seconds / raw, 3) if raw else 0.0
    return out


def import_mode(args: argparse.Namespace) -> str:
    """The bulk writes' vector_index: `build` imports as `deferred` does (no graph inserts)."""
    return "inline" if args.vector_index == "inline" else "deferred"


def drop_graph() -> None:
    """An initial load without the HNSW graph (pgvector's advice: load, then index). The
    benchmark's database holds nothing else; on a shared deployment every project's semantic
    search would fall back to exact ranking meanwhile."""
    from django.db import connection

    from memories.services.vector_index import INDEX
    from platformcore.db.rls import as_owner

    with as_owner(connection), connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {INDEX}")


def build_graph(project: Any) -> dict[str, Any]:
    """The deferred vectors marked indexed while there is no graph to insert them into (one
    UPDATE), then the graph built once over all of them (vector_index_rebuild, which also
    reindexes the users' vectors the UPDATE wore)."""
    from django.db import connection, transaction

    from memories.services.vector_index import vector_index_rebuild

    with Timer() as marking, transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "UPDATE memories_memory SET vector_pending = false"
            " WHERE project_id = %s AND vector_pending",
            [project.pk],
        )
    settle()  # the UPDATE's old row versions gone before the graph is built over the table
    rebuild = vector_index_rebuild().as_dict()
    return {"marking_seconds": round(marking.seconds, 1), **rebuild}


def top_up(project: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Near-duplicates merge on write, so N generated memories store ~15% fewer rows: store
    further generated ones (not timed into the ingest figures) until N are live, so that the
    latency and recall figures are read at N memories."""
    from memories.models import Memory
    from memories.services.importing import memories_import
    from memories.services.vector_index import index_pending_vectors
    from platformcore.lib.actor import command

    live = Memory.objects.filter(project=project, deleted_at__isnull=True)
    generated, stored = 0, live.count()
    with Timer() as timer:
        while stored < args.n:
            # fresh draws: a replay of the ingest's would merge into what it stored
            draws = random.Random(f"{args.seed}-top-up-{generated}")
            more = generate(int((args.n - stored) * 1.5) + 10, draws, start=args.n + generated)
            generated += len(more)
            memories_import(
                project=project,
                items=more,
                actor=command("bench"),
                batch_size=args.batch,
                vector_index=import_mode(args),
            )
            if args.vector_index != "inline":
                index_pending_vectors(project=project)
            stored = live.count()
            print(f"  topped up: {stored} live after {args.n + generated} generated")
    return {"generated": generated, "live": stored, "seconds": round(timer.seconds, 1)}


def settle() -> float:
    """VACUUM and ANALYZE the tables a search reads once the writing is done (what autovacuum
    does within minutes of a large import), then CHECKPOINT, so that neither runs in the middle
    of the latency figures (server-side hybrid read 21.3 / 34.5 ms right after a top-up, 16.3 /
    26.8 on the same store later)."""
    from django.db import DatabaseError, connection

    from entities.models import Entity, EntityMemory, Relation
    from memories.models import Memory

    print("settling the store (VACUUM ANALYZE, CHECKPOINT)...")
    with Timer() as timer, connection.cursor() as cursor:
        for model in (Memory, Entity, EntityMemory, Relation):
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(model._meta.db_table)}")
        try:  # the pages VACUUM dirtied are written now, not during the figures
            cursor.execute("CHECKPOINT")
        except DatabaseError as exc:  # a role without pg_checkpoint: left to the server
            print(f"  no CHECKPOINT: {exc}".strip())
    return round(timer.seconds, 1)


def bulk_elapsed(timer: Timer) -> float:
    return max(time.perf_counter() - timer.start, 1e-9)


def queries(count: int, rng: random.Random) -> list[str]:
    return [fill(rng.choice(QUERIES), rng) for _ in range(count)]


def fresh(texts: list[str], rng: random.Random) -> list[str]:
    """New questions for each measurement, so one mode does not find the query embeddings of
    another in the per-process cache (repeats within a list happen, as with real agents)."""
    return queries(len(texts), rng)


def filtered(rng: random.Random) -> dict[str, Any]:
    return {"user_id": user(rng), "memory_types": rng.sample(TYPES, 3)}


def server_side(project: Any, texts: list[str], rng: random.Random) -> dict[str, Any]:
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import memory_search
    from memories.selectors.search_types import SearchQuery

    out = {}
    for mode in ("keyword", "semantic", "hybrid"):
        for with_filters in (False, True):
            samples = []
            for text in fresh(texts, rng):
                filters = MemoryFilters(**filtered(rng)) if with_filters else MemoryFilters()
                query = SearchQuery(text=text, mode=mode, filters=filters, limit=10)
                started = time.perf_counter()
                memory_search(project=project, query=query)
                samples.append((time.perf_counter() - started) * 1000)
            out[f"{mode}{' +filters' if with_filters else ''}"] = percentiles(samples)
    return out


def small_tenant(args: argparse.Namespace, texts: list[str], rng: random.Random) -> dict[str, Any]:
    """A small project beside the large one, as a new customer of a large deployment: `--small`
    generated memories stored with the default writes (once; kept between runs), then the
    server-side searches of every mode for it."""
    from memories.models import Memory
    from memories.services.importing import memories_import
    from platformcore.lib.actor import command
    from tenants.models import Project
    from tenants.services import project_create

    slug = f"scale-small-{args.small}"
    project = Project.objects.filter(slug=slug).first()
    if project is None or not Memory.objects.filter(project=project).exists():
        project = project or project_create(slug=slug)
        print(f"storing a small tenant of {args.small} memories...")
        items = generate(args.small, random.Random(args.seed + 3), start=10**9)
        memories_import(project=project, items=items, actor=command("bench"))
        settle()
    live = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    out = server_side(project, texts, rng)
    print(f"\nserver-side latency, a small tenant of {live} memories beside them (ms)")
    print(table(["search", "p50", "p95", "p99", "n"], [[k, *v.values()] for k, v in out.items()]))
    return {"memories": live, **out}


def hnsw_recall(project: Any, texts: list[str], rng: random.Random) -> dict[str, float]:
    """HNSW top 10 against the exact top 10 (same filters), averaged over the queries, two ways:
    `ids`, the overlap of the two id sets; `distance`, ann-benchmarks' definition, where a
    returned memory counts if it is no farther than the exact 10th (near-identical memories
    tie at the boundary, and either of two tied ones is a correct answer)."""
    from django.conf import settings
    from django.db import connection, transaction

    from memories.embeddings import get_embedder
    from memories.selectors.filters import MemoryFilters
    from memories.selectors.search import search_queryset
    from memories.selectors.search.semantic import semantic_ranked
    from memories.selectors.search_types import SearchQuery

    vectors = get_embedder().embed_batch(texts)
    out = {}
    # the top 10 of the statement a search runs, which ranks MEMORY_SEARCH_CANDIDATES (50): at
    # LIMIT 10 the planner may take another plan for a user's rows (the HNSW scan with the
    # user filter instead of the exact index-only ranking) than any search does
    pool = max(10, settings.MEMORY_SEARCH_CANDIDATES)
    for with_filters in (False, True):
        ranked = partial(semantic_ranked, limit=pool, min_similarity=0, user_scoped=with_filters)
        by_id, by_distance = [], []
        for vector in vectors:
            filters = MemoryFilters(user_id=user(rng)) if with_filters else MemoryFilters()
            base = search_queryset(project=project, query=SearchQuery(text="x", filters=filters))
            approx = ranked(base, vector)[:10]
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL enable_indexscan = off")
                exact = ranked(base, vector)[:10]
            if not exact:
                continue
            boundary = min(similarity for _, similarity in exact) - 1e-6
            by_id.append(len({m.pk for m, _ in approx} & {m.pk for m, _ in exact}) / len(exact))
            by_distance.append(sum(1 for _, s in approx if s >= boundary) / len(exact))
        label = "filtered (one user)" if with_filters else "unfiltered"
        out[f"{label}, ids"] = round(sum(by_id) / max(len(by_id), 1), 4)
        out[f"{label}, distance"] = round(sum(by_distance) / max(len(by_distance), 1), 4)
    return out


def index_health(project: Any, texts: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """What the hourly `vector_index_health` job would do with the store as the ingest left
    it: the graph's wear since its build, and a rebuild once it reaches
    MEMORY_HNSW_REBUILD_CHURN. With a rebuild, the benchmark's own recall is read before it
    too (the figures that follow are read after it)."""
    from memories.services.vector_index import vector_index_maintain, vector_index_rebuild

    if args.no_maintenance:
        return {"skipped": True}
    print("checking the vector index's health (the hourly job)...")
    check = vector_index_maintain(rebuild=False)
    out: dict[str, Any] = {"check": check.as_dict()}
    if check.max_churn and check.churn >= check.max_churn:
        before = hnsw_recall(project, texts, random.Random(args.seed + 2))
        out["hnsw_recall_before_rebuild"] = before
        print(f"HNSW recall@10 vs exact before the rebuild: {before}")
        out["rebuild"] = vector_index_rebuild().as_dict()
        # the rebuild's files are written out by the next checkpoint, spread over minutes:
        # the very minutes of the latency figures (HTTP hybrid p50 / p95 22.8-25.9 /
        # 33.4-37.6 ms during it, 20.4-21.5 / 27.6-29.6 after a CHECKPOINT)
        out["settle_after_rebuild_seconds"] = settle()
    print(out)
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(port: int, *, checkout: str | None = None, env: dict[str, str] | None = None):
    """uvicorn serving memoryplatform.asgi on 127.0.0.1:`port`, from `checkout` (its code:
    cwd and PYTHONPATH; this one by default) with `env` over this process's environment."""
    environment = {**os.environ, "MEMORY_LOG_LEVEL": "WARNING", **(env or {})}
    if checkout:
        from django.conf import settings

        environment["PYTHONPATH"] = checkout
        # the same database: another checkout's embedded server would start its own, empty
        environment.setdefault("MEMORY_DATA_DIR", str(settings.DATA_DIR))
    command = [sys.executable, "-m", "uvicorn", "memoryplatform.asgi:application"]
    options = ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    return subprocess.Popen([*command, *options, "--no-access-log"], env=environment, cwd=checkout)


def search_body(text: str, kind: str, rng: random.Random) -> dict[str, Any]:
    """The request body of a search of `kind` ("hybrid", "keyword +filters", ...)."""
    mode, _, filters = kind.partition(" +")
    body = {"query": text, "mode": mode, "limit": 10}
    return body | filtered(rng) if filters else body


KINDS = [f"{mode}{f}" for mode in ("keyword", "semantic", "hybrid") for f in ("", " +filters")]


def through_http(project: Any, texts: list[str], rng: random.Random) -> dict[str, Any]:
    import httpx

    from tenants.services import api_key_create

    key = api_key_create(project=project, scopes=["read"]).raw_key
    port = free_port()
    server = start_server(port)
    try:
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {key}"},
            timeout=60,
        )
        wait_for_server(client)
        # the server loads its model first (all-mpnet-base-v2: ~0.4 GB, longer on a busy machine)
        client.post("/api/v1/memories/search/", json={"query": "warm up"}, timeout=900)
        out = {}
        for kind in KINDS:
            samples = []
            for text in fresh(texts, rng):
                body = search_body(text, kind, rng)
                started = time.perf_counter()
                response = client.post("/api/v1/memories/search/", json=body)
                samples.append((time.perf_counter() - started) * 1000)
                response.raise_for_status()
            out[kind] = percentiles(samples)
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def wait_for_server(client: Any) -> None:
    for _ in range(120):
        try:
            client.get("/api/v1/memories/?limit=1")
            return
        except Exception:
            time.sleep(0.5)
    raise RuntimeError("the benchmark server did not start")


def main(argv: list[str] | None = None) -> int:
    global USERS
    args = parse_args(argv)
    USERS = max(args.users, 1)
    setup_django("bench_search", args.model)
    from memories.models import Memory
    from tenants.models import Project
    from tenants.services import project_create

    rng = random.Random(args.seed)
    slug = f"scale-{args.n}"
    project = Project.objects.filter(slug=slug).first()
    stored = Memory.objects.filter(project=project).count() if project else 0
    ingest_stats: dict[str, Any] = {"reused": True}
    # a finished ingest of N stores fewer than N rows: near-duplicates merge on write
    if not (args.reuse and project is not None and stored >= args.n * 0.5):
        if project is not None:
            project.delete()
        project = project_create(slug=slug)
        print(f"generating and storing {args.n} memories...")
        ingest_stats = ingest(project, generate(args.n, rng), args)
        print(ingest_stats)
    if not args.no_top_up:
        ingest_stats["top_up"] = top_up(project, args)
    if args.more:
        print(f"storing {args.more} more memories into the {args.n}...")
        more = generate(args.more, random.Random(args.seed + 1), start=args.n * 10)
        ingest_stats["more"] = ingest(project, more, args)
        print(ingest_stats["more"])
    topped_up = ingest_stats.get("top_up", {}).get("generated")
    if "reused" not in ingest_stats or topped_up or args.more:
        ingest_stats["settle_seconds"] = settle()
    stored = Memory.objects.filter(project=project, deleted_at__isnull=True).count()
    recall_texts = queries(args.recall_queries, rng)
    health = index_health(project, recall_texts, args)

    texts = queries(args.queries, rng)
    server = server_side(project, texts, rng)
    print(f"\nserver-side latency, {stored} memories (ms)")
    print(
        table(["search", "p50", "p95", "p99", "n"], [[k, *v.values()] for k, v in server.items()])
    )
    small = small_tenant(args, texts, rng) if args.small else {}
    recall = hnsw_recall(project, recall_texts, random.Random(args.seed + 2))
    print(f"\nHNSW recall@10 vs exact: {recall}")
    http = {}
    if not args.no_http:
        http = through_http(project, texts, rng)
        print(f"\nHTTP latency, {stored} memories (ms)")
        print(
            table(["search", "p50", "p95", "p99", "n"], [[k, *v.values()] for k, v in http.items()])
        )
    path = write_results(
        f"scale-{args.n}",
        {
            "memories": stored,
            "ingest": ingest_stats,
            "server_ms": server,
            "http_ms": http,
            "hnsw_recall_at_10": recall,
            "index_health": health,
            "small_tenant_server_ms": small,
        },
    )
    print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
