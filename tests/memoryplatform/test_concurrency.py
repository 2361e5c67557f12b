"""Many clients at once: no request waits for a connection it can never get, overload is shed
with 503 + Retry-After, and the real server answers 32 concurrent clients of mixed work
without a single 5xx."""

from __future__ import annotations

import argparse
import asyncio
import random
import threading
from collections.abc import Iterator

import pytest
from channels.testing import HttpCommunicator
from django.db import connection, connections

from benchmarks.load import run_level, wait_until_up
from memories.selectors.filters import MemoryFilters
from memories.selectors.search import memory_search
from memories.selectors.search_types import SearchQuery
from memories.services.memories import MemoryInput, memory_create
from platformcore.lib.actor import command
from platformcore.lib.asgi_http import ThreadedHTTPHandler
from platformcore.lib.db_threads import close_connections, executor_with_connections
from platformcore.lib.project_scope import carrying_scope
from tests.conftest import make_tenant
from tests.mcpserver.conftest import live_server_mcp  # noqa: F401 (fixture)


@pytest.fixture
def pooled_database() -> Iterator[None]:
    """The test database reached as the server reaches it: through connection pools, the
    pool of threads of no role holding a single connection and giving up after 2 s."""
    settings_dict = connections["default"].settings_dict
    saved = (dict(settings_dict["OPTIONS"]), settings_dict["CONN_MAX_AGE"])
    close_connections()
    connections.close_all()
    settings_dict["OPTIONS"]["pool"] = {"min_size": 1, "max_size": 1, "timeout": 2}
    settings_dict["CONN_MAX_AGE"] = 0
    try:
        yield
    finally:
        close_connections()
        connections.close_all()
        connections["default"].close_pool()
        settings_dict["OPTIONS"], settings_dict["CONN_MAX_AGE"] = saved


@pytest.mark.django_db(transaction=True)
def test_a_hybrid_search_takes_no_second_connection_from_its_threads_pool(
    alice, pooled_database
) -> None:
    # A request thread holds its connection while hybrid search runs the semantic statement
    # on a second thread. Were that thread's connection taken from the request threads' pool
    # (one connection for the one request thread here), the search would wait for a
    # connection its own request holds, until the pool gave up.
    for text in ("User prefers dark mode", "The billing job failed on Monday"):
        memory_create(
            project=alice.project,
            data=MemoryInput(content=text, user_id="u1"),
            actor=command("test"),
        )
    requests = executor_with_connections(1, "request")
    seen: dict[str, int] = {}

    def one_request() -> list[str]:
        try:
            with connection.cursor() as cursor:  # the request's own connection, held
                cursor.execute("SELECT pg_backend_pid()")
                seen["request"] = cursor.fetchone()[0]
            query = SearchQuery(text="dark mode", filters=MemoryFilters(user_id="u1"))
            result = memory_search(project=alice.project, query=query)
            return [hit.memory.content for hit in result.hits]
        finally:
            connection.close()  # back to its pool, as at the end of a request

    try:
        contents = requests.submit(carrying_scope(one_request)).result(timeout=30)
    finally:
        requests.shutdown()
    assert contents[0] == "User prefers dark mode"
    assert seen["request"]


async def _call(app, method: str, path: str) -> dict:
    headers = [(b"host", b"testserver")]
    return await HttpCommunicator(app, method, path, headers=headers).get_response(timeout=10)


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_requests_beyond_the_queue_are_answered_503_with_retry_after() -> None:
    handler = ThreadedHTTPHandler(threads=1, queue_limit=1, queue_timeout=0.3)
    release = threading.Event()
    handler._executor.submit(release.wait)  # the only thread is busy
    try:
        waiting = asyncio.ensure_future(_call(handler, "GET", "/health/"))
        await asyncio.sleep(0.2)  # it is read and waits for the thread
        refused = await _call(handler, "GET", "/health/")  # one is waiting already
        assert refused["status"] == 503
        assert dict(refused["headers"])[b"Retry-After"] == b"1"
        assert b'"overloaded"' in refused["body"]
        await asyncio.sleep(0.3)
    finally:
        release.set()
    waited = await waiting  # the thread came free after the wait's bound
    assert waited["status"] == 503
    served = await _call(handler, "GET", "/health/")
    assert served["status"] == 200, served["body"]  # and then it serves
    handler._executor.shutdown()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_server_answers_32_concurrent_clients_of_mixed_work_without_a_5xx(
    live_server_mcp,  # noqa: F811
) -> None:
    # daphne with the ASGI app's default settings, as `manage.py serve` runs it: 70 % hybrid
    # searches, 20 % stores, 10 % updates and deletes from 32 clients at once. Before the
    # connections were sized to the threads, this load froze the server within seconds
    # (PoolTimeout after 10 s, HTTP 500).
    tenant = make_tenant("load")
    for index in range(40):
        memory_create(
            project=tenant.project,
            data=MemoryInput(
                content=f"Grace decided to move the billing job to Kafka ({index})",
                user_id=f"user-{index % 5}",
            ),
            actor=command("test"),
        )
    wait_until_up(live_server_mcp.url, tenant.key)  # the embedding model loaded, as a probe sees
    args = argparse.Namespace(seconds=12.0, max_requests=3000, timeout=60.0)
    level = asyncio.run(
        run_level(live_server_mcp.url, tenant.key, 32, args, random.Random(5))
    ).summary()
    assert level["errors"] == {}, level["error_examples"]
    assert level["shed_503"] == 0
    assert level["per_kind_per_s"]["search"] > 0 and level["per_kind_per_s"]["store"] > 0
    assert level["per_kind_per_s"].get("update", 0) > 0
