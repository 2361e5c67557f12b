"""Session tools: reflect at the end, context at the start."""

from __future__ import annotations

from memories.models import Memory


def test_reflect_turns_a_session_summary_into_typed_memories(alice):
    response = alice.post(
        "/api/v1/session/reflect/",
        {
            "agent_id": "coder",
            "session_id": "s1",
            "summary": "Migrated the billing service to Postgres 16",
            "decisions": ["Use logical replication for the cut-over"],
            "errors_resolved": ["pg_dump failed on large objects: use --blobs"],
            "new_procedures": ["To deploy billing, run make release then tag"],
            "open_questions": ["Should we shard invoices?"],
            "task_effectiveness": {"overall_success": True},
        },
    )
    assert response.status_code == 201
    kinds = [(r["memory_type"], r["content"]) for r in response.json()["results"]]
    assert kinds == [
        ("fact", "Migrated the billing service to Postgres 16"),
        ("decision", "Use logical replication for the cut-over"),
        ("error", "pg_dump failed on large objects: use --blobs"),
        ("procedure", "To deploy billing, run make release then tag"),
        ("fact", "Should we shard invoices?"),
    ]
    summary = Memory.objects.get(content__startswith="Migrated")
    assert (summary.agent_id, summary.run_id) == ("coder", "s1")
    assert summary.metadata["task_effectiveness"] == {"overall_success": True}
    assert Memory.objects.get(content__startswith="Should").tags == ["open_question"]


def test_reflect_requires_a_summary(alice):
    response = alice.post("/api/v1/session/reflect/", {"agent_id": "coder", "summary": ""})
    assert response.status_code == 400
    assert "summary" in response.json()["error"]["fields"]


def _remember(tenant, content, **fields):
    fields.setdefault("agent_id", "coder")
    response = tenant.post("/api/v1/memories/", {"content": content, **fields})
    assert response.status_code == 201, response.json()
    return response.json()


def test_context_loads_important_memories_then_the_sessions_working_memory(alice):
    _remember(alice, "Prefers tabs over spaces", memory_type="preference", importance=0.95)
    _remember(alice, "Never force-push to main", memory_type="procedure", importance=0.7)
    _remember(alice, "A trivial observation", memory_type="observation")
    _remember(alice, "Working on invoice export", run_id="s2")
    response = alice.post("/api/v1/session/context/", {"agent_id": "coder", "session_id": "s2"})
    body = response.json()
    assert [m["content"] for m in body["core"]] == [
        "Prefers tabs over spaces",
        "Never force-push to main",
    ]
    assert [m["content"] for m in body["working"]] == ["Working on invoice export"]
    assert body["tokens_used"] <= body["token_budget"] == 2000
    assert "Working memory" in body["text"]


def test_context_respects_the_token_budget(alice):
    topics = ["tabs", "dark mode", "vim", "short answers", "Python", "metric units"]
    for topic in topics:
        _remember(alice, f"Prefers {topic}. " + "Details follow. " * 6, memory_type="preference")
    body = alice.post("/api/v1/session/context/", {"agent_id": "coder", "token_budget": 60}).json()
    assert body["tokens_used"] <= 60
    assert len(body["core"]) == 2


def test_context_never_shows_another_projects_memories(alice, charlie):
    _remember(alice, "Alice's preference", memory_type="preference")
    body = charlie.post("/api/v1/session/context/", {"agent_id": "coder"}).json()
    assert body["core"] == []


def test_context_needs_a_scope(alice):
    response = alice.post("/api/v1/session/context/", {})
    assert response.status_code == 400
