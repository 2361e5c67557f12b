"""The SQL-native server's Server-Sent Events at `/api/events`: its event names and payloads,
and `sync_complete` once the stream is in sync."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from tests.conftest import make_tenant

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _close_worker_thread_connections():
    yield
    await sync_to_async(connections.close_all)()


async def next_event(stream) -> tuple[str, dict, str | None]:
    while True:
        chunk = await asyncio.wait_for(stream.__anext__(), 5)
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        fields = dict(line.split(": ", 1) for line in text.strip().split("\n") if ": " in line)
        if "event" in fields:
            return fields["event"], json.loads(fields["data"]), fields.get("id")


async def test_the_stream_speaks_the_servers_event_names_payloads_and_sync_complete():
    alice = await sync_to_async(make_tenant)("alice")
    charlie = await sync_to_async(make_tenant)("charlie")
    response = await AsyncClient().get("/api/events", headers={"X-API-Key": alice.key})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    stream = aiter(response.streaming_content)
    name, data, _ = await next_event(stream)
    assert name == "sync_complete" and "timestamp" in data
    others = await AsyncClient().get("/api/events", headers={"X-API-Key": charlie.key})
    other_stream = aiter(others.streaming_content)
    assert (await next_event(other_stream))[0] == "sync_complete"

    created = await sync_to_async(alice.post)(
        "/api/memories", {"content": "Deploy failed due to missing env var", "memory_type": "error"}
    )
    memory_id = created.json()["id"]
    name, data, event_id = await next_event(stream)
    assert (name, data) == (
        "memory_created",
        {"id": memory_id, "content": "Deploy failed due to missing env var", "type": "error"},
    )
    assert event_id is not None  # a reconnecting client resumes after it
    await sync_to_async(alice.put)(f"/api/memories/{memory_id}", {"tags": ["deploy"]})
    assert (await next_event(stream))[:2] == (
        "memory_updated",
        {"id": memory_id, "changes": ["tags"]},
    )
    await sync_to_async(alice.delete)(f"/api/memories/{memory_id}")
    assert (await next_event(stream))[:2] == ("memory_deleted", {"id": memory_id})
    await stream.aclose()
    with pytest.raises(TimeoutError):  # charlie's stream heard none of alice's events
        await asyncio.wait_for(next_event(other_stream), 0.5)
    await other_stream.aclose()

    resumed = await AsyncClient().get(
        "/api/events", headers={"X-API-Key": alice.key, "Last-Event-ID": event_id}
    )
    stream = aiter(resumed.streaming_content)
    assert [(await next_event(stream))[0] for _ in range(3)] == [
        "memory_updated",
        "memory_deleted",
        "sync_complete",
    ]
    await stream.aclose()


async def test_the_stream_needs_a_key():
    response = await AsyncClient().get("/api/events")
    assert response.status_code == 401
