"""`manage.py serve` stops what it started: on SIGTERM (or Ctrl-C) the server stops, the
django-q2 worker cluster and its processes are gone, and so is the embedded PostgreSQL.

The server runs with a data directory of its own, so it starts (and must stop) an embedded
PostgreSQL of its own: the test suite's server is never touched."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

START_TIMEOUT_SECONDS = 240  # a new data directory: initdb and every migration, on 2 cores
STOP_TIMEOUT_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_env(data_dir: Path) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in {"DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"}
        and not name.startswith("MEMORY_")
    }
    return {
        **env,
        "MEMORY_DATA_DIR": str(data_dir),
        "MEMORY_TESTING": "false",  # a real server: jobs go to the worker, not inline
        "MEMORY_EMBEDDING_WARMUP": "false",
        "MEMORY_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
    }


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    """One for the module: the first server initialises it (initdb, every migration), the
    next starts on it as a restarted server would. Short: a socket's path fits 107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="serve-"))
    yield path
    _stop_postgres_left_in(path)
    shutil.rmtree(path, ignore_errors=True)


def _postmaster_pid(data_dir: Path) -> int | None:
    pid_file = data_dir / "postgres" / "postmaster.pid"
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(pid_file.read_text().splitlines()[0])
    return None


def _stop_postgres_left_in(data_dir: Path) -> None:
    """Only after a failure: the test's own server, never the suite's."""
    pid = _postmaster_pid(data_dir)
    if pid and psutil.pid_exists(pid):
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            if str(data_dir) in " ".join(process.cmdline()):
                process.terminate()
                process.wait(10)


def _wait_until_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> dict:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        assert server.poll() is None, f"serve exited ({server.returncode}):\n{log.read_text()}"
        with contextlib.suppress(httpx.HTTPError):
            response = httpx.get(f"{url}/health", timeout=5)
            if response.status_code == 200:
                return response.json()
        time.sleep(0.5)
    raise AssertionError(f"serve did not become ready:\n{log.read_text()}")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not all(_gone(pid) for pid in pids):
        time.sleep(0.2)
    return [pid for pid in pids if not _gone(pid)]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_serve_stops_its_worker_and_its_embedded_postgres_on_a_signal(
    data_dir: Path, stop_signal: int
) -> None:
    port = _free_port()
    log = data_dir / "serve.log"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port)],
            cwd=settings.BASE_DIR,
            env=_server_env(data_dir),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    started: list[int] = []
    try:
        health = _wait_until_ready(f"http://127.0.0.1:{port}", server, log)
        assert health["checks"]["worker"]["detail"].startswith("worker cluster started by serve")
        postgres = _postmaster_pid(data_dir)
        assert postgres is not None and psutil.pid_exists(postgres)
        started = [child.pid for child in psutil.Process(server.pid).children(recursive=True)]
        assert started, "serve started no worker"

        server.send_signal(stop_signal)
        server.wait(STOP_TIMEOUT_SECONDS)  # raises if it does not stop

        assert _wait_gone(started, 10) == [], log.read_text()  # the worker cluster, all of it
        assert _wait_gone([postgres], 10) == [], log.read_text()  # the embedded PostgreSQL
        assert not (data_dir / "metrics" / f"worker-{server.pid}").exists()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        for pid in started:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def _servers(serve_pid: int) -> list[psutil.Process]:
    """The live daphne processes `serve` runs (a killed one is a zombie until reaped)."""
    found = []
    for child in psutil.Process(serve_pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if child.status() != psutil.STATUS_ZOMBIE and "daphne" in " ".join(child.cmdline()):
                found.append(child)
    return found


def _manage(data_dir: Path, env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


async def _events_on_every_socket(url: str, key: str, sockets: int) -> list[str]:
    import asyncio
    import json

    import websockets

    feeds = [
        await websockets.connect(url.replace("http", "ws") + f"/ws/events/?api_key={key}")
        for _ in range(sockets)
    ]
    try:
        for feed in feeds:
            assert json.loads(await asyncio.wait_for(feed.recv(), 30))["type"] == "subscribed"
        async with httpx.AsyncClient(timeout=120) as http:
            created = await http.post(
                f"{url}/api/v1/memories/",
                json={"content": "Told to every server process", "user_id": "u1"},
                headers={"Authorization": f"Bearer {key}"},
            )
            assert created.status_code == 201, created.text
        return [json.loads(await asyncio.wait_for(f.recv(), 30))["type"] for f in feeds]
    finally:
        for feed in feeds:
            await feed.close()


def test_serve_with_several_workers_shares_events_restarts_a_dead_one_and_stops_all(
    data_dir: Path,
) -> None:
    import asyncio

    import redis

    redis_url = "redis://127.0.0.1:6379/13"
    try:
        redis.Redis.from_url(redis_url).flushdb()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    env = {**_server_env(data_dir), "REDIS_URL": redis_url}
    refused = subprocess.run(
        [sys.executable, "manage.py", "serve", "--workers", "2", "--no-migrate"],
        cwd=settings.BASE_DIR,
        env=_server_env(data_dir),  # no REDIS_URL
        capture_output=True,
        text=True,
        timeout=START_TIMEOUT_SECONDS,
    )
    assert refused.returncode != 0 and "REDIS_URL" in refused.stderr

    port, log = _free_port(), data_dir / "serve-workers.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as output:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--port", str(port), "--workers", "2"],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_until_ready(url, server, log)
        first = _servers(server.pid)
        assert len(first) == 2, log.read_text()

        _manage(data_dir, env, "create_project", "workers")
        key = _manage(data_dir, env, "create_api_key", "--project", "workers")
        received = asyncio.run(_events_on_every_socket(url, key, sockets=4))
        assert received == ["memory_created"] * 4  # whichever process each socket is on

        first[0].kill()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            now = _servers(server.pid)
            if len(now) == 2 and first[0].pid not in {p.pid for p in now}:
                break
            time.sleep(0.5)
        else:
            raise AssertionError(f"the dead server process was not replaced:\n{log.read_text()}")
        _wait_until_ready(url, server, log)

        servers = [p.pid for p in _servers(server.pid)]
        postgres = _postmaster_pid(data_dir)
        server.send_signal(signal.SIGTERM)
        server.wait(STOP_TIMEOUT_SECONDS)
        assert _wait_gone(servers, 10) == [], log.read_text()
        assert postgres is not None and _wait_gone([postgres], 10) == [], log.read_text()
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
