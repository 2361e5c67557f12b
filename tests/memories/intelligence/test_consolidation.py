"""Consolidation and the contradiction review flow."""

from __future__ import annotations

from memories.models import ContradictionReview, LinkType, Memory, MemoryLink

REACT = [
    "React hooks let you use state in function components",
    "React hooks let function components use state",
    "With React hooks, function components can use state",
    "React hooks enable state in function components",
    "Function components can hold state thanks to React hooks",
]


def _store_all(alice, contents, **fields):
    """Store with near-duplicate merging off, as if they had been written before it existed."""
    alice.project.settings = {"dedup_threshold": 1.0}
    alice.project.save()
    ids = []
    for index, content in enumerate(contents):
        body = {"content": content, "user_id": "u1", "confidence": 0.5 + index / 20, **fields}
        ids.append(alice.post("/api/v1/memories/", body).json()["id"])
    return ids


def test_dry_run_reports_clusters_without_changing_anything(alice):
    ids = _store_all(alice, REACT)
    report = alice.post("/api/v1/memories/consolidate/", {"dry_run": True}).json()
    assert report["dry_run"] is True
    assert report["clusters_found"] == 1
    assert report["memories_merged"] == 4
    assert Memory.objects.filter(pk__in=ids, deleted_at__isnull=True).count() == 5
    assert all(Memory.objects.get(pk=pk).version == 1 for pk in ids)


def test_a_cluster_is_merged_into_its_most_confident_memory(alice):
    ids = _store_all(alice, REACT, tags=["react"])
    Memory.objects.filter(pk=ids[0]).update(tags=["frontend"], access_count=3)
    report = alice.post("/api/v1/memories/consolidate/", {"similarity_threshold": 0.85}).json()
    primary_id = ids[-1]  # highest confidence
    assert report["clusters"][0]["primary_id"] == primary_id
    assert report["memories_deleted"] == 4
    primary = Memory.objects.get(pk=primary_id)
    assert primary.version == 2
    assert set(primary.tags) == {"react", "frontend"}
    assert primary.access_count == 3
    alive = Memory.objects.filter(pk__in=ids, deleted_at__isnull=True)
    assert list(alive.values_list("pk", flat=True)) == [primary.pk]


def test_merging_leaves_a_version_trail_on_both_sides(alice):
    ids = _store_all(alice, REACT[:2])
    alice.post("/api/v1/memories/consolidate/", {})
    primary, absorbed = ids[1], ids[0]
    primary_history = alice.get(f"/api/v1/memories/{primary}/history/").json()
    assert [h["event"] for h in primary_history] == ["ADD", "MERGE"]
    assert primary_history[1]["new_values"]["absorbed_id"] == absorbed
    absorbed_history = alice.get(f"/api/v1/memories/{absorbed}/history/").json()
    assert absorbed_history[-1]["event"] == "DELETE"
    assert MemoryLink.objects.filter(
        from_memory_id=absorbed, to_memory_id=primary, link_type=LinkType.SUPERSEDED_BY
    ).exists()


def test_links_of_absorbed_memories_move_to_the_primary(alice, remember):
    ids = _store_all(alice, REACT[:2])
    other = remember("Vue has a composition API")
    alice.post(
        f"/api/v1/memories/{ids[0]}/links/", {"to_id": other["id"], "link_type": "relates_to"}
    )
    alice.post("/api/v1/memories/consolidate/", {})
    assert MemoryLink.objects.filter(
        from_memory_id=ids[1], to_memory_id=other["id"], link_type="relates_to"
    ).exists()


def test_entity_associations_of_absorbed_memories_move_to_the_primary(alice):
    from memories.services.consolidation import reassign_entities

    entity_memory = __import__("django.apps", fromlist=["apps"]).apps.get_model(
        "entities", "EntityMemory"
    )
    entity = entity_memory._meta.get_field("entity").related_model
    ids = _store_all(alice, REACT[:2])
    x = entity.objects.create(project=alice.project, name="X", normalized_name="x")
    y = entity.objects.create(project=alice.project, name="Y", normalized_name="y")
    entity_memory.objects.filter(memory_id__in=ids).delete()
    entity_memory.objects.create(project=alice.project, entity=x, memory_id=ids[0])
    entity_memory.objects.create(project=alice.project, entity=y, memory_id=ids[1])
    alice.post("/api/v1/memories/consolidate/", {})
    linked = set(entity_memory.objects.filter(memory_id=ids[1]).values_list("entity_id", flat=True))
    assert linked == {x.pk, y.pk}
    assert reassign_entities(project=alice.project, primary_id=ids[1], absorbed_ids=[]) == 0


def test_contradicting_memories_are_not_merged_but_flagged(alice):
    ids = _store_all(alice, ["User is vegetarian", "User is not vegetarian"])
    report = alice.post("/api/v1/memories/consolidate/", {}).json()
    assert report["memories_merged"] == 0
    assert report["contradictions_found"] == 1
    assert Memory.objects.filter(pk__in=ids, deleted_at__isnull=True).count() == 2
    assert ContradictionReview.objects.get().status == "open"


def test_consolidation_only_clusters_within_one_scope_and_project(alice, bob):
    _store_all(alice, REACT[:1])
    alice.post("/api/v1/memories/", {"content": REACT[1], "user_id": "u2"})
    bob.post("/api/v1/memories/", {"content": REACT[1], "user_id": "u1"})
    report = alice.post("/api/v1/memories/consolidate/", {}).json()
    assert report["clusters_found"] == 0


def test_a_bad_threshold_is_a_named_400(alice):
    response = alice.post("/api/v1/memories/consolidate/", {"similarity_threshold": 0})
    assert response.status_code == 400
    assert "similarity_threshold" in response.json()["error"]["fields"]


# --- contradictions review ----------------------------------------------------------------


def _open_review(alice, add):
    alice.project.settings = {"delete_decisions": "review"}  # offline: flagged, not deleted
    alice.project.save()
    add("I am vegetarian")
    add("I started eating meat again")
    return alice.get("/api/v1/contradictions/").json()["results"][0]


def test_keep_a_supersedes_b(alice, add):
    review = _open_review(alice, add)
    response = alice.post(
        f"/api/v1/contradictions/{review['id']}/resolve/", {"resolution": "keep_a", "note": "n"}
    )
    body = response.json()
    assert (body["status"], body["resolution"]) == ("resolved", "keep_a")
    assert body["resolved_by"].startswith("key:")
    assert body["resolved_at"] is not None
    assert Memory.objects.get(pk=review["memory_b"]["id"]).deleted_at is not None
    assert Memory.objects.get(pk=review["memory_a"]["id"]).deleted_at is None
    assert alice.get("/api/v1/contradictions/").json()["count"] == 0
    assert alice.get("/api/v1/contradictions/", {"status": "resolved"}).json()["count"] == 1


def test_keep_both_deletes_nothing_and_drops_the_contradicts_links(alice, add):
    review = _open_review(alice, add)
    alice.post(f"/api/v1/contradictions/{review['id']}/resolve/", {"resolution": "keep_both"})
    ids = [review["memory_a"]["id"], review["memory_b"]["id"]]
    assert Memory.objects.filter(pk__in=ids, deleted_at__isnull=True).count() == 2
    assert not MemoryLink.objects.filter(link_type=LinkType.CONTRADICTS).exists()


def test_merge_rewrites_a_and_supersedes_b(alice, add):
    review = _open_review(alice, add)
    alice.post(
        f"/api/v1/contradictions/{review['id']}/resolve/",
        {"resolution": "merge", "content": "User was vegetarian and eats meat again"},
    )
    a = Memory.objects.get(pk=review["memory_a"]["id"])
    assert a.content == "User was vegetarian and eats meat again"
    assert Memory.objects.get(pk=review["memory_b"]["id"]).deleted_at is not None


def test_a_resolved_review_cannot_be_resolved_again(alice, add):
    review = _open_review(alice, add)
    url = f"/api/v1/contradictions/{review['id']}/resolve/"
    alice.post(url, {"resolution": "keep_both"})
    assert alice.post(url, {"resolution": "keep_a"}).status_code == 409


def test_an_unknown_resolution_is_a_named_400(alice, add):
    review = _open_review(alice, add)
    response = alice.post(f"/api/v1/contradictions/{review['id']}/resolve/", {"resolution": "x"})
    assert response.status_code == 400
    assert "resolution" in response.json()["error"]["fields"]


def test_another_project_cannot_see_or_resolve_contradictions(alice, charlie, add):
    review = _open_review(alice, add)
    assert charlie.get("/api/v1/contradictions/").json()["results"] == []
    assert charlie.get(f"/api/v1/contradictions/{review['id']}/").status_code == 404
    response = charlie.post(
        f"/api/v1/contradictions/{review['id']}/resolve/", {"resolution": "keep_a"}
    )
    assert response.status_code == 404
    assert ContradictionReview.objects.get().status == "open"


def test_the_llm_judges_contradictions_when_configured(alice, fake_openai):
    _store_all(alice, ["User is vegetarian", "User is not vegetarian"])
    fake_openai.reply({"contradicts": True, "reason": "diet changed"})
    alice.post("/api/v1/memories/consolidate/", {})
    review = ContradictionReview.objects.get()
    assert (review.detected_by, review.reason) == ("llm", "diet changed")
