"""Memory quality and lifecycle through MCP, under the profile that names each feature:
Memento's utility scoring, memory_stats and memory_consolidate report; the mcp-ai-memory
plan's decay control and traversal (aimemory); the SQL-native server's consolidate_memories."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from memories.models import Memory
from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

LONG = (
    "The billing service retries failed card payments three times with exponential backoff "
    "starting at 30 seconds. After the third failure the invoice moves to the dunning queue, "
    "which emails the customer on days 1, 3 and 7 and suspends the workspace on day 14. "
    "Support can lift a suspension from the admin console under Billing > Overrides, but only "
    "a finance lead can write off the debt. The retry schedule lives in billing/config.py."
)


@sync_to_async
def _memory(pk: str) -> Memory:
    return Memory.objects.get(pk=pk)


@sync_to_async
def _age(pk: str, days: int) -> None:
    then = timezone.now() - timezone.timedelta(days=days)
    Memory.objects.filter(pk=pk).update(created_at=then, last_accessed_at=None)


async def _remember(client, content: str, topic: str = "ops", **extra) -> str:
    body = {"content": content, "topic": topic, "type": "fact", **extra}
    stored = structured(await client.call_tool("remember", body))
    assert stored["success"] is True, stored
    return stored["id"]


# --- Memento -------------------------------------------------------------------------------


async def test_memento_remember_is_scored_in_the_background_and_keywords_are_not_the_topic(
    alice,
):
    async with in_process(alice, "memento") as client:
        pk = await _remember(client, "Grafana dashboards refresh every 60 seconds", "monitoring")
    memory = await _memory(pk)
    assert memory.verified_at is not None  # the job ran when the tool call committed
    assert memory.utility_score != 0.5
    assert "grafana" in memory.tags and "monitoring" not in memory.tags
    assert memory.metadata["topic"] == "monitoring"


async def test_memento_tool_feedback_on_fragments_counts_in_their_utility(alice):
    async with in_process(alice, "memento") as client:
        pk = await _remember(client, "The staging database is db-stg-2 on port 5433")
        before = (await _memory(pk)).utility_score
        for _ in range(3):
            body = {
                "tool_name": "recall",
                "relevant": False,
                "sufficient": False,
                "memory_ids": [pk],
            }
            assert structured(await client.call_tool("tool_feedback", body))["success"]
    assert (await _memory(pk)).utility_score < before


async def test_memento_memory_stats_give_tiers_and_mean_utility(alice):
    async with in_process(alice, "memento") as client:
        await _remember(client, "Always pin the Node version in .nvmrc", type="preference")
        await _remember(client, "The office wifi is slow on Mondays")
        stats = structured(await client.call_tool("memory_stats", {}))
    assert stats["success"] is True
    assert stats["memories_by_tier"]["permanent"] == 1
    assert stats["memories_by_tier"]["warm"] == 1  # a fact of importance 0.5, as Memento infers
    assert stats["utility_assessed_count"] == 2
    assert 0.0 < stats["mean_utility"] < 1.0


async def test_memento_memory_consolidate_returns_per_stage_counts(alice):
    async with in_process(alice, "memento") as client:
        old = await _remember(client, "Old news nobody reads")
        await _age(old, 400)
        report = structured(await client.call_tool("memory_consolidate", {}))
    assert report["success"] is True
    stages = report["stages"]
    for name in (
        "duplicates_merged",
        "contradictions_found",
        "decayed",
        "promoted",
        "demoted",
        "embeddings_backfilled",
        "pruned",
    ):
        assert name in stages
    assert stages["demoted"] == 1
    assert stages["pruned"] == 1


async def test_charlie_sees_none_of_alices_stats_or_maintenance(alice, charlie):
    async with in_process(alice, "memento") as client:
        await _remember(client, "Alice's fact")
    async with in_process(charlie, "memento") as client:
        stats = structured(await client.call_tool("memory_stats", {}))
        report = structured(await client.call_tool("memory_consolidate", {}))
    assert stats["total_memories"] == 0 and stats["memories_by_tier"]["hot"] == 0
    assert report["stages"]["utility_scored"] == 0


# --- SQL-native ----------------------------------------------------------------------------


async def test_sqlnative_consolidate_memories_only_merges(alice):
    async with in_process(alice, "sqlnative") as client:
        report = structured(await client.call_tool("consolidate_memories", {"dry_run": True}))
    assert report["dry_run"] is True
    assert report["stages_run"] == ["merge"]  # the server's consolidation merges clusters


# --- the mcp-ai-memory plan (aimemory) -----------------------------------------------------


async def _store(client, content: str, **extra) -> str:
    body = {"content": content, "user_id": "u1", **extra}
    return structured(await client.call_tool("memory_store", body))["memory"]["id"]


async def test_aimemory_traverse_depth_first_with_filters_and_a_budget(alice):
    async with in_process(alice, "aimemory") as client:
        root = await _store(client, "root")
        a = await _store(client, "a", memory_type="error", tags=["deploy"])
        a1 = await _store(client, "a1", memory_type="error", tags=["deploy"])
        b = await _store(client, "b", memory_type="fact")
        for source, target, strength in ((root, a, 0.9), (a, a1, 1.0), (root, b, 0.5)):
            await client.call_tool(
                "memory_link",
                {"from_id": source, "to_id": target, "link_type": "causes", "strength": strength},
            )
        walk = structured(
            await client.call_tool(
                "memory_traverse",
                {"memory_id": root, "strategy": "dfs", "depth": 3, "time_budget_ms": 60_000},
            )
        )
        assert [node["id"] for node in walk["nodes"]] == [root, a, a1, b]
        assert walk["strategy"] == "dfs" and walk["truncated"] is False
        errors = structured(
            await client.call_tool(
                "memory_traverse", {"memory_id": root, "memory_types": ["error"], "depth": 3}
            )
        )
        assert {node["id"] for node in errors["nodes"]} == {root, a, a1}
        alias = structured(
            await client.call_tool(
                "memory_graph_search", {"memory_id": root, "tags": ["deploy"], "depth": 3}
            )
        )
        assert {node["id"] for node in alias["nodes"]} == {root, a, a1}
        bad = await client.call_tool("memory_traverse", {"memory_id": root, "strategy": "x"})
        assert bad.is_error


async def test_aimemory_decay_control_pauses_and_resumes(alice):
    async with in_process(alice, "aimemory") as client:
        paused = structured(await client.call_tool("memory_decay_control", {"action": "pause"}))
        assert paused["paused"] is True
        status = structured(await client.call_tool("memory_decay_control", {}))
        assert status["paused"] is True
        resumed = structured(await client.call_tool("memory_decay_control", {"action": "resume"}))
        assert resumed["paused"] is False


async def test_aimemory_sets_a_memorys_own_decay_rate(alice):
    async with in_process(alice, "aimemory") as client:
        pk = await _store(client, "A slow-fading fact")
        status = structured(
            await client.call_tool("memory_set_decay_rate", {"memory_id": pk, "decay_rate": 0.001})
        )
        assert status["decay_rate"] == 0.001
        bad = await client.call_tool("memory_set_decay_rate", {"memory_id": pk, "decay_rate": 3})
        assert bad.is_error


async def test_aimemory_decompresses_an_archived_memory_without_loss(alice):
    from memories.services.lifecycle import memories_decay
    from platformcore.lib.actor import command

    async with in_process(alice, "aimemory") as client:
        pk = await _store(client, LONG)
        await _age(pk, 400)
        await sync_to_async(memories_decay)(project=alice.project, actor=command("test"))
        compressed = structured(await client.call_tool("memory_get", {"memory_id": pk}))
        assert compressed["compressed"] is True and compressed["content"] != LONG
        restored = structured(await client.call_tool("memory_decompress", {"memory_id": pk}))
    assert restored["content"] == LONG and restored["compressed"] is False


async def test_charlie_cannot_walk_rate_or_decompress_alices_memories(alice, charlie):
    async with in_process(alice, "aimemory") as client:
        pk = await _store(client, "Alice's memory")
    async with in_process(charlie, "aimemory") as client:
        for tool, args in (
            ("memory_traverse", {"memory_id": pk}),
            ("memory_set_decay_rate", {"memory_id": pk, "decay_rate": 0.5}),
            ("memory_decompress", {"memory_id": pk}),
        ):
            result = await client.call_tool(tool, args)
            assert result.is_error, tool
            assert "not found" in result.content[0].text
        status = structured(await client.call_tool("memory_decay_control", {"action": "pause"}))
    assert status["project"] == "charlie"
    assert (await _memory(pk)).decay_rate is None
