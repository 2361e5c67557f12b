"""The live feed for any client: an agent, a CLI or a server with only an API key connects
with a real websocket client library (no `Origin` header), over a live server, and receives
its project's events and none of another's. A browser's `Origin` is still checked."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets
from asgiref.sync import sync_to_async

from tests.conftest import make_tenant
from tests.mcpserver.conftest import live_server_mcp  # noqa: F401 (fixture)

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


def _ws_url(server) -> str:
    return server.url.replace("http://", "ws://") + "/ws/events/"


async def _next_event(socket, kind: str) -> dict:
    while True:
        event = json.loads(await asyncio.wait_for(socket.recv(), 10))
        if event["type"] == kind:
            return event


async def _only_alices_write_arrives(feed, http: httpx.AsyncClient, bob, alice) -> None:
    """Bob's project writes first, then Alice's: Alice's feed shows hers, never his."""
    for tenant, text in ((bob, "Bob's secret plan"), (alice, "Alice likes tea")):
        response = await http.post(
            "/api/v1/memories/",
            json={"content": text, "user_id": "u1"},
            headers={"Authorization": f"Bearer {tenant.key}"},
        )
        assert response.status_code == 201, response.text
    created = await _next_event(feed, "memory_created")
    assert created["data"]["content"] == "Alice likes tea"  # bob's never arrived first


async def test_a_client_with_only_an_api_key_receives_its_projects_events(live_server_mcp):  # noqa: F811
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    headers = {"Authorization": f"Bearer {alice.key}"}
    async with websockets.connect(_ws_url(live_server_mcp), additional_headers=headers) as feed:
        assert (await _next_event(feed, "subscribed"))["project"] == "alice"
        async with httpx.AsyncClient(base_url=live_server_mcp.url, timeout=30) as http:
            await _only_alices_write_arrives(feed, http, bob, alice)


async def test_a_browser_from_another_site_is_refused_and_a_bad_key_closes(live_server_mcp):  # noqa: F811
    alice = await sync_to_async(make_tenant)("alice")
    url = _ws_url(live_server_mcp) + f"?api_key={alice.key}"
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(url, origin="http://evil.example"):
            pass
    assert refused.value.response.status_code == 403
    async with websockets.connect(url, origin="http://localhost") as browser:
        assert json.loads(await browser.recv())["type"] == "subscribed"
    async with websockets.connect(_ws_url(live_server_mcp) + "?api_key=mp_bad_key") as bad:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await bad.recv()
        assert closed.value.rcvd.code == 4401


@pytest.mark.server_env(MEMORY_KEY_RECHECK_SECONDS=0.2)
async def test_an_oauth_client_follows_the_live_feed_with_its_access_token(
    live_server_mcp,  # noqa: F811
    settings,
):
    """An MCP client that signed in with OAuth holds a token, not a key: the websocket feed
    and the SSE stream take it, and end when it is revoked."""
    from django.test import Client
    from oauth2_provider.models import AccessToken

    from tests.tenants.oauth_helpers import token_for

    settings.MEMORY_KEY_RECHECK_SECONDS = 0.2
    alice = await sync_to_async(make_tenant)("alice")
    bob = await sync_to_async(make_tenant)("bob")
    tokens = await sync_to_async(token_for)(Client(), alice.key, scope="read")
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    async with websockets.connect(_ws_url(live_server_mcp), additional_headers=headers) as feed:
        assert (await _next_event(feed, "subscribed"))["project"] == "alice"
        async with httpx.AsyncClient(base_url=live_server_mcp.url, timeout=30) as http:
            await _only_alices_write_arrives(feed, http, bob, alice)
            async with http.stream("GET", "/api/v1/events/", headers=headers) as stream:
                assert stream.status_code == 200
                await sync_to_async(AccessToken.objects.all().delete)()  # revoked
                body = b"".join([chunk async for chunk in stream.aiter_bytes()])
                assert b"event: revoked" in body
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:  # the events the write sent, then the close
                await asyncio.wait_for(feed.recv(), 10)
        assert closed.value.rcvd.code == 4401

    # a made-up token, and a good one in the URL (where access logs would keep it)
    fresh = await sync_to_async(token_for)(Client(), alice.key, scope="read")
    for url, headers in (
        (_ws_url(live_server_mcp), {"Authorization": "Bearer not-a-token"}),
        (f"{_ws_url(live_server_mcp)}?api_key={fresh['access_token']}", {}),
    ):
        async with websockets.connect(url, additional_headers=headers) as feed:
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(feed.recv(), 10)
            assert closed.value.rcvd.code == 4401
