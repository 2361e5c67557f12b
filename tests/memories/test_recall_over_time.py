"""Nothing a user stored vanishes from recall: a memory left unread for weeks or months is
ranked lower, never hidden, by every read path (REST list and search, MCP search under every
profile, session context, graph traversal). It leaves recall only when the prune job removes
it by its rules: effective confidence below 0.05 (about 130 days unread), never a preference,
a pinned or preserved memory, or one of importance >= 0.8.

The clock is moved the way time passes for stored data: the rows' creation and last access
are set back in the database, then the hourly decay job and the daily prune job run, as the
scheduler runs them."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from memories.models import Memory
from memories.services.reinforcement import reinforcements_flush
from memories.tasks import run_decay, run_prune
from tests.mcpserver.conftest import in_process, structured

pytestmark = pytest.mark.django_db(transaction=True)

STORED = {
    "fact": ("Alice's laptop is a ThinkPad X1 Carbon", "ThinkPad laptop"),
    "preference": ("User prefers dark mode in every editor", "dark mode editor"),
    "decision": ("We decided to deploy the billing service on Fridays", "billing deploy Fridays"),
    "procedure": (
        "To rotate the Redis password, revoke it, issue a new one, redeploy",
        "rotate Redis password",
    ),
}
# (days unread, what is still found): the fact and the procedure (importance 0.5 and 0.7) are
# pruned once their effective confidence 0.5^(days/30) falls below 0.05, after ~130 days;
# the preference (0.95) and the decision (0.8) are in the tier that is never pruned.
AGES = [
    (10, set(STORED)),
    (60, set(STORED)),
    (120, set(STORED)),
    (400, {"preference", "decision"}),
]


def _store(alice) -> dict[str, str]:
    ids = {}
    for memory_type, (content, _) in STORED.items():
        response = alice.post(
            "/api/v1/memories/",
            {"content": content, "memory_type": memory_type, "user_id": "alice"},
        )
        assert response.status_code == 201, response.json()
        ids[memory_type] = response.json()["id"]
    link = {"to_id": ids["decision"], "link_type": "relates_to"}
    assert alice.post(f"/api/v1/memories/{ids['fact']}/links/", link).status_code == 201
    return ids


def _leave_unread(days: int) -> None:
    """Every memory last read `days` ago (a read path reinforces what it returns: each path is
    asked about memories nobody has read since)."""
    reinforcements_flush()
    then = timezone.now() - timedelta(days=days)
    Memory.objects.update(created_at=then, updated_at=then, last_accessed_at=None)


def _found_by_rest(alice, ids: dict[str, str], days: int) -> dict[str, set[str]]:
    by_id = {memory_id: memory_type for memory_type, memory_id in ids.items()}
    _leave_unread(days)
    listed = alice.get("/api/v1/memories/", {"user_id": "alice"}).json()["results"]
    found = {"list": {by_id[m["id"]] for m in listed}}
    for path in ("search", "search keyword", "context"):
        found[path] = set()
    for mode, path in (("hybrid", "search"), ("keyword", "search keyword")):
        _leave_unread(days)
        for memory_type, (_, question) in STORED.items():
            response = alice.get(
                "/api/v1/memories/search/", {"q": question, "user_id": "alice", "mode": mode}
            )
            assert response.status_code == 200, response.json()
            hits = [by_id.get(hit["id"]) for hit in response.json()["results"]]
            if memory_type in hits[:5]:
                found[path].add(memory_type)
    _leave_unread(days)
    context = alice.post(
        "/api/v1/session/context/",
        {"user_id": "alice", "types": list(STORED), "token_budget": 2000},
    ).json()
    found["context"] = {by_id[m["id"]] for m in context["core"]}
    return found


# (label, profile, tool, the argument carrying the question, more arguments): each profile's
# recall tool. The SQL-native server's recall_memories filters by effective confidence
# (0.1 unless told otherwise, as that server defines it): asked with 0, it hides nothing.
MCP_RECALLS = [
    ("mcp", "standard", "memory_search", "query", {}),
    ("memento recall", "memento", "recall", "text", {}),
    ("sqlnative", "sqlnative", "recall_memories", "query", {"min_confidence": 0.0}),
]


async def _found_by_mcp(alice, ids: dict[str, str], days: int) -> dict[str, set[str]]:
    by_id = {memory_id: memory_type for memory_type, memory_id in ids.items()}
    found: dict[str, set[str]] = {}
    for label, profile, tool, argument, extra in MCP_RECALLS:
        found[label] = set()
        await sync_to_async(_leave_unread)(days)
        async with in_process(alice, profile) as client:
            for memory_type, (_, question) in STORED.items():
                body = structured(await client.call_tool(tool, {argument: question, **extra}))
                if memory_type in [by_id.get(hit["id"]) for hit in body["results"][:5]]:
                    found[label].add(memory_type)
    return found


@pytest.mark.parametrize(("days", "expected"), AGES)
def test_memories_left_unread_are_found_until_pruned_by_the_rules(alice, days, expected):
    ids = _store(alice)
    _leave_unread(days)
    run_decay()
    candidates = {m["id"] for m in alice.get("/api/v1/memories/prune/").json()["results"]}
    assert candidates == {ids[t] for t in STORED if t not in expected}  # listed before
    run_prune()

    found = _found_by_rest(alice, ids, days)
    found.update(run_async(_found_by_mcp, alice, ids, days))
    for path, types in found.items():
        assert types == expected, f"{path} after {days} days: {types}"

    if "fact" in expected:  # the walk from the fact still reaches the decision it links to
        graph = alice.get(f"/api/v1/memories/{ids['fact']}/traverse/").json()
        assert ids["decision"] in {node["id"] for node in graph["nodes"]}
    states = dict(
        Memory.objects.filter(deleted_at__isnull=True).values_list("memory_type", "state")
    )
    if days >= 120:  # 0.95 × e^(−0.01 × 120) = 0.29: dormant
        assert states["preference"] == "dormant"  # ranked lower, not hidden


def test_pruning_switched_off_for_a_project_removes_nothing(alice):
    ids = _store(alice)
    alice.project.settings = {"pruning": False}
    alice.project.save()
    _leave_unread(400)
    run_decay()
    report = run_prune()["alice"]
    assert (report["enabled"], report["pruned"]) == (False, 0)
    listed = alice.get("/api/v1/memories/", {"user_id": "alice"}).json()["results"]
    assert {m["id"] for m in listed} == set(ids.values())
    # the candidates are still listed, for a curator to act on
    assert alice.get("/api/v1/memories/prune/").json()["count"] == 2


def test_an_administrator_lists_pruned_memories_with_include_deleted(alice, bob):
    ids = _store(alice)
    _leave_unread(400)
    run_prune()
    listed = alice.get("/api/v1/memories/", {"include_deleted": "true"}).json()["results"]
    pruned = {m["id"]: m for m in listed if m["deleted_at"]}
    assert set(pruned) == {ids["fact"], ids["procedure"]}
    assert {m["state"] for m in pruned.values()} == {"expired"}
    history = alice.get(f"/api/v1/memories/{ids['fact']}/history/").json()
    assert history[-1]["event"] == "DELETE"
    reader = alice.client.__class__()
    from tenants.services import api_key_create

    key = api_key_create(project=alice.project, scopes=["read"]).raw_key
    reader.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    refused = reader.get("/api/v1/memories/", {"include_deleted": "true"})
    assert refused.status_code == 403
    other = bob.get("/api/v1/memories/", {"include_deleted": "true"}).json()
    assert other["count"] == 0


def run_async(fn, *args):
    """Run the async MCP part from this synchronous test, on an event loop of its own."""
    return asyncio.run(fn(*args))
