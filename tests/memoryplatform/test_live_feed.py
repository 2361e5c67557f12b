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
        connected, _ = await ws.connect()
        assert connected  # the handshake completes, so the client learns why:
        assert await ws.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


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


async def test_a_revoked_key_ends_an_open_connection(settings) -> None:
    # a connection checks its key once when it opens, and again every
    # MEMORY_KEY_RECHECK_SECONDS: revoking the key ends it (4401), as it would refuse it
    from tenants.models import ApiKey
    from tenants.services import api_key_revoke

    settings.MEMORY_KEY_RECHECK_SECONDS = 0.1
    alice = await sync_to_async(make_tenant)("alice")
    ws = await connect(alice.key)
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from())["type"] == "subscribed"
    prefix = await sync_to_async(lambda: ApiKey.objects.get(project=alice.project).prefix)()
    await sync_to_async(api_key_revoke)(prefix=prefix)
    closed = await ws.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4401}


async def test_an_sse_stream_ends_when_its_key_is_revoked(settings) -> None:
    import json

    from channels.testing import ApplicationCommunicator

    from tenants.models import ApiKey
    from tenants.services import api_key_revoke

    settings.MEMORY_KEY_RECHECK_SECONDS = 0.1
    alice = await sync_to_async(make_tenant)("alice")
    scope = {
        "type": "http",
        "method": "GET",
        "path": "/api/v1/events/",
        "query_string": b"",
        "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {alice.key}".encode())],
    }
    stream = ApplicationCommunicator(application, scope)
    await stream.send_input({"type": "http.request", "body": b"", "more_body": False})
    assert (await stream.receive_output(5))["status"] == 200
    assert b"subscribed" in (await stream.receive_output(5))["body"]
    prefix = await sync_to_async(lambda: ApiKey.objects.get(project=alice.project).prefix)()
    await sync_to_async(api_key_revoke)(prefix=prefix)
    bodies = b""
    while True:
        message = await stream.receive_output(5)
        bodies += message.get("body", b"")
        if not message.get("more_body", False):
            break
    assert b"event: revoked" in bodies
    assert json.loads(bodies.split(b"data: ")[-1])["reason"].startswith("the API key")
