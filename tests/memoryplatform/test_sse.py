"""Server-Sent Events carry the same project events as the websocket feed."""

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


async def next_event(stream) -> tuple[str, dict]:
    while True:
        chunk = await asyncio.wait_for(stream.__anext__(), 5)
        text = chunk.decode() if isinstance(chunk, bytes) else chunk
        fields = dict(line.split(": ", 1) for line in text.strip().split("\n") if ": " in line)
        if "event" in fields:
            return fields["event"], json.loads(fields["data"])


async def test_sse_stream_delivers_memory_created() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    response = await AsyncClient().get(
        "/api/v1/events/", headers={"Authorization": f"Bearer {alice.key}"}
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    stream = aiter(response.streaming_content)
    assert (await next_event(stream))[0] == "subscribed"
    created = await sync_to_async(alice.post)(
        "/api/v1/memories/", {"content": "SSE fact", "user_id": "u"}
    )
    name, event = await next_event(stream)
    assert name == "memory_created"
    assert event["data"]["id"] == created.json()["id"]
    await stream.aclose()


async def test_sse_requires_a_valid_key() -> None:
    response = await AsyncClient().get("/api/v1/events/")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
