"""Profiles and the tools over search, graph and lifecycle, with the SDK's in-process client."""

from __future__ import annotations

import pytest

from tests.mcpserver.conftest import in_process, stdio_session, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

PROFILE_TOOLS = {
    "sqlnative": {
        "store_memory",
        "recall_memories",
        "create_entities",
        "create_relations",
        "delete_memories",
        "delete_entities",
        "delete_relations",
        "get_entity_graph",
        "consolidate_memories",
        "get_memory_stats",
    },
    "memento": {
        "remember",
        "recall",
        "forget",
        "link",
        "amend",
        "tool_feedback",
        "memory_stats",
        "memory_consolidate",
        "graph_explore",
    },
    "kg": {
        "create_entities",
        "create_relations",
        "add_observations",
        "delete_entities",
        "delete_observations",
        "delete_relations",
        "read_graph",
        "search_nodes",
        "open_nodes",
    },
}


@pytest.mark.parametrize("profile", sorted(PROFILE_TOOLS))
async def test_each_compatibility_profile_exposes_its_seed_tool_names(alice, profile):
    async with in_process(alice, profile) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names >= PROFILE_TOOLS[profile]
    extra = names - PROFILE_TOOLS[profile]
    assert extra <= {"reflect", "context"}  # Memento's session tools, when installed


async def test_aimemory_adds_graph_analysis_and_the_traverse_alias(alice):
    async with in_process(alice, "aimemory") as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert {"memory_traverse", "memory_graph_search", "memory_graph_analysis"} <= names
    assert {"memory_decay_status", "memory_preserve", "memory_store"} <= names


async def test_every_tool_has_a_description_annotations_and_an_output_schema(alice):
    for profile in ("standard", "sqlnative", "memento", "aimemory", "kg"):
        async with in_process(alice, profile) as client:
            for tool in (await client.list_tools()).tools:
                assert tool.description, (profile, tool.name)
                assert tool.annotations is not None, (profile, tool.name)
                assert tool.output_schema is not None, (profile, tool.name)


async def test_the_stdio_command_serves_the_profile_it_is_given(alice):
    async with stdio_session(alice.key, profile="memento") as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
    assert names >= PROFILE_TOOLS["memento"]


async def test_search_finds_stored_memories_and_their_linked_neighbours(alice, charlie):
    async with in_process(alice) as client:
        error = structured(
            await client.call_tool(
                "memory_store",
                {
                    "content": "Build failed: out of disk space on the CI runner",
                    "user_id": "u1",
                    "memory_type": "error",
                },
            )
        )["memory"]
        fix = structured(
            await client.call_tool(
                "memory_store",
                {
                    "content": "Cleaned docker images nightly to free space",
                    "user_id": "u1",
                    "memory_type": "procedure",
                },
            )
        )["memory"]
        await client.call_tool(
            "memory_link", {"from_id": error["id"], "to_id": fix["id"], "link_type": "resolved_by"}
        )
        found = structured(
            await client.call_tool(
                "memory_search", {"query": "CI build disk space", "include_linked": True}
            )
        )
        assert found["results"][0]["id"] == error["id"]
        assert "score_parts" in found["results"][0]
        linked = {item["memory"]["id"] for item in found.get("linked", [])}
        result_ids = {item["id"] for item in found["results"]}
        assert fix["id"] in linked | result_ids

        budget = structured(
            await client.call_tool("memory_search", {"query": "disk space", "token_budget": 1})
        )
        assert len(budget["results"]) <= 1
    async with in_process(charlie) as client:
        nothing = structured(await client.call_tool("memory_search", {"query": "disk space"}))
        assert nothing["results"] == []


async def test_graph_tools_create_walk_and_delete_entities(alice, charlie):
    async with in_process(alice) as client:
        created = structured(
            await client.call_tool(
                "entity_create",
                {
                    "entities": [
                        {"name": "Ada", "entity_type": "person"},
                        {"name": "Acme", "entity_type": "organization"},
                    ],
                    "relations": [{"source": "Ada", "target": "Acme", "relation_type": "works_at"}],
                },
            )
        )
        assert {entity["name"] for entity in created["entities"]} == {"Ada", "Acme"}
        subgraph = structured(
            await client.call_tool("entity_graph", {"entity_name": "Ada", "depth": 1})
        )
        assert {node["name"] for node in subgraph["nodes"]} == {"Ada", "Acme"}
        assert len(subgraph["edges"]) == 1
        ada = next(e for e in created["entities"] if e["name"] == "Ada")
        around = structured(
            await client.call_tool("graph_subgraph", {"node": f"entity:{ada['id']}"})
        )
        assert {node["label"] for node in around["nodes"]} == {"Ada", "Acme"}
        removed = structured(
            await client.call_tool(
                "relation_delete",
                {"relations": [{"source": "Ada", "target": "Acme", "relation_type": "works_at"}]},
            )
        )
        assert removed["deleted"] == 1
    async with in_process(charlie) as client:
        hidden = await client.call_tool("entity_graph", {"entity_name": "Ada"})
        assert hidden.is_error
        assert "not_found" in hidden.content[0].text
        other = await client.call_tool("graph_subgraph", {"node": f"entity:{ada['id']}"})
        assert other.is_error and "not_found" in other.content[0].text
    async with in_process(alice) as client:
        deleted = structured(await client.call_tool("entity_delete", {"entity_names": ["Ada"]}))
        assert deleted["deleted"]


async def test_kg_profile_keeps_observations_as_memories_and_pages_read_graph(alice, settings):
    settings.MEMORY_MCP_MAX_RESULT_TOKENS = 100
    entities = [
        {
            "name": f"Service {n}",
            "entityType": "technology",
            "observations": [f"Service {n} runs on port {8000 + n}", "It is written in Python"],
        }
        for n in range(6)
    ]
    async with in_process(alice, "kg") as client:
        await client.call_tool("create_entities", {"entities": entities})
        await client.call_tool(
            "create_relations",
            {"relations": [{"from": "Service 0", "to": "Service 1", "relationType": "depends_on"}]},
        )
        added = structured(
            await client.call_tool(
                "add_observations",
                {"observations": [{"entityName": "Service 0", "contents": ["Owned by team A"]}]},
            )
        )
        assert added["results"][0]["addedObservations"] == ["Owned by team A"]

        first = structured(await client.call_tool("read_graph", {}))
        assert 0 < len(first["entities"]) < 6  # the budget cut the page
        assert first["next_offset"] == len(first["entities"])
        second = structured(await client.call_tool("read_graph", {"offset": first["next_offset"]}))
        names = [e["name"] for e in first["entities"] + second["entities"]]
        assert len(set(names)) == len(names)

        opened = structured(await client.call_tool("open_nodes", {"names": ["Service 0"]}))
        node = opened["entities"][0]
        assert "Owned by team A" in node["observations"]
        assert opened["relations"] == [
            {"from": "Service 0", "to": "Service 1", "relationType": "depends_on"}
        ]
        found = structured(await client.call_tool("search_nodes", {"query": "team A"}))
        assert [e["name"] for e in found["entities"]] == ["Service 0"]

        await client.call_tool(
            "delete_observations",
            {"deletions": [{"entityName": "Service 0", "observations": ["Owned by team A"]}]},
        )
        reopened = structured(await client.call_tool("open_nodes", {"names": ["Service 0"]}))
        assert "Owned by team A" not in reopened["entities"][0]["observations"]


async def test_memento_tools_remember_recall_amend_and_forget(alice):
    async with in_process(alice, "memento") as client:
        kept = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "Use pnpm, not npm, in the web repo",
                    "topic": "tooling",
                    "type": "decision",
                    "keywords": ["pnpm"],
                    "isAnchor": True,
                },
            )
        )
        assert (kept["success"], kept["created"]) == (True, True)
        recalled = structured(
            await client.call_tool(
                "recall", {"text": "pnpm or npm in the web repo?", "topic": "tooling"}
            )
        )
        assert recalled["success"] is True
        assert [item["id"] for item in recalled["results"]] == [kept["id"]]
        amended = structured(
            await client.call_tool("amend", {"id": kept["id"], "content": "Use pnpm 9"})
        )
        assert (amended["success"], amended["fragment"]["version"]) == (True, 2)
        refused = structured(await client.call_tool("forget", {"topic": "tooling"}))
        assert (refused["deleted"], refused["skippedIds"]) == (0, [kept["id"]])
        forgotten = structured(await client.call_tool("forget", {"id": kept["id"], "force": True}))
        assert forgotten["deletedIds"] == [kept["id"]]


async def _remember(client, content: str, topic: str, type: str = "fact", **extra) -> str:
    body = {"content": content, "topic": topic, "type": type, **extra}
    stored = structured(await client.call_tool("remember", body))
    assert stored["success"] is True, stored
    return stored["id"]


async def test_memento_recall_works_on_filters_alone_topic_and_keywords_apart(alice):
    async with in_process(alice, "memento") as client:
        deploy = await _remember(
            client, "Deploys run from the release branch", "deploy", keywords=["release"]
        )
        tooling = await _remember(client, "The deploy script needs bash 5", "tooling", "procedure")
        auto = await _remember(client, "Grafana dashboards refresh every minute", "monitoring")

        def ids(body):
            assert body["success"] is True, body
            return {item["id"] for item in body["results"]}

        by_topic = structured(await client.call_tool("recall", {"topic": "deploy"}))
        assert ids(by_topic) == {deploy}  # "deploy" in another fragment's text is no topic
        by_type = structured(await client.call_tool("recall", {"type": "procedure"}))
        assert ids(by_type) == {tooling}
        by_keyword = structured(await client.call_tool("recall", {"keywords": ["release"]}))
        assert ids(by_keyword) == {deploy}
        # keywords were extracted from the text when none were given, and are matched
        extracted = structured(await client.call_tool("recall", {"keywords": ["grafana"]}))
        assert ids(extracted) == {auto}
        topic_is_not_a_keyword = structured(
            await client.call_tool("recall", {"keywords": ["monitoring"]})
        )
        assert ids(topic_is_not_a_keyword) == set()
        combined = structured(
            await client.call_tool("recall", {"topic": "tooling", "type": "procedure"})
        )
        assert ids(combined) == {tooling}
        future = structured(
            await client.call_tool("recall", {"createdAfter": "2999-01-01T00:00:00Z"})
        )
        assert ids(future) == set()
        nothing = structured(await client.call_tool("recall", {}))
        assert nothing["success"] is False and "give text" in nothing["error"]


async def test_memento_forget_is_exact_and_never_too_broad(alice):
    async with in_process(alice, "memento") as client:
        doomed = await _remember(client, "Old VPN host is vpn1", "network")
        kept = await _remember(
            client, "The network team owns DNS", "ownership", keywords=["network"]
        )
        too_broad = structured(await client.call_tool("forget", {"agentId": "default"}))
        assert too_broad["success"] is False
        gone = structured(await client.call_tool("forget", {"topic": "network"}))
        assert gone["deletedIds"] == [doomed]
        left = structured(await client.call_tool("recall", {"keywords": ["network"]}))
        assert [item["id"] for item in left["results"]] == [kept]
        missing = structured(await client.call_tool("forget", {"id": doomed}))
        assert missing["success"] is False and "not found" in missing["error"]


async def test_memento_amend_changes_topic_and_keywords_apart_and_can_supersede(alice):
    async with in_process(alice, "memento") as client:
        first = await _remember(client, "Staging runs PostgreSQL 15", "infra", keywords=["pg"])
        retopic = structured(await client.call_tool("amend", {"id": first, "topic": "database"}))
        assert retopic["fragment"]["metadata"]["topic"] == "database"
        assert retopic["fragment"]["tags"] == ["pg"]
        rekey = structured(await client.call_tool("amend", {"id": first, "keywords": ["staging"]}))
        assert rekey["fragment"]["tags"] == ["staging"]
        assert rekey["fragment"]["metadata"]["topic"] == "database"
        newer = structured(
            await client.call_tool(
                "amend", {"id": first, "content": "Staging runs PostgreSQL 17", "supersedes": True}
            )
        )
        assert newer["id"] != first
        assert newer["fragment"]["metadata"]["topic"] == "database"
        found = structured(await client.call_tool("recall", {"text": "staging PostgreSQL version"}))
        ranked = [item["id"] for item in found["results"]]
        assert ranked[:2] == [newer["id"], first]  # the original stays, ranked below
    from asgiref.sync import sync_to_async

    from memories.models import MemoryLink

    def links_of(memory_id: str) -> set[tuple[str, str]]:
        rows = MemoryLink.objects.filter(from_memory_id=memory_id)
        return {(kind, str(to)) for kind, to in rows.values_list("link_type", "to_memory_id")}

    assert ("supersedes", first) in await sync_to_async(links_of)(newer["id"])
    assert ("superseded_by", newer["id"]) in await sync_to_async(links_of)(first)


async def test_memento_remember_with_links_is_one_transaction(alice):
    async with in_process(alice, "memento") as client:
        target = await _remember(client, "The cache node ran out of memory", "incident", "error")
        linked = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "Raised the cache memory limit to 4 GB",
                    "topic": "incident",
                    "type": "procedure",
                    "linkedTo": [target],
                },
            )
        )
        assert linked["success"] is True
        bad = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "This should not be stored",
                    "topic": "incident",
                    "type": "fact",
                    "linkedTo": ["00000000-0000-0000-0000-000000000000"],
                },
            )
        )
        assert bad["success"] is False and "not found" in bad["error"]
        everything = structured(await client.call_tool("recall", {"topic": "incident"}))
        assert {item["content"] for item in everything["results"]} == {
            "The cache node ran out of memory",
            "Raised the cache memory limit to 4 GB",
        }


async def test_memento_session_scope_keeps_a_fragment_in_this_sessions_working_memory(alice):
    async with in_process(alice, "memento") as client:
        await _remember(client, "User prefers short answers", "style", "preference")
        noted = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "Currently editing checkout.py",
                    "topic": "task",
                    "type": "fact",
                    "scope": "session",
                },
            )
        )
        assert noted["sessionId"]
        loaded = structured(await client.call_tool("context", {}))
        assert [m["content"] for m in loaded["working"]] == ["Currently editing checkout.py"]
        assert "User prefers short answers" in [m["content"] for m in loaded["core"]]
        elsewhere = structured(await client.call_tool("context", {"sessionId": "another"}))
        assert elsewhere["working"] == []
        named = structured(
            await client.call_tool(
                "remember",
                {
                    "content": "Waiting for the design review",
                    "topic": "task",
                    "type": "fact",
                    "scope": "session",
                    "sessionId": "another",
                },
            )
        )
        assert named["sessionId"] == "another"
        by_id = structured(await client.call_tool("context", {"sessionId": "another"}))
        assert [m["content"] for m in by_id["working"]] == ["Waiting for the design review"]


async def test_sqlnative_recall_by_entity_keeps_the_search_mode(alice):
    async with in_process(alice, "sqlnative") as client:
        about = structured(
            await client.call_tool(
                "store_memory",
                {"content": "Priya maintains the billing exporter", "memory_type": "fact"},
            )
        )["memory"]
        await client.call_tool(
            "store_memory", {"content": "The billing exporter runs hourly", "memory_type": "fact"}
        )
        await client.call_tool(
            "create_entities", {"entities": [{"name": "Priya", "entity_type": "person"}]}
        )
        from asgiref.sync import sync_to_async

        from entities.models import Entity, EntityMemory

        def link() -> None:
            entity = Entity.objects.get(project=alice.project, name="Priya")
            EntityMemory.objects.get_or_create(
                project=alice.project, entity=entity, memory_id=about["id"]
            )

        await sync_to_async(link)()
        for mode in ("keyword", "hybrid", "semantic"):
            found = structured(
                await client.call_tool(
                    "recall_memories",
                    {"query": "billing exporter", "entity_name": "Priya", "search_mode": mode},
                )
            )
            assert [item["id"] for item in found["results"]] == [about["id"]], mode
            assert found["mode"] == mode


async def test_sqlnative_tools_store_recall_and_delete(alice):
    async with in_process(alice, "sqlnative") as client:
        stored = structured(
            await client.call_tool(
                "store_memory",
                {"content": "The staging database is PostgreSQL 16", "memory_type": "fact"},
            )
        )
        recalled = structured(
            await client.call_tool(
                "recall_memories", {"query": "staging database version", "search_mode": "hybrid"}
            )
        )
        assert recalled["results"][0]["id"] == stored["memory"]["id"]
        stats = structured(await client.call_tool("get_memory_stats", {}))
        assert stats["memories_by_type"] == {"fact": 1}
        deleted = structured(await client.call_tool("delete_memories", {"memory_types": ["fact"]}))
        assert deleted["deleted"] == 1


async def test_reading_a_memory_through_mcp_reinforces_it(alice):
    """memory_get and memory_search reinforce what they return, as the REST reads do: queued
    and applied by the reinforcement thread shortly after the answer."""
    import time

    from asgiref.sync import sync_to_async

    from memories.models import Memory

    async with in_process(alice) as client:
        stored = structured(
            await client.call_tool(
                "memory_store", {"content": "the CI cache lives in /tmp/ci", "user_id": "u1"}
            )
        )["memory"]
        await client.call_tool("memory_get", {"memory_id": stored["id"]})
        found = structured(await client.call_tool("memory_search", {"query": "CI cache"}))
    assert [hit["id"] for hit in found["results"]] == [stored["id"]]

    def access_count() -> int:
        return Memory.objects.get(pk=stored["id"]).access_count

    deadline = time.monotonic() + 10
    while await sync_to_async(access_count)() < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert await sync_to_async(access_count)() == 2


async def test_a_revoked_key_stops_a_long_lived_mcp_session(alice, settings):
    # a stdio server binds its key for its whole life: it checks it again every
    # MEMORY_KEY_RECHECK_SECONDS and refuses every call once the key is revoked
    import asyncio

    from asgiref.sync import sync_to_async

    from tenants.models import ApiKey
    from tenants.services import api_key_revoke

    settings.MEMORY_KEY_RECHECK_SECONDS = 0.1
    async with in_process(alice) as client:
        assert not (await client.call_tool("memory_stats", {})).is_error
        prefix = await sync_to_async(lambda: ApiKey.objects.get(project=alice.project).prefix)()
        await sync_to_async(api_key_revoke)(prefix=prefix)
        await asyncio.sleep(0.2)
        refused = await client.call_tool("memory_stats", {})
        assert refused.is_error
        assert "revoked" in refused.content[0].text
