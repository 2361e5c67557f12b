"""A live-feed client that drops its connection gets what it missed, and a client can ask for
only some events: by type, and by the user, agent or run they are about."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from asgiref.sync import sync_to_async

from platformcore.events import Subscription
from tests.conftest import make_tenant
from tests.mcpserver.conftest import live_server_mcp  # noqa: F401 (fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def _ws_url(server, query: str = "") -> str:
    return server.url.replace("http://", "ws://") + "/ws/events/" + query


async def _events(socket, count: int) -> list[dict]:
    received = []
    while len(received) < count:
        event = json.loads(await asyncio.wait_for(socket.recv(), 60))
        if event["type"] not in ("subscribed", "replayed"):
            received.append(event)
    return received


async def _store(http: httpx.AsyncClient, key: str, content: str, user_id: str = "u1") -> dict:
    response = await http.post(
        "/api/v1/memories/",
        json={"content": content, "user_id": user_id},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 201, response.text
    return response.json()


async def _sse_events(http: httpx.AsyncClient, key: str, last_event_id: int, count: int) -> list:
    headers = {"Authorization": f"Bearer {key}", "Last-Event-ID": str(last_event_id)}
    events: list[dict] = []
    async with http.stream("GET", "/api/v1/events/", headers=headers) as stream:
        ids: list[int] = []
        async for line in stream.aiter_lines():
            if line.startswith("id: "):
                ids.append(int(line[4:]))
            elif line.startswith("data: ") and ids:
                events.append({**json.loads(line[6:]), "sse_id": ids[-1]})
                if len(events) == count:
                    break
    return events


async def test_events_carry_increasing_ids_and_sse_resumes_after_the_last_one_seen(
    live_server_mcp,  # noqa: F811
):
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    async with httpx.AsyncClient(base_url=live_server_mcp.url, timeout=120) as http:
        async with websockets.connect(_ws_url(live_server_mcp, f"?api_key={alice.key}")) as feed:
            await _store(http, alice.key, "First thing alice said")
            (first,) = await _events(feed, 1)
        # disconnected: two more writes of alice's, one of bob's
        await _store(http, alice.key, "Second thing alice said")
        await _store(http, bob.key, "Bob's own memory")
        await _store(http, alice.key, "Third thing alice said")

        missed = await _sse_events(http, alice.key, first["id"], 2)
        assert [e["data"]["content"] for e in missed] == [
            "Second thing alice said",
            "Third thing alice said",
        ]
        assert first["id"] < missed[0]["id"] < missed[1]["id"]
        assert [e["sse_id"] for e in missed] == [e["id"] for e in missed]

        query = f"?api_key={alice.key}&last_event_id={first['id']}"
        async with websockets.connect(_ws_url(live_server_mcp, query)) as feed:
            replayed = await _events(feed, 2)
        assert [e["id"] for e in replayed] == [e["id"] for e in missed]


async def test_a_websocket_subscription_filters_by_type_and_user(live_server_mcp):  # noqa: F811
    alice = await sync_to_async(make_tenant)("alice")
    query = f"?api_key={alice.key}&types=memory_created&user_id=carol"
    async with (
        httpx.AsyncClient(base_url=live_server_mcp.url, timeout=120) as http,
        websockets.connect(_ws_url(live_server_mcp, query)) as feed,
    ):
        subscribed = json.loads(await asyncio.wait_for(feed.recv(), 60))
        assert subscribed["filters"] == {"types": ["memory_created"], "user_id": "carol"}
        dave = await _store(http, alice.key, "Dave's note", user_id="dave")
        carol = await _store(http, alice.key, "Carol's note", user_id="carol")
        await http.delete(
            f"/api/v1/memories/{carol['id']}/",
            headers={"Authorization": f"Bearer {alice.key}"},
        )
        (event,) = await _events(feed, 1)
        assert event["data"]["id"] == carol["id"] != dave["id"]
        assert event["scope"] == {"user_id": "carol"}

        # changed by message: now deletions of any user
        await feed.send(json.dumps({"action": "subscribe", "types": ["memory_deleted"]}))
        changed = json.loads(await asyncio.wait_for(feed.recv(), 60))
        assert changed == {
            "type": "subscribed",
            "project": "alice",
            "filters": {"types": ["memory_deleted"]},
        }
        await http.delete(
            f"/api/v1/memories/{dave['id']}/",
            headers={"Authorization": f"Bearer {alice.key}"},
        )
        (deleted,) = await _events(feed, 1)
        assert (deleted["type"], deleted["data"]["id"]) == ("memory_deleted", dave["id"])

        await feed.send(json.dumps({"action": "subscribe", "types": ["no_such_event"]}))
        error = json.loads(await asyncio.wait_for(feed.recv(), 60))
        assert error["type"] == "error" and "no_such_event" in error["message"]


async def test_the_event_schema_is_published_for_client_authors(live_server_mcp):  # noqa: F811
    async with httpx.AsyncClient(base_url=live_server_mcp.url, timeout=120) as http:
        schema = (await http.get("/api/v1/events/schema/")).json()
    assert set(schema["required"]) == {"type", "project", "at", "data"}
    assert "memory_created" in schema["properties"]["type"]["enum"]
    assert "id" in schema["properties"]


def test_a_subscription_names_only_known_types_and_scope_fields():
    assert Subscription.of(types="memory_created,memory_deleted").types == {
        "memory_created",
        "memory_deleted",
    }
    for bad in ({"types": "memory_made"}, {"project": "x"}):
        with pytest.raises(ValueError):
            Subscription.of(**bad)
    project_wide = {"type": "decay_complete", "project": "p", "at": "", "data": {}}
    assert Subscription.of(user_id="carol").wants(project_wide)


def test_the_redis_replay_buffer_numbers_events_per_project_and_keeps_the_newest(settings):
    """With REDIS_URL set, every server process shares the buffer (one stream per project)."""
    import redis

    from platformcore.event_log import RedisEventLog

    url = "redis://127.0.0.1:6379/14"
    try:
        redis.Redis.from_url(url).flushdb()
    except redis.ConnectionError:
        pytest.skip("no Redis on 127.0.0.1:6379")
    settings.MEMORY_EVENT_REPLAY = 3
    log = RedisEventLog(url)
    event = {"type": "memory_created", "project": "p", "at": "", "data": {}}
    numbered = log.append(1, [{**event, "data": {"n": n}} for n in range(5)])
    log.append(2, [event])
    assert [e["id"] for e in numbered] == [1, 2, 3, 4, 5]
    assert [e["data"]["n"] for e in log.since(1, 3, 10)] == [3, 4]
    assert [e["id"] for e in log.since(2, 0, 10)] == [1]
    assert len(log.since(1, 0, 10)) >= 3  # trimmed to about the newest three
