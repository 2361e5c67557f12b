"""Bulk writes: POST /api/v1/memories/bulk/ and memories_create_bulk keep every rule of a single
write (exact duplicates, near-duplicate merge, contradictions kept apart, history, scope)."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext

from memories.models import LinkType, Memory, MemoryHistory, MemoryLink
from memories.services.bulk import memories_create_bulk
from memories.services.memories import MemoryInput
from platformcore.lib.actor import SYSTEM

HOOKS = "React hooks let you use state in function components"
HOOKS_AGAIN = "React hooks allow using state inside function components"


def bulk(tenant, memories, status=201):
    response = tenant.post("/api/v1/memories/bulk/", {"memories": memories})
    assert response.status_code == status, response.json()
    return response.json()


def test_bulk_stores_every_memory_in_order_with_an_add_history_each(alice):
    body = bulk(
        alice,
        [
            {"content": "The billing service runs on PostgreSQL", "user_id": "u1"},
            {"content": "Dana prefers tea over coffee", "user_id": "u1", "tags": ["food"]},
            {"content": "Deploy with the blue-green procedure", "agent_id": "ops"},
        ],
    )
    assert body["created"] == 3 and body["existing"] == 0
    assert [r["content"] for r in body["results"]] == [
        "The billing service runs on PostgreSQL",
        "Dana prefers tea over coffee",
        "Deploy with the blue-green procedure",
    ]
    assert body["results"][1]["tags"] == ["food"]
    ids = [r["id"] for r in body["results"]]
    assert MemoryHistory.objects.filter(memory_id__in=ids, event="ADD").count() == 3
    found = alice.post("/api/v1/memories/search/", {"query": "billing database", "user_id": "u1"})
    assert found.json()["results"][0]["id"] == ids[0]


def test_bulk_returns_existing_memories_for_exact_duplicates_inside_and_outside_the_batch(alice):
    first = bulk(alice, [{"content": "Ines lives in Lisbon", "user_id": "u1"}])["results"][0]
    body = bulk(
        alice,
        [
            {"content": "ines  lives in LISBON", "user_id": "u1"},  # folded case and spaces
            {"content": "Omar lives in Oslo", "user_id": "u1"},
            {"content": "Omar lives in Oslo", "user_id": "u1"},
            {"content": "Omar lives in Oslo", "user_id": "u2"},  # another scope: its own memory
        ],
    )
    ids = [r["id"] for r in body["results"]]
    assert ids[0] == first["id"]
    assert ids[1] == ids[2] != ids[3]
    assert [r["created"] for r in body["results"]] == [False, True, False, True]
    assert (body["created"], body["existing"]) == (2, 2)
    assert Memory.objects.filter(project=alice.project, content__icontains="Omar").count() == 2


def test_bulk_merges_near_duplicates_of_stored_memories_into_the_older_one(alice):
    old = bulk(alice, [{"content": HOOKS, "user_id": "u1", "tags": ["react"]}])["results"][0]
    body = bulk(alice, [{"content": HOOKS_AGAIN, "user_id": "u1", "tags": ["hooks"]}], status=200)
    merged = body["results"][0]
    assert merged["id"] == old["id"] and merged["created"] is False
    assert merged["tags"] == ["react", "hooks"] and merged["version"] == 2
    events = [h.event for h in MemoryHistory.objects.filter(memory_id=old["id"])]
    assert sorted(events) == ["ADD", "MERGE"]


def test_two_near_duplicates_of_one_memory_in_a_batch_are_both_merged_into_it(alice):
    old = bulk(alice, [{"content": HOOKS, "user_id": "u1", "tags": ["react"]}])["results"][0]
    again = [
        {"content": HOOKS_AGAIN, "user_id": "u1", "tags": ["hooks"]},
        {"content": HOOKS_AGAIN + ".", "user_id": "u1", "tags": ["state"], "confidence": 0.9},
    ]
    body = bulk(alice, again, status=200)["results"]
    assert {r["id"] for r in body} == {old["id"]}
    memory = Memory.objects.get(pk=old["id"])
    assert memory.version == 3 and memory.tags == ["react", "hooks", "state"]
    merges = MemoryHistory.objects.filter(memory_id=old["id"], event="MERGE").order_by("created_at")
    assert [h.new_values["version"] for h in merges] == [2, 3]


def test_a_scope_too_large_to_compare_exactly_is_probed_and_still_merges(alice, monkeypatch):
    from memories.services import bulk as bulk_service

    monkeypatch.setattr(bulk_service, "bulk_exact_limit", lambda *args: 1)  # 2 memories: large
    others = [{"content": "Lunch is at noon on Fridays", "user_id": "u1"}]
    old = bulk(alice, [{"content": HOOKS, "user_id": "u1"}, *others])["results"][0]
    merged = bulk(alice, [{"content": HOOKS_AGAIN, "user_id": "u1"}], status=200)["results"][0]
    assert merged["id"] == old["id"] and merged["version"] == 2


def test_bulk_merges_near_duplicates_within_the_batch_but_not_across_scopes(alice):
    body = bulk(
        alice,
        [
            {"content": HOOKS, "user_id": "u1", "confidence": 0.5},
            {"content": HOOKS_AGAIN, "user_id": "u1", "confidence": 0.9},
            {"content": HOOKS_AGAIN, "user_id": "u2"},
        ],
    )
    ids = [r["id"] for r in body["results"]]
    assert ids[0] == ids[1] != ids[2]
    assert Memory.objects.get(pk=ids[0]).confidence == 0.9


def test_bulk_never_merges_contradicting_statements(alice):
    body = bulk(
        alice,
        [
            {"content": "User is vegetarian", "user_id": "u1"},
            {"content": "User is not vegetarian", "user_id": "u1"},
        ],
    )
    assert body["created"] == 2


def test_bulk_can_leave_near_duplicates_to_the_consolidation_job_that_follows_it(
    alice, django_capture_on_commit_callbacks
):
    alice.project.settings = {"consolidation_interval": 1}
    alice.project.save()
    with django_capture_on_commit_callbacks(execute=True):
        old = bulk(alice, [{"content": HOOKS, "user_id": "u1", "tags": ["react"]}])["results"][0]
    with django_capture_on_commit_callbacks(execute=True):  # the job runs after the commit
        body = alice.post(
            "/api/v1/memories/bulk/",
            {
                "memories": [{"content": HOOKS_AGAIN, "user_id": "u1", "tags": ["hooks"]}],
                "near_duplicates": "consolidation",
            },
        )
    assert body.status_code == 201
    new = body.json()["results"][0]
    assert new["created"] is True and new["id"] != old["id"]  # stored as it came
    absorbed = Memory.objects.get(pk=new["id"])
    assert absorbed.deleted_at is not None
    link = MemoryLink.objects.get(from_memory=absorbed, link_type=LinkType.SUPERSEDED_BY)
    assert str(link.to_memory_id) == old["id"]
    assert Memory.objects.get(pk=old["id"]).tags == ["react", "hooks"]


def test_a_projects_bulk_near_duplicates_setting_applies_unless_the_write_names_one(alice):
    old = bulk(alice, [{"content": HOOKS, "user_id": "u1"}])["results"][0]
    alice.project.settings = {"bulk_near_duplicates": "consolidation", "consolidation_interval": 0}
    alice.project.save()
    kept = bulk(alice, [{"content": HOOKS_AGAIN, "user_id": "u1"}])["results"][0]
    assert kept["created"] is True and kept["id"] != old["id"]
    again = {"memories": [{"content": HOOKS_AGAIN + "!", "user_id": "u1"}]}
    merged = alice.post("/api/v1/memories/bulk/", {**again, "near_duplicates": "inline"})
    assert merged.status_code == 200 and merged.json()["results"][0]["created"] is False


def test_an_unknown_near_duplicates_mode_is_refused_and_stores_nothing(alice):
    item = {"content": HOOKS, "user_id": "u1"}
    response = alice.post(
        "/api/v1/memories/bulk/", {"memories": [item], "near_duplicates": "later"}
    )
    assert response.status_code == 400
    assert "near_duplicates" in response.json()["error"]["fields"]
    alice.project.settings = {"bulk_near_duplicates": "sometimes"}  # a bad project setting
    alice.project.save()
    response = alice.post("/api/v1/memories/bulk/", {"memories": [item]})
    assert response.status_code == 400
    assert "near_duplicates" in response.json()["error"]["fields"]
    assert not Memory.objects.filter(project=alice.project).exists()


def test_bulk_is_all_or_nothing_and_names_the_bad_item(alice):
    response = alice.post(
        "/api/v1/memories/bulk/",
        {
            "memories": [
                {"content": "A fine memory", "user_id": "u1"},
                {"content": "", "user_id": "u1"},
            ]
        },
    )
    assert response.status_code == 400
    assert "memories.1.content" in response.json()["error"]["fields"]
    response = alice.post(
        "/api/v1/memories/bulk/",
        {"memories": [{"content": "A fine memory", "user_id": "u1"}, {"content": "no scope"}]},
    )
    assert response.status_code == 400
    assert any(name.startswith("memories.1.") for name in response.json()["error"]["fields"])
    assert not Memory.objects.filter(project=alice.project).exists()


def test_bulk_refuses_an_empty_or_oversized_batch(alice):
    assert alice.post("/api/v1/memories/bulk/", {"memories": []}).status_code == 400
    too_many = [{"content": f"memory {i}", "user_id": "u"} for i in range(1001)]
    response = alice.post("/api/v1/memories/bulk/", {"memories": too_many})
    assert response.status_code == 400
    assert "memories" in response.json()["error"]["fields"]


def test_bulk_writes_go_to_the_callers_project_only(alice, charlie):
    bulk(charlie, [{"content": "Charlie's secret plan", "user_id": "u1"}])
    body = bulk(alice, [{"content": "Charlie's secret plan", "user_id": "u1"}])
    assert body["created"] == 1  # not charlie's memory returned as a duplicate
    assert Memory.objects.filter(project=alice.project).count() == 1
    assert Memory.objects.filter(project=charlie.project).count() == 1


def test_bulk_needs_write_scope(alice):
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    response = reader.post(
        "/api/v1/memories/bulk/", {"memories": [{"content": "x", "user_id": "u"}]}
    )
    assert response.status_code == 403


def test_a_bulk_write_costs_about_the_same_number_of_queries_for_10_or_60_memories(alice, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "off"  # the graph's own batching is tested in entities

    people = ["Alice", "Bob", "Chen", "Dana", "Elif", "Farid", "Grace", "Hiro", "Ines", "Jonas"]
    habits = ["tea", "chess", "Rust", "hiking", "jazz", "Kafka", "sushi", "Go", "Berlin", "yoga"]
    texts = [f"{p} cares a lot about {h}" for p in people for h in habits]

    def queries(count: int, offset: int) -> int:
        items = [MemoryInput(content=text, user_id="u") for text in texts[offset : offset + count]]
        with CaptureQueriesContext(connection) as captured:
            memories_create_bulk(project=alice.project, items=items, actor=SYSTEM)
        return sum(1 for q in captured.captured_queries if "memories_memory" in q["sql"])

    assert queries(60, 10) <= queries(10, 0) + 2
