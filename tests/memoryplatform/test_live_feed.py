"""The websocket live feed: a project's events reach its subscribers, and only them."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.db import connections

from memoryplatform.asgi import application
from tests.conftest import make_tenant

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _close_worker_thread_connections():
    """sync_to_async runs the ORM in a worker thread; close its connection after each test."""
    yield
    await sync_to_async(connections.close_all)()


async def connect(key: str | None) -> WebsocketCommunicator:
    path = "/ws/events/" + (f"?api_key={key}" if key else "")
    return WebsocketCommunicator(application, path, headers=[(b"origin", b"http://localhost")])


async def test_subscriber_receives_created_updated_and_deleted_events() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    ws = await connect(alice.key)
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from())["type"] == "subscribed"

    created = await sync_to_async(alice.post)(
        "/api/v1/memories/", {"content": "Live fact", "user_id": "u1"}
    )
    memory_id = created.json()["id"]
    event = await ws.receive_json_from(timeout=5)
    assert event["type"] == "memory_created"
    assert event["data"]["id"] == memory_id
    assert event["data"]["content"] == "Live fact"

    await sync_to_async(alice.patch)(f"/api/v1/memories/{memory_id}/", {"content": "Live fact 2"})
    assert (await ws.receive_json_from(timeout=5))["type"] == "memory_updated"
    await sync_to_async(alice.delete)(f"/api/v1/memories/{memory_id}/")
    assert (await ws.receive_json_from(timeout=5))["type"] == "memory_deleted"
    await ws.disconnect()


async def test_another_projects_events_never_arrive() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    charlie = await sync_to_async(make_tenant)("charlie")
    ws = await connect(charlie.key)
    assert (await ws.connect())[0]
    await ws.receive_json_from()
    await sync_to_async(alice.post)("/api/v1/memories/", {"content": "Secret", "user_id": "u1"})
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()


async def test_missing_or_bad_key_is_refused() -> None:
    for key in (None, "mp_nope_nope"):
        ws = await connect(key)
        connected, code = await ws.connect()
        assert not connected
        assert code == 4401


async def test_failed_write_sends_no_event() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    ws = await connect(alice.key)
    assert (await ws.connect())[0]
    await ws.receive_json_from()
    response = await sync_to_async(alice.post)(
        "/api/v1/memories/", {"content": "x" * 9000, "user_id": "u"}
    )
    assert response.status_code == 400
    assert await ws.receive_nothing(timeout=0.5)
    await ws.disconnect()


async def test_a_bulk_write_sends_each_memorys_event_in_order() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    ws = await connect(alice.key)
    assert (await ws.connect())[0]
    await ws.receive_json_from()
    texts = ["Ada owns the billing service", "Bo moved to Lisbon", "Cy prefers tea"]
    response = await sync_to_async(alice.post)(
        "/api/v1/memories/bulk/",
        {"memories": [{"content": text, "user_id": "u1"} for text in texts]},
    )
    assert response.status_code in (200, 201), response.json()
    events = [await ws.receive_json_from(timeout=5) for _ in texts]
    assert [(e["type"], e["data"]["content"]) for e in events] == [
        ("memory_created", text) for text in texts
    ]
    await ws.disconnect()
