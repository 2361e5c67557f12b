"""Open streams per key: websockets, SSE streams and MCP streams share one cap per API key
(MEMORY_MAX_STREAMS_PER_KEY, or the project's `limits["streams"]`); the connection past it is
refused (websocket close 4429, HTTP 429 with Retry-After) while other keys still connect, and
a slot comes free when its connection ends or, left behind by a dead process, expires."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator, WebsocketCommunicator
from django.db import connections

from memoryplatform.asgi import application
from tenants import streams
from tenants.streams import StreamSlot
from tests.conftest import Tenant, make_tenant

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _close_worker_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


async def tenant(slug: str, **limits: Any) -> Tenant:
    def make() -> Tenant:
        made = make_tenant(slug)
        made.project.limits = limits
        made.project.save(update_fields=["limits"])
        return made

    return await sync_to_async(make)()


async def open_websocket(key: str) -> tuple[WebsocketCommunicator, Any]:
    """A websocket of `key`: (communicator, its first message: `subscribed` or a close)."""
    ws = WebsocketCommunicator(application, f"/ws/events/?api_key={key}")
    connected, _ = await ws.connect()
    assert connected
    return ws, await ws.receive_output(timeout=5)


def subscribed(message: Any) -> bool:
    return message["type"] == "websocket.send" and "subscribed" in message["text"]


async def http_get(key: str, path: str) -> tuple[ApplicationCommunicator, dict[str, Any]]:
    """A GET through the ASGI app: (communicator, its response start)."""
    scope = {
        "type": "http",
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [
            (b"host", b"testserver"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"accept", b"text/event-stream"),
        ],
    }
    stream = ApplicationCommunicator(application, scope)
    await stream.send_input({"type": "http.request", "body": b"", "more_body": False})
    return stream, await stream.receive_output(10)


async def refused_body(stream: ApplicationCommunicator, start: dict[str, Any]) -> dict[str, Any]:
    assert start["status"] == 429
    headers = {name.lower(): value for name, value in start["headers"]}
    assert int(headers[b"retry-after"]) > 0
    return json.loads((await stream.receive_output(5))["body"])


async def test_a_key_past_its_cap_of_websockets_is_closed_with_4429_and_another_key_connects():
    alice = await tenant("alice", streams=2)
    bob = await tenant("bob", streams=2)
    first, hello = await open_websocket(alice.key)
    assert subscribed(hello)
    second, hello = await open_websocket(alice.key)
    assert subscribed(hello)
    _, refused = await open_websocket(alice.key)
    assert refused == {"type": "websocket.close", "code": 4429}
    others, hello = await open_websocket(bob.key)
    assert subscribed(hello)
    await first.disconnect()  # its slot comes free at once
    fourth, hello = await open_websocket(alice.key)
    assert subscribed(hello)
    for ws in (second, others, fourth):
        await ws.disconnect()


async def test_websockets_sse_and_mcp_streams_share_one_cap(settings):
    settings.MEMORY_MAX_STREAMS_PER_KEY = 1
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    ws, hello = await open_websocket(alice.key)
    assert subscribed(hello)

    stream, start = await http_get(alice.key, "/api/v1/events/")
    error = (await refused_body(stream, start))["error"]
    assert error["code"] == "too_many_streams"
    assert "1 open streams" in error["message"]
    stream, start = await http_get(alice.key, "/sse")  # MCP's legacy SSE transport
    assert (await refused_body(stream, start))["error"]["code"] == "too_many_streams"

    stream, start = await http_get(bob.key, "/api/v1/events/")  # another key streams
    assert start["status"] == 200
    assert b"subscribed" in (await stream.receive_output(5))["body"]
    await stream.send_input({"type": "http.disconnect"})
    await ws.disconnect()


async def test_an_sse_stream_frees_its_slot_when_it_ends(settings):
    settings.MEMORY_MAX_STREAMS_PER_KEY = 1
    alice = await sync_to_async(make_tenant)("alice")
    stream, start = await http_get(alice.key, "/api/v1/events/")
    assert start["status"] == 200
    assert b"subscribed" in (await stream.receive_output(5))["body"]
    await stream.send_input({"type": "http.disconnect"})
    await stream.wait(5)
    for _ in range(50):  # the closed stream's generator is finalised on the event loop
        ws, hello = await open_websocket(alice.key)
        if subscribed(hello):
            break
        await asyncio.sleep(0.1)
    assert subscribed(hello)
    await ws.disconnect()


async def test_without_a_cap_a_key_opens_any_number_of_streams(settings):
    settings.MEMORY_MAX_STREAMS_PER_KEY = 0
    alice = await sync_to_async(make_tenant)("alice")
    sockets = [await open_websocket(alice.key) for _ in range(5)]
    assert all(subscribed(hello) for _, hello in sockets)
    for ws, _ in sockets:
        await ws.disconnect()


async def test_the_slot_of_a_connection_that_died_without_closing_expires(monkeypatch):
    monkeypatch.setattr(streams, "SLOT_SECONDS", 1)
    alice = await tenant("alice", streams=1)
    api_key = await sync_to_async(lambda: alice.project.api_keys.select_related("project").get())()
    held = await StreamSlot.acquire(api_key)  # a process that died holding it: never released
    assert held is not None
    assert await StreamSlot.acquire(api_key) is None
    await asyncio.sleep(2.1)  # the database cache keeps expiry times to the second
    again = await StreamSlot.acquire(api_key)
    assert again is not None
    await again.release()


async def test_a_renewed_slot_outlives_its_first_expiry(monkeypatch):
    monkeypatch.setattr(streams, "SLOT_SECONDS", 2)
    monkeypatch.setattr(streams, "RENEW_SECONDS", 0)
    alice = await tenant("alice", streams=1)
    api_key = await sync_to_async(lambda: alice.project.api_keys.select_related("project").get())()
    held = await StreamSlot.acquire(api_key)
    assert held is not None
    for _ in range(3):
        await asyncio.sleep(1)
        await held.renew_if_due()
    assert await StreamSlot.acquire(api_key) is None  # 3 s on, still held
    await held.release()
    assert await StreamSlot.acquire(api_key) is not None


MALFORMED_FRAMES = [
    '{"action": "subscribe", "types": 5}',
    '{"action": "subscribe", "types": [{}]}',
    '{"action": "subscribe", "user_id": {"a": 1}}',
    "not json",
    '{"action": "resume", "last_event_id": [1]}',
    "[" * 100 + "]" * 100,
]


async def test_a_malformed_frame_gets_an_error_and_the_socket_stays_open():
    alice = await tenant("alice", streams=1)
    ws, first = await open_websocket(alice.key)
    assert subscribed(first)
    for frame in MALFORMED_FRAMES:
        await ws.send_to(text_data=frame)
        answer = await ws.receive_json_from(timeout=5)
        assert answer["type"] == "error", (frame, answer)
    await ws.send_to(bytes_data=b"\xff\xfe")
    assert (await ws.receive_json_from(timeout=5))["type"] == "error"
    await ws.send_json_to({"action": "subscribe", "types": ["memory_created"]})
    assert (await ws.receive_json_from(timeout=5))["type"] == "subscribed"  # still open
    await ws.disconnect()


async def test_consumers_that_fail_give_back_their_slots_so_a_good_socket_connects(monkeypatch):
    from memoryplatform.consumers import EventsConsumer

    async def broken(self: Any, after: int) -> None:
        raise RuntimeError("a failure of any kind")

    monkeypatch.setattr(EventsConsumer, "_replay", broken)
    alice = await tenant("alice", streams=2)
    for _ in range(2):  # the cap's worth of sockets, each failing in a handler
        ws, first = await open_websocket(alice.key)
        assert subscribed(first)
        await ws.send_json_to({"action": "resume", "last_event_id": 1})
        with pytest.raises(RuntimeError):
            await ws.receive_output(timeout=5)
    monkeypatch.undo()
    ws, first = await open_websocket(alice.key)
    assert subscribed(first), first  # the failed consumers freed their slots
    await ws.disconnect()
