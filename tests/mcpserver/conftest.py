"""Real MCP clients against real servers: `manage.py mcp` over stdio, and a live daphne
serving the platform's ASGI app over Streamable HTTP / SSE. Both child processes use the
test database, so tests that talk to them commit their data (transactional tests)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pytest
from django.conf import settings
from django.db import connection, connections
from mcp.client.session import ClientSession
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

MANAGE = str(settings.BASE_DIR / "manage.py")


def child_env(**extra: str) -> dict[str, str]:
    """Environment for a child server process that must use this test run's database."""
    name = connection.settings_dict["NAME"]
    env = {
        "MEMORY_EMBEDDED_DB_NAME": name,
        "MEMORY_JOBS_SYNC": "true",
        "MEMORY_LOG_LEVEL": "WARNING",
        "DJANGO_SETTINGS_MODULE": "memoryplatform.settings",
        "PYTHONUNBUFFERED": "1",
    }
    for passthrough in ("MEMORY_DATA_DIR", "PATH", "HOME", "HF_HOME", "MEMORY_EMBEDDING_PROVIDER"):
        if passthrough in os.environ:
            env[passthrough] = os.environ[passthrough]
    if os.environ.get("DATABASE_URL"):
        parts = urlsplit(os.environ["DATABASE_URL"])
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
    return {**env, **extra}


def structured(result: Any) -> Any:
    """A tool result's structured content (falling back to its JSON text)."""
    assert not result.is_error, result.content[0].text
    if result.structured_content is not None:
        return result.structured_content
    return json.loads(result.content[0].text)


@asynccontextmanager
async def stdio_session(key: str, profile: str = "standard") -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=[MANAGE, "mcp", "--api-key", key, "--profile", profile],
        env=child_env(),
        cwd=str(settings.BASE_DIR),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    process: subprocess.Popen[bytes]
    application: str = ""  # its connections' application_name (LIVE_SERVER_APPLICATION-port)

    @asynccontextmanager
    async def session(self, key: str) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            create_mcp_http_client(headers=headers) as http,
            streamable_http_client(f"{self.url}/mcp", http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session

    @asynccontextmanager
    async def sse_session(self, key: str) -> AsyncIterator[ClientSession]:
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            sse_client(f"{self.url}/sse", headers=headers) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


LIVE_SERVER_APPLICATION = "memoryplatform-live-server"


@pytest.fixture
def live_server_mcp(request: pytest.FixtureRequest, transactional_db: None) -> Iterator[LiveServer]:
    """daphne (what `manage.py serve` runs) serving memoryplatform.asgi on a free port. A test
    with a `server_env` marker (its own settings) gets a server of its own; the others of a
    module share one (`module_live_server`): it looks every key up per request, so each test's
    own tenants work on it, and starting a server (Django, the embedding model) is the slow
    part of these tests."""
    marker = request.node.get_closest_marker("server_env")
    if marker is None:
        shared: SharedLiveServer = request.getfixturevalue("module_live_server")
        yield shared.get()
        wait_until_server_idle()  # its late writes must not meet the flush that ends the test
        return
    extra = {name: str(value) for name, value in marker.kwargs.items()}
    server = start_live_server(extra)
    try:
        yield server
    finally:
        stop_live_server(server)


class SharedLiveServer:
    """One live server for a module's tests, started when the first asks for it (again if it
    died)."""

    def __init__(self) -> None:
        self.server: LiveServer | None = None

    def get(self) -> LiveServer:
        if self.server is None or self.server.process.poll() is not None:
            self.server = start_live_server({})
        return self.server

    def stop(self) -> None:
        if self.server is not None:
            stop_live_server(self.server)
            self.server = None


def start_live_server(extra: dict[str, str]) -> LiveServer:
    port = _free_port()
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port)]
    # named apart from any other live server (a session's, still up), so a test can count
    # this one's connections alone
    application = f"{LIVE_SERVER_APPLICATION}-{port}"
    process = subprocess.Popen(
        [*command, "memoryplatform.asgi:application"],
        env=child_env(PGAPPNAME=application, **extra),  # its connections, by name
        cwd=str(settings.BASE_DIR),
    )
    server = LiveServer(url=f"http://127.0.0.1:{port}", process=process, application=application)
    try:
        _wait_until_up(server.url, process)
    except BaseException:
        stop_live_server(server)
        raise
    return server


def stop_live_server(server: LiveServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


def wait_until_server_idle(timeout: float = 30.0) -> None:
    """Until the live server's connections have all been idle twice in a row: the writes it
    makes after answering (reinforcement, search statistics) must not meet the flush that ends
    a test, or PostgreSQL breaks the deadlock by failing the flush."""
    quiet, deadline = 0, time.monotonic() + timeout
    while quiet < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name LIKE %s"
                " AND state <> 'idle'",
                [f"{LIVE_SERVER_APPLICATION}%"],
            )
            busy = cursor.fetchone()[0]
        quiet = 0 if busy else quiet + 1


def _wait_until_up(url: str, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/health/", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError("server did not start")


async def deletion_reason(memory_id: str, within: float = 15.0) -> str | None:
    """The reason in a memory's DELETE history entry, waiting up to `within` seconds for a
    server process to write it (None if none came)."""
    import asyncio

    from asgiref.sync import sync_to_async

    from memories.models import MemoryHistory

    @sync_to_async
    def reason() -> str | None:
        entry = MemoryHistory.objects.filter(memory_id=memory_id, event="DELETE").first()
        return entry.new_values.get("reason") if entry else None

    deadline = time.monotonic() + within
    while (found := await reason()) is None and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    return found


@asynccontextmanager
async def in_process(tenant: Any, profile: str = "standard") -> AsyncIterator[Any]:
    """The SDK's client connected in-process to a fresh server of `profile`, as `tenant`."""
    from asgiref.sync import sync_to_async
    from mcp.client import Client

    from mcpserver.auth import bound_api_key
    from mcpserver.server import build_server
    from tenants.services import api_key_verify

    api_key = await sync_to_async(api_key_verify)(tenant.key)
    try:
        with bound_api_key(api_key):
            async with Client(build_server(profile)) as client:
                yield client
    finally:  # the key check's thread holds a connection: let the test database go
        await sync_to_async(connections.close_all)()
