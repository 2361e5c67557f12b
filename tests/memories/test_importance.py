"""A memory stored without an importance gets its type's, whichever way it was written: what
is costly to relearn (preferences, errors, decisions, procedures) outranks and outlives a
plain fact or episode."""

from __future__ import annotations

import pytest

from memories.memory_scope import Scope
from memories.models import TYPE_IMPORTANCE, Memory
from memories.services.fact_extraction import memories_add
from platformcore.lib.actor import command
from tests.mcpserver.conftest import in_process, structured


def test_the_table_orders_types_by_what_they_cost_to_relearn():
    for costly in ("preference", "error", "decision", "procedure"):
        for plain in ("fact", "episode", "observation"):
            assert TYPE_IMPORTANCE[costly] > TYPE_IMPORTANCE[plain]


@pytest.mark.parametrize("memory_type", sorted(TYPE_IMPORTANCE))
def test_rest_create_and_bulk_use_the_types_importance(alice, memory_type):
    single = alice.post(
        "/api/v1/memories/",
        {"content": f"one {memory_type} note", "memory_type": memory_type, "user_id": "u1"},
    ).json()
    assert single["importance"] == TYPE_IMPORTANCE[memory_type]
    bulk = alice.post(
        "/api/v1/memories/bulk/",
        {
            "memories": [
                {"content": f"a bulk {memory_type}", "memory_type": memory_type, "user_id": "u1"}
            ]
        },
    )
    assert bulk.status_code == 201, bulk.json()
    stored = Memory.objects.get(content=f"a bulk {memory_type}")
    assert stored.importance == TYPE_IMPORTANCE[memory_type]


def test_an_importance_given_is_kept(alice):
    given = alice.post(
        "/api/v1/memories/",
        {
            "content": "A minor preference",
            "memory_type": "preference",
            "importance": 0.2,
            "user_id": "u1",
        },
    ).json()
    assert given["importance"] == 0.2


def test_the_add_pipeline_uses_the_types_importance(alice):
    added = memories_add(
        project=alice.project,
        messages="I prefer tea over coffee.",
        scope=Scope(user_id="u1"),
        actor=command("test"),
    )
    stored = Memory.objects.get(pk=added["results"][0]["id"])
    assert stored.memory_type == "preference"
    assert stored.importance == TYPE_IMPORTANCE["preference"]


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_mcp_store_tools_of_every_profile_use_the_types_importance(alice):
    async with in_process(alice) as client:
        stored = structured(
            await client.call_tool(
                "memory_store", {"content": "Disk full on CI", "memory_type": "error"}
            )
        )
        assert stored["memory"]["importance"] == TYPE_IMPORTANCE["error"]
    async with in_process(alice, "sqlnative") as client:
        stored = structured(
            await client.call_tool(
                "store_memory", {"content": "Always run the linter", "memory_type": "procedure"}
            )
        )
        assert stored["memory"]["importance"] == TYPE_IMPORTANCE["procedure"]
    async with in_process(alice, "memento") as client:
        remembered = structured(
            await client.call_tool(
                "remember",
                {"content": "User likes terse replies", "topic": "style", "type": "preference"},
            )
        )
    from asgiref.sync import sync_to_async

    importance = await sync_to_async(lambda: Memory.objects.get(pk=remembered["id"]).importance)()
    assert importance == TYPE_IMPORTANCE["preference"]
