"""The episode tools (episode_start, episode_get, episode_close, episode_list) and the layer
and episode arguments of memory_store and memory_search, through the SDK's client."""

from __future__ import annotations

import pytest

from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_an_episode_started_over_mcp_gathers_its_runs_memories_and_closes_with_a_summary(
    alice, charlie
):
    async with in_process(alice) as client:
        started = structured(
            await client.call_tool("episode_start", {"name": "Upgrade", "run_id": "r1"})
        )
        for text in ["Upgrade started on staging", "Decided to skip version 15"]:
            await client.call_tool(
                "memory_store", {"content": text, "run_id": "r1", "layer": "short_term"}
            )
        await client.call_tool(
            "memory_store", {"content": "User likes tea", "user_id": "u1", "layer": "semantic"}
        )
        read = structured(await client.call_tool("episode_get", {"episode_id": started["id"]}))
        in_session = {"query": "upgrade", "layer": ["short_term"], "run_id": "r1"}
        short = structured(await client.call_tool("memory_search", in_session))
        closed = structured(await client.call_tool("episode_close", {"episode_id": started["id"]}))
        listed = structured(await client.call_tool("episode_list", {"open": False}))
        # closing the episode ended its session: the run's working memory left with it
        after = structured(await client.call_tool("memory_search", in_session))
        semantic = structured(
            await client.call_tool("memory_search", {"query": "tea", "layer": ["semantic"]})
        )
    async with in_process(charlie) as client:
        hidden = await client.call_tool("episode_get", {"episode_id": started["id"]})
    assert [m["content"] for m in read["memories"]] == [
        "Upgrade started on staging",
        "Decided to skip version 15",
    ]
    assert {m["layer"] for m in read["memories"]} == {"short_term"}
    assert (closed["open"], closed["summary_method"]) == (False, "extractive")
    assert [e["id"] for e in listed["results"]] == [started["id"]]
    assert {m["content"] for m in short["results"]} == {
        "Upgrade started on staging",
        "Decided to skip version 15",
    }
    assert after["results"] == []
    assert [m["content"] for m in semantic["results"]] == ["User likes tea"]
    assert hidden.is_error and "not_found" in hidden.content[0].text


async def test_episode_start_defaults_to_the_mcp_session_as_its_run(alice):
    async with in_process(alice) as client:
        started = structured(await client.call_tool("episode_start", {"name": "chat"}))
        again = structured(await client.call_tool("episode_start", {"name": "chat 2"}))
        first = structured(await client.call_tool("episode_get", {"episode_id": started["id"]}))
    assert started["run_id"] and started["run_id"] == again["run_id"]
    assert first["open"] is False  # the session's second episode closed the first
