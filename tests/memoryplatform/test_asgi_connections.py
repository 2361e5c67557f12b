"""Under ASGI (daphne, what `serve` runs) requests run on many threads; the server must reuse
a bounded set of PostgreSQL connections, not open one per thread until the database refuses
clients ("too many clients already")."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx
import pytest
from django.db import connection

from platformcore.db.rls import as_owner
from tests.mcpserver.conftest import (  # noqa: F401 (fixture)
    child_env,
    live_server_mcp,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

REQUESTS = 150  # more than the embedded server's 100 connections
SERVER_POOL = 10  # MEMORY_DB_POOL_SIZE's default; asgi.py turns pooling on for the server
# besides the pool: hybrid search's second threads (4) and the two background writers
# (reinforcement, search statistics), one connection each (memoryplatform/settings)
BESIDE_THE_POOL = 6


def _server_connections(server) -> int:
    """The live server's connections (by their application name), not this process's nor
    another live server's."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name = %s",
            [server.application],
        )
        return cursor.fetchone()[0]


@contextlib.contextmanager
def _client_with_tea(server, tenant) -> Iterator[httpx.Client]:
    """A client of the live server, as `tenant`, whose project holds one memory."""
    headers = {"Authorization": f"Bearer {tenant.key}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=30) as client:
        body = {"content": "User likes tea", "user_id": "u1"}
        stored = client.post("/api/v1/memories/", json=body)
        assert stored.status_code == 201, stored.text
        yield client


def _search_tea(client: httpx.Client) -> list[str]:
    # a search reads, and reinforces what it returns after the response is sent
    response = client.post("/api/v1/memories/search/", json={"query": "tea"})
    assert response.status_code == 200, response.text
    return [hit["content"] for hit in response.json()["results"]]


def test_many_requests_reuse_a_bounded_pool_of_connections(live_server_mcp, alice):  # noqa: F811
    with _client_with_tea(live_server_mcp, alice) as client:
        for _ in range(REQUESTS):
            _search_tea(client)
    assert _settled_connections(live_server_mcp) <= SERVER_POOL + BESIDE_THE_POOL


def _settled_connections(server, seconds: float = 10.0) -> int:
    """The fewest connections seen within a few seconds: a thread finishing its after-response
    work may hold one for a moment on a busy machine; a leak keeps them all."""
    deadline = time.monotonic() + seconds
    fewest = _server_connections(server)
    while fewest > SERVER_POOL + BESIDE_THE_POOL and time.monotonic() < deadline:
        time.sleep(0.25)
        fewest = min(fewest, _server_connections(server))
    return fewest


def test_connections_the_database_closed_are_replaced_not_used(live_server_mcp, alice):  # noqa: F811
    # pooled connections are checked without a round trip (their socket tells when the
    # server has closed them): a restart or an administrator's kill costs no failed request
    with _client_with_tea(live_server_mcp, alice) as client:
        for _ in range(3):
            for _ in range(5):
                _search_tea(client)
            with as_owner(connection), connection.cursor() as cursor:  # the administrator
                cursor.execute(
                    "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND application_name = %s",
                    [live_server_mcp.application],
                )
                assert cursor.fetchone()[0] >= 1
        assert _search_tea(client) == ["User likes tea"]
