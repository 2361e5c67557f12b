"""Streamable HTTP (/mcp) and legacy SSE (/sse) on a live daphne, with the SDK's client."""

from __future__ import annotations

import httpx
import pytest

from tests.mcpserver.conftest import deletion_reason, structured
from tests.mcpserver.test_stdio import STANDARD_TOOLS

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.slow]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def test_mcp_without_a_key_is_401(live_server_mcp):
    for path in ("/mcp", "/sse"):
        response = httpx.post(f"{live_server_mcp.url}{path}", json=INITIALIZE, headers=MCP_HEADERS)
        assert response.status_code == 401
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert response.json()["error"]["code"] == "not_authenticated"


def test_mcp_with_an_invalid_key_is_401(live_server_mcp):
    headers = {**MCP_HEADERS, "Authorization": "Bearer mp_deadbeef_nope"}
    response = httpx.post(f"{live_server_mcp.url}/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 401


def test_a_foreign_origin_is_refused(live_server_mcp, alice):
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {alice.key}",
        "Origin": "http://evil.example",
    }
    response = httpx.post(f"{live_server_mcp.url}/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 403


def test_a_local_origin_is_accepted(live_server_mcp, alice):
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {alice.key}",
        "Origin": "http://localhost:3000",
    }
    response = httpx.post(f"{live_server_mcp.url}/mcp", json=INITIALIZE, headers=headers)
    assert response.status_code == 200
    assert response.headers["mcp-session-id"]


def test_a_session_cannot_be_used_with_another_key(live_server_mcp, alice, charlie):
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {alice.key}"}
    opened = httpx.post(f"{live_server_mcp.url}/mcp", json=INITIALIZE, headers=headers)
    session_id = opened.headers["mcp-session-id"]
    hijack = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {charlie.key}",
        "Mcp-Session-Id": session_id,
        "Mcp-Protocol-Version": "2025-06-18",
    }
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    response = httpx.post(f"{live_server_mcp.url}/mcp", json=listing, headers=hijack)
    assert response.status_code == 404


async def test_round_trip_over_streamable_http(live_server_mcp, alice):
    async with live_server_mcp.session(alice.key) as session:
        assert session.initialize_result.instructions  # type: ignore[attr-defined]
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= STANDARD_TOOLS

        stored = structured(
            await session.call_tool(
                "memory_store", {"content": "Deploys happen on Fridays", "user_id": "u1"}
            )
        )
        memory_id = stored["memory"]["id"]
        updated = structured(
            await session.call_tool(
                "memory_update", {"memory_id": memory_id, "content": "Deploys happen on Mondays"}
            )
        )
        assert updated["version"] == 2
        history = structured(await session.call_tool("memory_history", {"memory_id": memory_id}))
        assert [entry["event"] for entry in history["history"]] == ["ADD", "UPDATE"]

        bad = await session.call_tool("memory_update", {"memory_id": memory_id, "tags": "x"})
        assert bad.is_error
        deleted = structured(await session.call_tool("memory_delete", {"memory_ids": [memory_id]}))
        assert deleted["deleted"] == 1
        working = structured(
            await session.call_tool(
                "memory_store", {"content": "Reading the deploy log", "layer": "short_term"}
            )
        )["memory"]
        assert working["run_id"]  # this MCP session
    # the client ended its session (DELETE /mcp): the session's working memory left with it
    assert await deletion_reason(working["id"]) == "session_closed"


async def test_another_projects_key_sees_nothing_over_http(live_server_mcp, alice, bob):
    async with live_server_mcp.session(alice.key) as session:
        stored = structured(await session.call_tool("memory_store", {"content": "alice only"}))
    async with live_server_mcp.session(bob.key) as session:
        result = await session.call_tool("memory_get", {"memory_id": stored["memory"]["id"]})
        assert result.is_error
        assert structured(await session.call_tool("memory_stats", {}))["total_memories"] == 0


async def test_legacy_sse_transport_serves_the_same_tools(live_server_mcp, alice):
    async with live_server_mcp.sse_session(alice.key) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert tools >= STANDARD_TOOLS
        stored = structured(await session.call_tool("memory_store", {"content": "via sse"}))
        assert stored["created"] is True


def test_the_server_negotiates_each_protocol_version_of_seed_002(live_server_mcp, alice):
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {alice.key}"}
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        body = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": version}}
        response = httpx.post(f"{live_server_mcp.url}/mcp", json=body, headers=headers)
        assert response.status_code == 200, version
        payload = next(
            line.removeprefix("data: ")
            for line in response.text.splitlines()
            if line.startswith("data: ")
        )
        assert f'"protocolVersion":"{version}"' in payload.replace(" ", "")
