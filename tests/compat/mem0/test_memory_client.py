"""mem0's `MemoryClient` (mem0ai 2.2), unchanged, pointed at the platform with one of its
project keys: every method the platform supports, through real HTTP."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from mem0 import MemoryClient
from mem0.exceptions import AuthenticationError, MemoryError, MemoryNotFoundError, ValidationError

from analytics.models import ToolFeedback
from memories.models import Memory
from tests.conftest import make_tenant


@pytest.fixture
def alice_client(connect) -> MemoryClient:
    return connect(make_tenant("alice").key)


def _add(client: MemoryClient, text: str, user_id: str = "u1", **options) -> str:
    result = client.add(text, user_id=user_id, infer=False, **options)
    assert [event["event"] for event in result["results"]] == ["ADD"]
    return result["results"][0]["id"]


def test_the_client_checks_its_key_on_construction_and_learns_its_project(connect) -> None:
    client = connect(make_tenant("alice").key)
    assert client.project_id == "alice"
    assert client.org_id
    with pytest.raises(ValueError, match="Invalid, revoked or expired API key"):
        connect("mp_not_a_key")


def test_add_get_list_search_update_history_and_delete_a_memory(alice_client) -> None:
    memory_id = _add(alice_client, "I love hiking in the Alps", metadata={"channel": "chat"})
    memory = alice_client.get(memory_id)
    assert memory["memory"] == "I love hiking in the Alps"
    assert memory["user_id"] == "u1" and memory["metadata"] == {"channel": "chat"}
    assert memory["hash"] and memory["created_at"] and memory["updated_at"]

    inferred = alice_client.add(
        [
            {"role": "user", "content": "My favourite drink is green tea."},
            {"role": "assistant", "content": "Noted!"},
        ],
        filters={"user_id": "u1"},
    )
    assert {event["event"] for event in inferred["results"]} <= {"ADD", "UPDATE", "NONE"}
    assert inferred["results"], "the extraction pipeline stored nothing"

    listed = alice_client.get_all(filters={"user_id": "u1"})
    assert listed["count"] >= 2 and memory_id in {m["id"] for m in listed["results"]}
    first_page = alice_client.get_all(filters={"user_id": "u1"}, page=1, page_size=1)
    assert len(first_page["results"]) == 1 and first_page["next"]

    found = alice_client.search(
        "hiking in the mountains",
        filters={"AND": [{"user_id": "u1"}, {"created_at": {"gte": "2020-01-01"}}]},
        top_k=5,
        rerank=True,
    )
    assert found["results"][0]["id"] == memory_id and found["results"][0]["score"] > 0
    elsewhere = alice_client.search(
        "hiking", filters={"OR": [{"user_id": "nobody"}, {"metadata": {"channel": "email"}}]}
    )
    assert elsewhere["results"] == []

    updated = alice_client.update(memory_id, text="I love hiking in the Dolomites")
    assert updated["memory"] == "I love hiking in the Dolomites"
    history = alice_client.history(memory_id)
    assert [entry["event"] for entry in history] == ["ADD", "UPDATE"]
    assert history[1]["old_value"] == "I love hiking in the Alps"
    assert history[1]["new_memory"] == "I love hiking in the Dolomites"

    assert alice_client.delete(memory_id)["message"]
    with pytest.raises(MemoryNotFoundError):
        alice_client.get(memory_id)


def test_a_timestamp_dates_what_is_added_as_mem0_does(alice_client) -> None:
    """mem0's custom timestamps: importing history keeps when it was said."""
    said = int(datetime(2023, 5, 3, 19, 0, tzinfo=UTC).timestamp())
    memory_id = _add(alice_client, "We had dinner with the neighbours", timestamp=said)
    assert alice_client.get(memory_id)["created_at"].startswith("2023-05-03T19:00:00")
    stored = Memory.objects.get(pk=memory_id)
    assert stored.occurred_at == datetime(2023, 5, 3, 19, 0, tzinfo=UTC)
    assert stored.created_at.year >= 2026  # decay counts from when it was stored
    found = alice_client.search(
        "who did I have dinner with on May 3, 2023", filters={"user_id": "u1"}
    )
    assert found["results"][0]["id"] == memory_id
    with pytest.raises(ValidationError):
        alice_client.add("x", user_id="u1", infer=False, timestamp="yesterday")


def test_batch_calls_feedback_and_exports(alice_client) -> None:
    first, second = _add(alice_client, "Likes jazz"), _add(alice_client, "Owns a cat")
    alice_client.batch_update(
        [
            {"memory_id": first, "text": "Likes jazz and blues"},
            {"memory_id": second, "text": "Owns two cats"},
        ]
    )
    assert alice_client.get(first)["memory"] == "Likes jazz and blues"
    assert alice_client.get(second)["memory"] == "Owns two cats"

    verdict = alice_client.feedback(first, "negative", feedback_reason="outdated")
    assert verdict["feedback"] == "NEGATIVE"
    recorded = ToolFeedback.objects.get(tool_name="mem0.feedback")
    assert not recorded.relevant and recorded.suggestion == "outdated" and first in recorded.context

    export = alice_client.create_memory_export(schema={"type": "object"}, filters={"user_id": "u1"})
    exported = alice_client.get_memory_export(memory_export_id=export["id"])
    assert {m["memory"] for m in exported["memories"]} == {"Likes jazz and blues", "Owns two cats"}

    alice_client.batch_delete([{"memory_id": first}, {"memory_id": second}])
    assert alice_client.get_all(filters={"user_id": "u1"})["count"] == 0


def test_entities_are_listed_with_counts_and_deleted_by_scope(alice_client) -> None:
    _add(alice_client, "Prefers window seats")
    _add(alice_client, "Prefers aisle seats", user_id="u2")
    _add(alice_client, "Runs nightly builds", user_id=None, agent_id="builder")
    entities = {(e["type"], e["name"]): e for e in alice_client.users()["results"]}
    assert entities[("user", "u1")]["total_memories"] == 1
    assert set(entities) == {("user", "u1"), ("user", "u2"), ("agent", "builder")}

    alice_client.delete_users(user_id="u2")
    assert ("user", "u2") not in {(e["type"], e["name"]) for e in alice_client.users()["results"]}
    alice_client.delete_all(user_id="u1")
    assert alice_client.get_all(filters={"user_id": "u1"})["count"] == 0
    assert alice_client.get_all(filters={"agent_id": "builder"})["count"] == 1
    alice_client.reset()  # mem0's client deletes every entity it lists
    assert alice_client.users()["results"] == [] and alice_client.get_all()["count"] == 0


def test_errors_reach_the_client_as_mem0s_exceptions(connect, alice_client) -> None:
    with pytest.raises(ValidationError, match="delete without a scope"):
        alice_client.delete_all()
    with pytest.raises(ValidationError, match="filters"):
        alice_client.search("x", filters={"colour": {"gt": 3}})
    with pytest.raises(AuthenticationError, match="admin"):
        reader_writer = connect(make_tenant("alice", scopes=["read", "write"]).key)
        reader_writer.add("x", user_id="u1", custom_instructions="Only store food preferences")
    with pytest.raises(AuthenticationError, match="write"):
        reader = connect(make_tenant("alice", ["read"]).key)
        reader.add("x", user_id="u1")
    for unsupported in (
        lambda: alice_client.get_summary(filters={"user_id": "u1"}),
        lambda: alice_client.get_profile("u1"),
        lambda: alice_client.project.get(),
        lambda: alice_client.get_webhooks(project_id="alice"),
    ):
        with pytest.raises(MemoryError, match="not supported"):
            unsupported()


def test_another_projects_key_sees_none_of_alices_memories(connect, alice_client) -> None:
    memory_id = _add(alice_client, "Alice's secret plan")
    export = alice_client.create_memory_export(schema={}, filters={"user_id": "u1"})
    bob = connect(make_tenant("bob").key)
    assert bob.get_all()["count"] == 0
    assert bob.search("secret plan")["results"] == []
    assert bob.users()["results"] == []
    for call in (
        lambda: bob.get(memory_id),
        lambda: bob.history(memory_id),
        lambda: bob.update(memory_id, text="hijacked"),
        lambda: bob.delete(memory_id),
        lambda: bob.batch_update([{"memory_id": memory_id, "text": "hijacked"}]),
        lambda: bob.batch_delete([{"memory_id": memory_id}]),
        lambda: bob.feedback(memory_id, "POSITIVE"),
        lambda: bob.get_memory_export(memory_export_id=export["id"]),
        lambda: bob.delete_users(user_id="u1"),
    ):
        with pytest.raises(MemoryNotFoundError):
            call()
    bob.delete_all(user_id="u1")
    assert alice_client.get(memory_id)["memory"] == "Alice's secret plan"
