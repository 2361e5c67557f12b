"""The stdio server (`manage.py mcp`) driven by the SDK's real client."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp.shared.exceptions import MCPError

from tests.mcpserver.conftest import (
    MANAGE,
    child_env,
    deletion_reason,
    stdio_session,
    structured,
)

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True), pytest.mark.slow]

STANDARD_TOOLS = {
    "memory_store",
    "memory_get",
    "memory_update",
    "memory_delete",
    "memory_history",
    "memory_link",
    "memory_stats",
    "tool_feedback",
}


# Each test below pays for a server process of its own (Django, the embedding model: most of
# its time), so checks that need no fresh project share one session.


async def test_stdio_server_lists_annotated_tools_and_shows_tool_feedback_in_stats(alice):
    async with stdio_session(alice.key) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        recorded = structured(
            await session.call_tool(
                "tool_feedback",
                {"tool_name": "memory_search", "relevant": True, "sufficient": False},
            )
        )
        stats = structured(await session.call_tool("memory_stats", {}))
    assert set(tools) >= STANDARD_TOOLS
    store = tools["memory_store"]
    assert store.input_schema["required"] == ["content"]
    assert store.output_schema is not None
    assert store.description
    assert tools["memory_get"].annotations.read_only_hint is True
    assert tools["memory_delete"].annotations.destructive_hint is True

    assert recorded["recorded"] is True
    assert stats["tool_feedback"]["memory_search"] == {
        "reports": 1,
        "relevant_rate": 1.0,
        "sufficient_rate": 0.0,
    }


async def test_store_update_history_delete_round_trip_over_stdio(alice):
    async with stdio_session(alice.key) as session:
        stored = structured(
            await session.call_tool(
                "memory_store",
                {"content": "User prefers dark mode", "memory_type": "preference", "tags": ["ui"]},
            )
        )
        assert stored["created"] is True
        memory = stored["memory"]
        assert memory["agent_id"] == "default"  # no scope given: the default agent
        assert memory["has_embedding"] is True

        again = structured(
            await session.call_tool("memory_store", {"content": "user prefers  DARK mode"})
        )
        assert again == {"created": False, "memory": again["memory"]}
        assert again["memory"]["id"] == memory["id"]

        updated = structured(
            await session.call_tool(
                "memory_update", {"memory_id": memory["id"], "content": "User prefers light mode"}
            )
        )
        assert updated["version"] == 2
        assert updated["content"] == "User prefers light mode"

        history = structured(await session.call_tool("memory_history", {"memory_id": memory["id"]}))
        events = [entry["event"] for entry in history["history"]]
        assert events == ["ADD", "UPDATE"]
        assert history["history"][1]["old_content"] == "User prefers dark mode"

        deleted = structured(
            await session.call_tool("memory_delete", {"memory_ids": [memory["id"]]})
        )
        assert deleted["deleted_ids"] == [memory["id"]]

        gone = await session.call_tool("memory_get", {"memory_id": memory["id"]})
        assert gone.is_error
        assert "not_found" in gone.content[0].text
        working = structured(
            await session.call_tool(
                "memory_store", {"content": "Editing the settings page", "layer": "short_term"}
            )
        )["memory"]
    # the server exited with its client: this session's working memory left with it
    assert await deletion_reason(working["id"]) == "session_closed"


async def test_pinned_memories_survive_a_filtered_delete_and_malformed_calls_are_tool_errors(
    alice,
):
    async with stdio_session(alice.key) as session:
        for content, pinned in (("keep me", True), ("drop me", False)):
            await session.call_tool(
                "memory_store", {"content": content, "user_id": "u1", "pinned": pinned}
            )
        first = structured(await session.call_tool("memory_delete", {"user_id": "u1"}))
        assert first["deleted"] == 1
        assert len(first["skipped_pinned_ids"]) == 1
        forced = structured(
            await session.call_tool("memory_delete", {"user_id": "u1", "force": True})
        )
        assert forced["deleted_ids"] == first["skipped_pinned_ids"]

        # malformed calls: tool errors, and the session stays usable
        missing = await session.call_tool("memory_store", {})
        assert missing.is_error
        assert "content" in missing.content[0].text

        wrong_type = await session.call_tool("memory_store", {"content": "x", "confidence": "very"})
        assert wrong_type.is_error

        service_refusal = await session.call_tool("memory_store", {"content": "   "})
        assert service_refusal.is_error
        assert "content" in service_refusal.content[0].text

        unknown_id = await session.call_tool("memory_get", {"memory_id": "not-a-uuid"})
        assert unknown_id.is_error

        no_criteria = await session.call_tool("memory_delete", {})
        assert no_criteria.is_error
        assert "memory_ids" in no_criteria.content[0].text

        still_fine = await session.call_tool("memory_store", {"content": "still works"})
        assert structured(still_fine)["created"] is True


async def test_another_projects_key_sees_nothing_over_stdio(alice, charlie):
    async with stdio_session(alice.key) as session:
        stored = structured(
            await session.call_tool("memory_store", {"content": "alice's secret plan"})
        )
        memory_id = stored["memory"]["id"]
    async with stdio_session(charlie.key) as session:
        for tool, args in (
            ("memory_get", {"memory_id": memory_id}),
            ("memory_history", {"memory_id": memory_id}),
            ("memory_update", {"memory_id": memory_id, "content": "hijacked"}),
            ("memory_delete", {"memory_ids": [memory_id]}),
        ):
            result = await session.call_tool(tool, args)
            assert result.is_error, tool
            assert "not_found" in result.content[0].text
        stats = structured(await session.call_tool("memory_stats", {}))
        assert stats["total_memories"] == 0
        with pytest.raises(MCPError, match="not_found"):
            await session.read_resource(f"memory://memories/{memory_id}")


async def test_resources_give_project_stats_and_a_memory_by_id(alice):
    async with stdio_session(alice.key) as session:
        stored = structured(await session.call_tool("memory_store", {"content": "resource me"}))
        memory_id = stored["memory"]["id"]
        stats = await session.read_resource("memory://stats")
        one = await session.read_resource(f"memory://memories/{memory_id}")
    assert '"total_memories": 1' in stats.contents[0].text
    assert "resource me" in one.contents[0].text


def test_the_command_refuses_to_start_without_a_valid_key(db):
    env = child_env()
    result = subprocess.run(
        [sys.executable, MANAGE, "mcp", "--api-key", "mp_bad_key"],
        env=env,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert result.stdout == b""
    assert b"invalid" in result.stderr


@pytest.mark.django_db(transaction=True)
def test_stdout_carries_nothing_but_json_rpc(alice):
    import json

    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "memory_store", "arguments": {"content": "loads the model"}},
        },
    ]
    stdin = "".join(json.dumps(request) + "\n" for request in requests)
    result = subprocess.run(
        [sys.executable, MANAGE, "mcp", "--api-key", alice.key],
        input=stdin.encode(),
        env=child_env(MEMORY_LOG_LEVEL="DEBUG"),
        capture_output=True,
        timeout=180,
    )
    lines = result.stdout.decode().splitlines()
    messages = [json.loads(line) for line in lines]  # any stray print would fail here
    assert all(message["jsonrpc"] == "2.0" for message in messages)
    assert {message.get("id") for message in messages} >= {1}
    assert messages[0]["result"]["protocolVersion"] == "2025-06-18"
    assert messages[0]["result"]["instructions"]
