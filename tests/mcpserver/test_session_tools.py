"""add, context, reflect, lifecycle tools, supersedes, and the session prompt (in-process)."""

from __future__ import annotations

import pytest

from tests.conftest import make_tenant
from tests.mcpserver.conftest import in_process, structured

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


async def test_memory_add_learns_facts_from_a_conversation(alice):
    messages = [
        {"role": "user", "content": "Hi, I'm Sam. I live in Lisbon and I love hiking."},
        {"role": "assistant", "content": "Nice to meet you, Sam!"},
    ]
    async with in_process(alice) as client:
        events = structured(
            await client.call_tool("memory_add", {"messages": messages, "user_id": "sam"})
        )
        assert events["results"]
        assert {event["event"] for event in events["results"]} <= {
            "ADD",
            "UPDATE",
            "DELETE",
            "NONE",
        }
        found = structured(
            await client.call_tool("memory_search", {"query": "where does Sam live"})
        )
    assert any("Lisbon" in item["content"] for item in found["results"])


@pytest.fixture
def writer(alice):
    return make_tenant(alice.project.slug, scopes=["read", "write"])


async def test_memory_add_with_a_prompt_replaces_the_extraction_prompt(writer, fake_openai):
    fake_openai.reply({"facts": ["Order 42 shipped"]}, {"memory": [{"event": "ADD"}]})
    arguments = {"messages": "Order 42 shipped", "user_id": "u1", "prompt": "Orders only."}
    async with in_process(writer) as client:
        events = structured(await client.call_tool("memory_add", arguments))
    assert [e["memory"] for e in events["results"]] == ["Order 42 shipped"]
    system = fake_openai.chat_requests()[0]["body"]["messages"][0]["content"]
    assert system.startswith("Orders only.")


async def test_reflect_then_context_carries_knowledge_to_the_next_session(alice):
    async with in_process(alice) as client:
        reflected = structured(
            await client.call_tool(
                "memory_reflect",
                {
                    "summary": "Migrated the billing service to Python 3.12",
                    "errors_resolved": ["Celery crashed on import; pinned kombu 5.3"],
                    "new_procedures": ["Run make check before every release"],
                    "agent_id": "coder",
                },
            )
        )
        types = [item["memory_type"] for item in reflected["results"]]
        assert types == ["fact", "error", "procedure"]
        context = structured(
            await client.call_tool("memory_context", {"agent_id": "coder", "token_budget": 500})
        )
        assert "kombu" in context["text"]
        assert context["tokens_used"] <= 500
        prompt = await client.get_prompt("session_context", {"agent_id": "coder"})
        assert "make check" in prompt.messages[0].content.text


async def test_update_with_supersedes_retires_the_old_memory(alice):
    async with in_process(alice) as client:
        old = structured(await client.call_tool("memory_store", {"content": "API lives at v1"}))
        new = structured(await client.call_tool("memory_store", {"content": "API moved"}))
        updated = structured(
            await client.call_tool(
                "memory_update",
                {
                    "memory_id": new["memory"]["id"],
                    "content": "API lives at v2",
                    "supersedes": [old["memory"]["id"]],
                },
            )
        )
        assert updated["content"] == "API lives at v2"
        gone = await client.call_tool("memory_get", {"memory_id": old["memory"]["id"]})
        assert gone.is_error
        history = structured(
            await client.call_tool("memory_history", {"memory_id": old["memory"]["id"]})
        )
        assert history["history"][-1]["event"] == "DELETE"


async def test_lifecycle_tools_report_decay_preserve_and_preview_consolidation(alice, charlie):
    async with in_process(alice) as client:
        stored = structured(await client.call_tool("memory_store", {"content": "Keep me fresh"}))
        memory_id = stored["memory"]["id"]
        status = structured(await client.call_tool("memory_decay_status", {"memory_id": memory_id}))
        assert status["state"] == "active"
        preserved = structured(await client.call_tool("memory_preserve", {"memory_id": memory_id}))
        assert "preserved" in preserved["tags"]
        preview = structured(await client.call_tool("memory_consolidate", {"dry_run": True}))
        assert preview["dry_run"] is True
    async with in_process(charlie) as client:
        hidden = await client.call_tool("memory_decay_status", {"memory_id": memory_id})
        assert hidden.is_error
        assert "not_found" in hidden.content[0].text


@pytest.fixture
def reader(db):
    return make_tenant("reader", scopes=["read"])


async def test_a_read_only_key_cannot_write(reader):
    async with in_process(reader) as client:
        refused = await client.call_tool("memory_store", {"content": "nope"})
        assert refused.is_error
        assert "write" in refused.content[0].text
        assert structured(await client.call_tool("memory_stats", {}))["total_memories"] == 0
