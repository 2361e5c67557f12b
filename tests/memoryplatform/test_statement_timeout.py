"""Statement timeouts: a statement of a request (HTTP, MCP tool call) running past
MEMORY_STATEMENT_TIMEOUT_MS is cancelled and the client is told so; jobs and commands have no
such limit. The timeout is a startup option of the request roles' connections, so each test
closes those connections before and after (its own setting, then the default again)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import HttpCommunicator
from django.db import OperationalError, connection, transaction

from platformcore.lib.db_threads import (
    close_connections,
    executor_with_connections,
    with_connection,
)
from platformcore.lib.timeouts import statement_timed_out
from tests.conftest import make_tenant


@pytest.fixture
def tiny_timeout(settings: Any) -> Iterator[None]:
    settings.MEMORY_STATEMENT_TIMEOUT_MS = 200
    close_connections()  # the request threads open new connections, with the tiny timeout
    yield
    close_connections()


def _show_timeout_and_sleep() -> tuple[str, BaseException | None]:
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        shown = cursor.fetchone()[0]
        try:
            cursor.execute("SELECT pg_sleep(5)")
        except OperationalError as exc:
            return shown, exc
    return shown, None


@pytest.mark.django_db(transaction=True)
def test_a_request_threads_connection_cancels_a_statement_past_the_timeout(tiny_timeout):
    requests = executor_with_connections(1, "test-requests", serves_requests=True)
    try:
        shown, error = requests.submit(with_connection, _show_timeout_and_sleep).result()
        requests.submit(lambda: connection.close()).result()
    finally:
        requests.shutdown()
    assert shown == "200ms"
    assert error is not None and statement_timed_out(error)


@pytest.mark.django_db(transaction=True)
def test_a_job_or_command_thread_has_no_statement_timeout(settings):
    settings.MEMORY_STATEMENT_TIMEOUT_MS = 200
    jobs = executor_with_connections(1, "test-jobs")
    try:
        with connection.cursor() as main:  # the main thread: a command's
            main.execute("SHOW statement_timeout")
            assert main.fetchone()[0] == "0"

        def shown() -> str:
            with connection.cursor() as cursor:
                cursor.execute("SHOW statement_timeout")
                return str(cursor.fetchone()[0])

        assert jobs.submit(with_connection, shown).result() == "0"
        jobs.submit(lambda: connection.close()).result()
    finally:
        jobs.shutdown()


async def _get(key: str, path: str) -> tuple[int, dict[str, str], Any]:
    from memoryplatform.asgi import application

    headers = [(b"host", b"testserver"), (b"authorization", f"Bearer {key}".encode())]
    response = await HttpCommunicator(application, "GET", path, headers=headers).get_response(
        timeout=20
    )
    names = {name.decode().lower(): value.decode() for name, value in response["headers"]}
    return response["status"], names, json.loads(response["body"])


@contextmanager
def memories_locked() -> Iterator[None]:
    """Another session holds the memories table while the block runs: a request's read of it
    waits, as behind a long migration or a runaway statement."""
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("LOCK TABLE memories_memory IN ACCESS EXCLUSIVE MODE")
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join()


@pytest.mark.django_db(transaction=True)
def test_a_rest_request_stuck_past_the_timeout_gets_503_with_a_clear_message(tiny_timeout):
    alice = make_tenant("alice")
    with memories_locked():
        status, headers, body = async_to_sync(_get)(alice.key, "/api/v1/memories/?user_id=u1")
    assert status == 503
    assert headers["retry-after"]
    assert body["error"]["code"] == "statement_timeout"
    assert "ran longer than 0.2 s and was cancelled" in body["error"]["message"]
    status, _, _ = async_to_sync(_get)(alice.key, "/api/v1/memories/?user_id=u1")
    assert status == 200  # the next request runs normally


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_mcp_tool_call_stuck_past_the_timeout_is_a_tool_error(tiny_timeout):
    from asgiref.sync import sync_to_async

    from tests.mcpserver.conftest import in_process

    alice = await sync_to_async(make_tenant)("alice")
    async with in_process(alice) as client:
        with memories_locked():
            result = await client.call_tool("memory_stats", {})
        assert result.is_error
        assert "statement_timeout: A database statement" in result.content[0].text
        assert not (await client.call_tool("memory_stats", {})).is_error
