"""Every tool of every MCP profile, called through the SDK's real client under that profile's
own tool and argument names, with the fields the imitated system documents asserted.

A profile reproduces another memory server so an assistant configured for it works unchanged
(`mcpserver/profiles.py`): `standard` (ours), `aimemory` (standard + the graph and decay
plan's tools), `sqlnative` (the SQL-native entity memory server), `memento` (Memento MCP:
camelCase arguments, `{success, ...}` results) and `kg` (the official
@modelcontextprotocol/server-memory: entities {name, entityType, observations}, relations
{from, to, relationType}).

Each profile has one walk through its tools in the order an assistant would use them (store,
search, link, update, history, graph, stats, consolidate, delete). The walk records the tools
it called and checks them against `COVERED`; `test_a_profile_exposes_exactly_the_tools_covered_here`
fails as soon as a profile gains (or loses) a tool, so a new tool cannot go untested here.
"""

from __future__ import annotations

from typing import Any

import pytest

from mcpserver.profiles import PROFILES
from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]

STANDARD_TOOLS = frozenset(
    {
        "memory_store",
        "memory_add",
        "memory_search",
        "memory_get",
        "memory_link",
        "memory_update",
        "memory_history",
        "memory_traverse",
        "entity_create",
        "relation_create",
        "entity_graph",
        "graph_subgraph",
        "memory_decay_status",
        "memory_preserve",
        "memory_context",
        "memory_reflect",
        "tool_feedback",
        "memory_stats",
        "memory_consolidate",
        "relation_delete",
        "entity_delete",
        "memory_delete",
        "document_add",
        "document_list",
        "document_search",
        "document_learn",
        "memory_cite",
        "episode_start",
        "episode_get",
        "episode_close",
        "episode_list",
        "tag_list",
        "tag_describe",
        "project_prompts",
        "project_prompt_set",
        "project_prompt_rollback",
    }
)
AIMEMORY_EXTRA = frozenset(
    {
        "memory_graph_search",
        "memory_graph_analysis",
        "memory_decay_control",
        "memory_set_decay_rate",
        "memory_decompress",
    }
)
SQLNATIVE_TOOLS = frozenset(
    {
        "store_memory",
        "recall_memories",
        "create_entities",
        "create_relations",
        "get_entity_graph",
        "consolidate_memories",
        "get_memory_stats",
        "delete_relations",
        "delete_entities",
        "delete_memories",
    }
)
MEMENTO_TOOLS = frozenset(
    {
        "remember",
        "link",
        "recall",
        "amend",
        "graph_explore",
        "context",
        "tool_feedback",
        "memory_stats",
        "memory_consolidate",
        "reflect",
        "forget",
    }
)
KG_TOOLS = frozenset(
    {
        "create_entities",
        "create_relations",
        "add_observations",
        "search_nodes",
        "open_nodes",
        "read_graph",
        "delete_observations",
        "delete_relations",
        "delete_entities",
    }
)
COVERED = {
    "standard": STANDARD_TOOLS,
    "aimemory": STANDARD_TOOLS | AIMEMORY_EXTRA,
    "sqlnative": SQLNATIVE_TOOLS,
    "memento": MEMENTO_TOOLS,
    "kg": KG_TOOLS,
}


class Calls:
    """An in-process client that remembers which tools it called."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.called: set[str] = set()

    async def result(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """The raw CallToolResult (for tool errors, `is_error` is true)."""
        self.called.add(tool)
        return await self.client.call_tool(tool, arguments or {})

    async def ok(self, tool: str, arguments: dict[str, Any] | None = None) -> Any:
        """The structured content of a call that must not be a tool error."""
        return structured(await self.result(tool, arguments))


def ids(items: list[dict[str, Any]]) -> set[str]:
    return {item["id"] for item in items}


# --- every profile is fully covered ---------------------------------------------------------------


def test_every_profile_has_a_walk_in_this_file():
    assert set(COVERED) == set(PROFILES)


@pytest.mark.parametrize("profile", sorted(COVERED))
async def test_a_profile_exposes_exactly_the_tools_covered_here(alice, profile):
    async with in_process(alice, profile) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert names - COVERED[profile] == set(), "new tools: add them to this profile's walk"
    assert COVERED[profile] - names == set(), "tools gone: remove them from the walk"


# --- standard (and aimemory, which serves the same tools) -----------------------------------------


@pytest.mark.parametrize("profile", ["standard", "aimemory"])
async def test_standard_tools_through_a_working_session(alice, profile):
    async with in_process(alice, profile) as client:
        calls = Calls(client)

        # store: typed, scoped, embedded, linked to the entity it names
        stored = await calls.ok(
            "memory_store",
            {
                "content": "The nightly build failed: the CI runner ran out of disk space",
                "memory_type": "error",
                "user_id": "u1",
                "tags": ["ci"],
                "entity_names": ["CI runner"],
            },
        )
        assert stored["created"] is True
        error = stored["memory"]
        assert (error["memory_type"], error["tags"], error["user_id"]) == ("error", ["ci"], "u1")
        assert (error["version"], error["has_embedding"], error["state"]) == (1, True, "active")
        fix = (
            await calls.ok(
                "memory_store",
                {
                    "content": "Prune old docker images on the CI runner every night",
                    "memory_type": "procedure",
                    "user_id": "u1",
                },
            )
        )["memory"]

        # add: facts extracted from a conversation, each an ADD/UPDATE/DELETE/NONE event
        learned = await calls.ok(
            "memory_add",
            {
                "messages": [{"role": "user", "content": "I prefer squash merges for features."}],
                "user_id": "u1",
            },
        )
        assert learned["results"], learned
        assert all({"id", "event", "memory"} <= set(event) for event in learned["results"])
        assert any("squash" in event["memory"] for event in learned["results"])

        # search: ranked, explained
        found = await calls.ok(
            "memory_search", {"query": "why did the nightly build fail", "user_id": "u1"}
        )
        assert found["results"][0]["id"] == error["id"]
        assert {"score", "score_parts"} <= set(found["results"][0])
        assert found["mode"] == "hybrid"

        got = await calls.ok("memory_get", {"memory_id": error["id"]})
        assert (got["id"], got["content"]) == (error["id"], error["content"])
        assert 0 < got["effective_confidence"] <= 1

        linked = await calls.ok(
            "memory_link",
            {"from_id": error["id"], "to_id": fix["id"], "link_type": "resolved_by"},
        )
        assert linked["created"] is True
        assert (linked["link"]["from_id"], linked["link"]["to_id"]) == (error["id"], fix["id"])
        assert linked["link"]["link_type"] == "resolved_by"

        # update bumps the version; history keeps the old content
        new_content = "The nightly build failed: the CI runner's 40 GB disk was full"
        updated = await calls.ok(
            "memory_update", {"memory_id": error["id"], "content": new_content}
        )
        assert (updated["content"], updated["version"]) == (new_content, 2)
        history = await calls.ok("memory_history", {"memory_id": error["id"]})
        assert [entry["event"] for entry in history["history"]] == ["ADD", "UPDATE"]
        change = history["history"][1]
        assert (change["old_content"], change["new_content"]) == (error["content"], new_content)

        walked = await calls.ok("memory_traverse", {"memory_id": error["id"], "depth": 1})
        assert walked["center"] == error["id"]
        assert ids(walked["nodes"]) == {error["id"], fix["id"]}
        assert [edge["link_type"] for edge in walked["edges"]] == ["resolved_by"]

        # the entity graph
        created = await calls.ok(
            "entity_create",
            {
                "entities": [
                    {"name": "Ada", "entity_type": "person"},
                    {"name": "Acme", "entity_type": "organization"},
                ]
            },
        )
        assert {(e["name"], e["entity_type"]) for e in created["entities"]} == {
            ("Ada", "person"),
            ("Acme", "organization"),
        }
        related = await calls.ok(
            "relation_create",
            {"relations": [{"source": "Ada", "target": "Acme", "relation_type": "works_at"}]},
        )
        assert related["created"] == 1
        relation = related["relations"][0]
        assert (relation["source"]["name"], relation["target"]["name"]) == ("Ada", "Acme")
        subgraph = await calls.ok("entity_graph", {"entity_name": "Ada", "depth": 1})
        assert subgraph["center"]["name"] == "Ada"
        assert {node["name"] for node in subgraph["nodes"]} == {"Ada", "Acme"}
        assert [edge["relation_type"] for edge in subgraph["edges"]] == ["works_at"]

        # lifecycle: decay status, preservation
        status = await calls.ok("memory_decay_status", {"memory_id": error["id"]})
        assert (status["state"], status["preserved"]) == ("active", False)
        assert {"decay_score", "last_decay_update", "predicted_next_state"} <= set(status)
        preserved = await calls.ok("memory_preserve", {"memory_id": error["id"]})
        assert "preserved" in preserved["tags"] and preserved["decay_score"] == 1.0
        status = await calls.ok("memory_decay_status", {"memory_id": error["id"]})
        assert status["preserved"] is True and status["predicted_next_state"] is None

        # session start and end
        context = await calls.ok("memory_context", {"user_id": "u1"})
        core = {memory["content"] for memory in context["core"]}
        assert {new_content, fix["content"]} <= core
        assert "[error]" in context["text"] and context["token_budget"] == 2000
        reflected = await calls.ok(
            "memory_reflect",
            {
                "summary": "Fixed the nightly build",
                "decisions": ["Give the CI runner a 100 GB disk"],
                "errors_resolved": ["Disk full on the CI runner: pruned docker images"],
                "user_id": "u1",
            },
        )
        kinds = sorted(item["memory_type"] for item in reflected["results"])
        assert kinds == ["decision", "error", "fact"]

        feedback = await calls.ok(
            "tool_feedback", {"tool_name": "memory_search", "relevant": True, "sufficient": True}
        )
        assert (feedback["tool_name"], feedback["recorded"]) == ("memory_search", True)

        stats = await calls.ok("memory_stats")
        assert stats["memories_by_type"]["error"] >= 1
        assert stats["memories_by_type"]["procedure"] == 1
        assert (stats["total_relations"], stats["total_memory_links"]) == (1, 1)
        assert stats["tool_feedback"]["memory_search"]["reports"] == 1
        assert stats["embedding_coverage"] == 1.0

        preview = await calls.ok("memory_consolidate", {"dry_run": True})
        assert preview["dry_run"] is True
        assert {"clusters_found", "memories_merged", "memories_deleted"} <= set(preview)

        # delete
        removed = await calls.ok(
            "relation_delete",
            {"relations": [{"source": "Ada", "target": "Acme", "relation_type": "works_at"}]},
        )
        assert removed["deleted"] == 1
        gone = await calls.ok("entity_delete", {"entity_names": ["Ada", "Acme"]})
        assert gone["deleted"]["entities"] == 2
        deleted = await calls.ok("memory_delete", {"memory_ids": [fix["id"]]})
        assert (deleted["deleted"], deleted["deleted_ids"]) == (1, [fix["id"]])

        # documents: add a runbook, list it, find its passage (tests/documents has the rest)
        runbook = "# CI\n\n## Disk\n\nWhen the CI runner's disk fills up, prune old images."
        added = await calls.ok(
            "document_add", {"text": runbook, "mime_type": "text/markdown", "user_id": "u1"}
        )
        assert added["created"] is True
        listed = await calls.ok("document_list", {"user_id": "u1"})
        assert [doc["id"] for doc in listed["results"]] == [added["id"]]
        passages = await calls.ok("document_search", {"query": "runner disk", "user_id": "u1"})
        assert passages["results"][0]["heading_path"] == ["CI", "Disk"]
        learned = await calls.ok("document_learn", {"document_id": added["id"]})
        chunk_id = learned["chunks"][0]["chunk_id"]
        cited = await calls.ok("memory_cite", {"memory_id": error["id"], "chunk_id": chunk_id})
        assert cited["document_refs"][0]["document_id"] == added["id"]
        # the graph across kinds: the document, its passage and the memory citing it
        around = await calls.ok("graph_subgraph", {"node": f"document:{added['id']}"})
        assert f"memory:{error['id']}" in {n["key"] for n in around["nodes"]}
        assert {"cites", "contains"} <= {e["type"] for e in around["edges"]}

        # episodes (tests/memories/test_episodes*.py has the rest)
        episode = await calls.ok("episode_start", {"name": "CI cleanup", "run_id": "ci-1"})
        await calls.ok("memory_store", {"content": "Pruned old images", "run_id": "ci-1"})
        read = await calls.ok("episode_get", {"episode_id": episode["id"]})
        assert [m["content"] for m in read["memories"]] == ["Pruned old images"]
        closed = await calls.ok("episode_close", {"episode_id": episode["id"]})
        assert closed["open"] is False and "Pruned old images" in closed["summary"]
        episodes = await calls.ok("episode_list", {"run_id": "ci-1"})
        assert [e["id"] for e in episodes["results"]] == [episode["id"]]

        # the tag registry, and the project's own LLM instructions (admin keys; tests/entities
        # and tests/memories/test_project_prompts.py have the rest)
        tag = await calls.ok("tag_describe", {"name": "ci", "description": "Build pipeline"})
        assert (tag["description"], tag["memory_count"]) == ("Build pipeline", 1)
        tags = await calls.ok("tag_list", {"query": "ci"})
        assert [t["name"] for t in tags["results"]] == ["ci"]
        prompt = await calls.ok("project_prompt_set", {"kind": "extraction", "text": "v1"})
        await calls.ok("project_prompt_set", {"kind": "extraction", "text": "v2"})
        back = await calls.ok("project_prompt_rollback", {"kind": "extraction", "version": 1})
        assert (prompt["version"], back["version"], back["text"]) == (1, 3, "v1")
        prompts = await calls.ok("project_prompts", {"kind": "extraction"})
        assert prompts["active"] == {"extraction": 3}

    assert calls.called == STANDARD_TOOLS


async def test_aimemory_graph_search_is_memory_traverse_and_analysis_finds_connectors(alice):
    """The graph and decay plan: `memory_graph_search` is a deprecated alias of
    `memory_traverse` (same arguments, same result); `memory_graph_analysis` reports degrees
    and top connectors."""
    async with in_process(alice, "aimemory") as client:
        calls = Calls(client)
        texts = [
            "We chose PostgreSQL for the event store",
            "PostgreSQL handles our write volume with room to spare",
            "Load tests showed 5k writes per second on one node",
        ]
        memories = [
            (await calls.ok("memory_store", {"content": text, "memory_type": "fact"}))["memory"]
            for text in texts
        ]
        decision, claim, evidence = (memory["id"] for memory in memories)
        for from_id, to_id in ((claim, decision), (evidence, claim)):
            await calls.ok(
                "memory_link", {"from_id": from_id, "to_id": to_id, "link_type": "supports"}
            )
        walk = {"memory_id": evidence, "depth": 2, "direction": "out", "link_types": ["supports"]}
        alias = await calls.ok("memory_graph_search", walk)
        assert alias == await calls.ok("memory_traverse", walk)
        assert {(node["id"], node["depth"]) for node in alias["nodes"]} == {
            (evidence, 0),
            (claim, 1),
            (decision, 2),
        }

        analysis = await calls.ok("memory_graph_analysis", {"top": 1})
        links = analysis["memory_links"]
        assert (links["count"], links["by_type"]) == (2, {"supports": 2})
        [connector] = links["top_connectors"]
        assert (connector["id"], connector["in_degree"], connector["out_degree"]) == (claim, 1, 1)
        assert {"entities", "relations", "top_connectors"} <= set(analysis)

        # preservation until a date is stored in metadata
        kept = await calls.ok(
            "memory_preserve", {"memory_id": decision, "until": "2999-01-01T00:00:00Z"}
        )
        assert kept["metadata"]["preserved_until"].startswith("2999-01-01")
        status = await calls.ok("memory_decay_status", {"memory_id": decision})
        assert status["preserved"] is True and status["decay_score"] == 1.0

        # decay control: pause the scheduled job, a memory's own rate, compressed archives
        paused = await calls.ok("memory_decay_control", {"action": "pause"})
        assert paused["paused"] is True
        assert (await calls.ok("memory_decay_control", {"action": "resume"}))["paused"] is False
        rated = await calls.ok("memory_set_decay_rate", {"memory_id": claim, "decay_rate": 0.0})
        assert rated["decay_rate"] == 0.0
        not_compressed = await calls.result("memory_decompress", {"memory_id": claim})
        assert not_compressed.is_error  # nothing to restore: the text is whole
    assert calls.called >= AIMEMORY_EXTRA


# --- sqlnative (the SQL-native entity memory server) ----------------------------------------------


async def test_sqlnative_tools_through_a_working_session(alice):
    async with in_process(alice, "sqlnative") as client:
        calls = Calls(client)

        stored = await calls.ok(
            "store_memory",
            {
                "content": "Alice manages the frontend team",
                "memory_type": "fact",
                "tags": ["org"],
                "entity_names": ["Alice", "Frontend Team"],
            },
        )
        assert stored["created"] is True
        about_alice = stored["memory"]
        assert (about_alice["confidence"], about_alice["has_embedding"]) == (1.0, True)
        dark = [
            (await calls.ok("store_memory", {"content": text, "memory_type": "preference"}))[
                "memory"
            ]["id"]
            for text in (
                "The user prefers dark mode in the code editor",
                "User likes using dark mode in their code editor",
            )
        ]

        # recall: memories with scores, best first; entity_name keeps that entity's memories
        recalled = await calls.ok(
            "recall_memories",
            {"query": "who manages the frontend", "entity_name": "Alice", "limit": 5},
        )
        assert [hit["id"] for hit in recalled["results"]] == [about_alice["id"]]
        assert recalled["results"][0]["score"] > 0

        entities = await calls.ok(
            "create_entities",
            {"entities": [{"name": "Bob", "entity_type": "person", "description": "Backend"}]},
        )
        assert [(e["name"], e["entity_type"]) for e in entities["entities"]] == [("Bob", "person")]
        relations = await calls.ok(
            "create_relations",
            {
                "relations": [
                    {
                        "source": "Alice",
                        "target": "Bob",
                        "relation_type": "collaborates_with",
                        "strength": 0.8,
                    },
                    {"source": "Bob", "target": "Carol", "relation_type": "reports_to"},
                ]
            },
        )
        assert relations["created"] == 2
        carol = relations["relations"][1]["target"]
        assert (carol["name"], carol["entity_type"]) == ("Carol", "unknown")  # auto-created

        # the subgraph: nodes (entities) with their memories, edges (relations)
        graph = await calls.ok("get_entity_graph", {"entity_name": "Alice", "depth": 1})
        assert {node["name"] for node in graph["nodes"]} == {"Alice", "Bob"}  # not Carol
        alice_node = next(node for node in graph["nodes"] if node["name"] == "Alice")
        assert ids(alice_node["memories"]) == {about_alice["id"]}
        [edge] = graph["edges"]
        assert (edge["relation_type"], edge["strength"]) == ("collaborates_with", 0.8)
        deeper = await calls.ok(
            "get_entity_graph", {"entity_name": "Alice", "depth": 2, "include_memories": False}
        )
        assert {node["name"] for node in deeper["nodes"]} == {"Alice", "Bob", "Carol"}
        assert all(node["memories"] is None for node in deeper["nodes"])

        # consolidation: the dry run reports the cluster and changes nothing
        preview = await calls.ok("consolidate_memories", {"dry_run": True})
        assert (preview["clusters_found"], preview["memories_merged"]) == (1, 1)
        assert preview["memories_deleted"] == 0
        [cluster] = preview["clusters"]
        assert {cluster["primary_id"], *ids(cluster["absorbed"])} == set(dark)

        stats = await calls.ok("get_memory_stats")
        documented = {
            "total_memories",
            "total_entities",
            "total_relations",
            "memories_by_type",
            "average_confidence",
            "oldest_memory",
            "newest_memory",
            "low_confidence_count",
        }
        assert documented <= set(stats)
        assert stats["total_memories"] == 3  # the dry run merged nothing
        assert stats["memories_by_type"] == {"fact": 1, "preference": 2}
        assert (stats["total_entities"], stats["total_relations"]) == (4, 2)

        merged = await calls.ok("consolidate_memories", {"dry_run": False})
        assert (merged["clusters_found"], merged["memories_merged"]) == (1, 1)
        assert merged["memories_deleted"] == 1  # the absorbed memory
        assert (await calls.ok("get_memory_stats"))["total_memories"] == 2

        # delete: relations, entities (with their memories), memories by filter
        removed = await calls.ok(
            "delete_relations",
            {"relations": [{"source": "Bob", "target": "Carol", "relation_type": "reports_to"}]},
        )
        assert removed["deleted"] == 1
        gone = await calls.ok(
            "delete_entities", {"entity_names": ["Alice"], "cascade_memories": True}
        )
        assert gone["deleted"]["entities"] == 1 and gone["deleted"]["memories"] == 1
        deleted = await calls.ok("delete_memories", {"memory_types": ["preference"]})
        assert deleted["deleted"] == 1
        assert (await calls.ok("get_memory_stats"))["total_memories"] == 0

    assert calls.called == SQLNATIVE_TOOLS


# --- memento (Memento MCP) ------------------------------------------------------------------------


async def test_memento_tools_through_a_working_session(alice):
    async with in_process(alice, "memento") as client:
        calls = Calls(client)

        async def remember(content: str, topic: str, type: str, **extra: Any) -> str:
            body = {"content": content, "topic": topic, "type": type, **extra}
            kept = await calls.ok("remember", body)
            assert (kept["success"], kept["created"]) == (True, True), kept
            return kept["id"]

        error = await remember(
            "Deploy failed: the build host disk was full", "deploy", "error", keywords=["disk"]
        )
        fix = await remember(
            "Free space on the build host by pruning artifacts", "deploy", "procedure"
        )
        aside = await remember("The build host runs Ubuntu 24.04", "infra", "fact")
        again = await calls.ok(
            "remember",
            {
                "content": "Deploy failed: the build host disk was full",
                "topic": "deploy",
                "type": "error",
            },
        )
        assert (again["success"], again["id"], again["created"]) == (True, error, False)

        for to_id, relation in ((fix, "resolved_by"), (aside, "related")):
            made = await calls.ok(
                "link", {"fromId": error, "toId": to_id, "relationType": relation}
            )
            assert made["success"] is True

        recalled = await calls.ok(
            "recall", {"text": "why did the deploy fail", "topic": "deploy", "type": "error"}
        )
        assert recalled["success"] is True
        assert [item["id"] for item in recalled["results"]] == [error]
        # with their 1-hop neighbours (caused_by, resolved_by, related by default)
        assert {item["memory"]["id"] for item in recalled["linked"]} == {fix, aside}

        amended = await calls.ok("amend", {"id": fix, "importance": 0.9})
        assert (amended["success"], amended["id"]) == (True, fix)
        assert amended["fragment"]["importance"] == 0.9

        # graph_explore: one hop along caused_by / resolved_by only
        chain = await calls.ok("graph_explore", {"startId": error})
        assert chain["success"] is True
        assert ids(chain["nodes"]) == {error, fix}  # the `related` fragment is no cause

        loaded = await calls.ok("context", {"tokenBudget": 500})
        core = {memory["id"] for memory in loaded["core"]}
        assert {error, fix} <= core and aside not in core  # preference, error, procedure
        assert loaded["working"] == []

        feedback = await calls.ok(
            "tool_feedback",
            {"tool_name": "recall", "relevant": True, "sufficient": False, "suggestion": "more"},
        )
        assert feedback["recorded"] is True
        stats = await calls.ok("memory_stats")
        assert stats["total_memories"] == 3
        assert stats["memories_by_type"] == {"error": 1, "procedure": 1, "fact": 1}
        assert stats["embedding_coverage"] == 1.0
        assert stats["tool_feedback"]["recall"]["sufficient_rate"] == 0.0
        report = await calls.ok("memory_consolidate")
        assert report["dry_run"] is False and report["contradictions_found"] == 0

        reflected = await calls.ok(
            "reflect",
            {
                "summary": "Unblocked the deploy pipeline",
                "sessionId": "s-42",
                "decisions": ["Keep three build artifacts"],
                "errors_resolved": ["Disk full on the build host: pruned artifacts"],
                "new_procedures": ["Check free disk before a deploy"],
                "open_questions": ["Should the build host get a bigger disk?"],
                "task_effectiveness": {"overall_success": True, "tool_highlights": ["recall"]},
            },
        )
        kinds = sorted(item["memory_type"] for item in reflected["results"])
        assert kinds == ["decision", "error", "fact", "fact", "procedure"]

        forgotten = await calls.ok("forget", {"id": aside})
        assert (forgotten["success"], forgotten["deleted"]) == (True, 1)

    assert calls.called == MEMENTO_TOOLS


async def test_memento_refusal_is_a_success_false_result_not_a_tool_error(alice):
    async with in_process(alice, "memento") as client:
        missing = "00000000-0000-0000-0000-000000000000"
        result = await client.call_tool("link", {"fromId": missing, "toId": missing})
        body = structured(result)  # not is_error
        assert body["success"] is False and "not found" in body["error"]


MEMENTO_UNWRAPPED = {
    "reflect": {"summary": "Short session, nothing decided"},
    "context": {},
    "tool_feedback": {"tool_name": "recall", "relevant": True, "sufficient": True},
    "memory_stats": {},
    "memory_consolidate": {},
}


@pytest.mark.parametrize("tool", sorted(MEMENTO_UNWRAPPED))
async def test_every_memento_result_says_success(alice, tool):
    async with in_process(alice, "memento") as client:
        body = structured(await client.call_tool(tool, MEMENTO_UNWRAPPED[tool]))
    assert body.get("success") is True


# --- kg (the official MCP memory server) ----------------------------------------------------------


async def test_kg_tools_through_a_working_session(alice):
    async with in_process(alice, "kg") as client:
        calls = Calls(client)
        # observations without proper nouns: a proper noun in one adds an entity of its own
        # (see test_kg_read_graph_holds_only_the_entities_the_client_created)
        john = {
            "name": "John_Smith",
            "entityType": "person",
            "observations": ["Prefers morning meetings"],
        }
        company = {"name": "Anthropic", "entityType": "organization", "observations": []}
        works_at = {"from": "John_Smith", "to": "Anthropic", "relationType": "works_at"}

        created = await calls.ok("create_entities", {"entities": [john, company]})
        assert created["entities"] == [john, company]
        await calls.ok("create_relations", {"relations": [works_at]})
        added = await calls.ok(
            "add_observations",
            {
                "observations": [
                    {
                        "entityName": "John_Smith",
                        "contents": ["Graduated in 2019", "Prefers morning meetings"],
                    }
                ]
            },
        )
        assert added["results"] == [
            {"entityName": "John_Smith", "addedObservations": ["Graduated in 2019"]}
        ]  # an observation already there is not added twice

        found = await calls.ok("search_nodes", {"query": "MORNING"})  # case-insensitive
        assert [entity["name"] for entity in found["entities"]] == ["John_Smith"]
        assert found["relations"] == [works_at]
        opened = await calls.ok("open_nodes", {"names": ["Anthropic"]})
        assert opened["entities"] == [company]
        assert opened["relations"] == [works_at]  # relations touching an opened node

        graph = await calls.ok("read_graph")
        assert {entity["name"] for entity in graph["entities"]} == {"John_Smith", "Anthropic"}
        john_now = next(e for e in graph["entities"] if e["name"] == "John_Smith")
        assert john_now == {
            "name": "John_Smith",
            "entityType": "person",
            "observations": ["Prefers morning meetings", "Graduated in 2019"],
        }
        assert graph["relations"] == [works_at]

        await calls.ok(
            "delete_observations",
            {"deletions": [{"entityName": "John_Smith", "observations": ["Graduated in 2019"]}]},
        )
        reopened = await calls.ok("open_nodes", {"names": ["John_Smith"]})
        assert reopened["entities"][0]["observations"] == ["Prefers morning meetings"]
        await calls.ok("delete_relations", {"relations": [works_at]})
        assert (await calls.ok("read_graph"))["relations"] == []
        await calls.ok("delete_entities", {"entityNames": ["John_Smith"]})
        assert (await calls.ok("read_graph"))["entities"] == [company]

    assert calls.called == KG_TOOLS


async def test_kg_add_observations_to_an_unknown_entity_is_a_tool_error(alice):
    async with in_process(alice, "kg") as client:
        result = await client.call_tool(
            "add_observations", {"observations": [{"entityName": "Nobody", "contents": ["x"]}]}
        )
    assert result.is_error and "Nobody" in result.content[0].text


async def _kg_pair(client: Any) -> None:
    entities = [
        {"name": "Apollo", "entityType": "service", "observations": ["handles payments"]},
        {"name": "Ledger", "entityType": "service", "observations": []},
    ]
    structured(await client.call_tool("create_entities", {"entities": entities}))


async def test_kg_create_relations_answers_from_to_relation_type(alice):
    relation = {"from": "Apollo", "to": "Ledger", "relationType": "depends_on"}
    async with in_process(alice, "kg") as client:
        await _kg_pair(client)
        made = structured(await client.call_tool("create_relations", {"relations": [relation]}))
    assert made == {"relations": [relation]}


async def test_kg_create_relations_refuses_an_entity_that_does_not_exist(alice):
    relation = {"from": "Apollo", "to": "Ghost", "relationType": "depends_on"}
    async with in_process(alice, "kg") as client:
        await _kg_pair(client)
        result = await client.call_tool("create_relations", {"relations": [relation]})
        names = {
            e["name"] for e in structured(await client.call_tool("read_graph", {}))["entities"]
        }
    assert result.is_error and names == {"Apollo", "Ledger"}


KG_DELETES = {
    "delete_entities": {"entityNames": ["Ledger"]},
    "delete_observations": {
        "deletions": [{"entityName": "Apollo", "observations": ["handles payments"]}]
    },
    "delete_relations": {
        "relations": [{"from": "Apollo", "to": "Ledger", "relationType": "depends_on"}]
    },
}


@pytest.mark.parametrize("tool", sorted(KG_DELETES))
async def test_kg_deletes_answer_success_and_a_message(alice, tool):
    relation = {"from": "Apollo", "to": "Ledger", "relationType": "depends_on"}
    async with in_process(alice, "kg") as client:
        await _kg_pair(client)
        structured(await client.call_tool("create_relations", {"relations": [relation]}))
        body = structured(await client.call_tool(tool, KG_DELETES[tool]))
    assert body["success"] is True and isinstance(body["message"], str)


async def test_kg_read_graph_holds_only_the_entities_the_client_created(alice):
    john = {"name": "John_Smith", "entityType": "person", "observations": ["Speaks fluent Spanish"]}
    async with in_process(alice, "kg") as client:
        structured(await client.call_tool("create_entities", {"entities": [john]}))
        graph = structured(await client.call_tool("read_graph", {}))
    assert graph["entities"] == [john]


async def test_kg_search_nodes_matches_the_entity_type_as_given(alice):
    async with in_process(alice, "kg") as client:
        await _kg_pair(client)
        found = structured(await client.call_tool("search_nodes", {"query": "servic"}))
    assert {entity["name"] for entity in found["entities"]} == {"Apollo", "Ledger"}
