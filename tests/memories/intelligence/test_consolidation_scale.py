"""Consolidation's candidate pairs at scale: both plans (exact pairs within a scope, HNSW
probes filtered to the project), multi-tenant crowding, and incremental runs."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from memories.models import MaintenanceState, Memory
from memories.services import consolidation_pairs
from memories.services.consolidation import memories_consolidate
from memories.services.consolidation_pairs import candidate_pairs, exact_is_cheaper
from memories.services.content import content_hash
from platformcore.lib.actor import command
from tenants.models import Project

pytestmark = pytest.mark.slow  # thousands of memories

TWINS = [
    "React hooks let you use state in function components",
    "React hooks let function components use state",
]
ACTOR = command("test")


@pytest.fixture(params=["exact", "probes"])
def plan(request, monkeypatch) -> str:
    """Run the test under each plan (the cost model would pick exact for tiny scopes)."""
    cost = 0.0 if request.param == "exact" else 1e9
    monkeypatch.setattr(consolidation_pairs, "PAIR_COST_US", cost)
    return request.param


def _store_twins(alice, user_id: str = "u1") -> list[str]:
    alice.project.settings = {"dedup_threshold": 1.0}  # stored as if before near-dup merging
    alice.project.save()
    ids = []
    for index, content in enumerate(TWINS):
        body = {"content": content, "user_id": user_id, "confidence": 0.5 + index / 10}
        ids.append(alice.post("/api/v1/memories/", body).json()["id"])
    return ids


def _crowd(project: Project, around: list[str], per_memory: int, user_id: str = "u1") -> None:
    """`per_memory` rows of `project` closer to each of `around` than the twins are to each
    other (tiny noise on their vectors), written straight into the table."""
    rng = np.random.default_rng(1)
    rows = []
    for memory in Memory.objects.filter(pk__in=around):
        base = np.asarray(memory.embedding, dtype=np.float64)
        for index in range(per_memory):
            vector = base + rng.normal(scale=0.001, size=base.shape)
            content = f"crowd {index} near {memory.pk} in {project.slug}/{user_id}"
            rows.append(
                Memory(
                    project=project,
                    content=content,
                    content_hash=content_hash(content),
                    embedding=(vector / np.linalg.norm(vector)).tolist(),
                    user_id=user_id,
                )
            )
    Memory.objects.bulk_create(rows)


def _nearest_of_whole_table(memory_id: str, limit: int = 40) -> list[int]:
    """The project ids of the `limit` nearest rows of the table: what an unfiltered k-NN
    probe (the former plan) looked at."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT b.project_id FROM memories_memory a, memories_memory b "
            "WHERE a.id = %s AND b.id <> a.id ORDER BY b.embedding <=> a.embedding LIMIT %s",
            [memory_id, limit],
        )
        return [row[0] for row in cursor.fetchall()]


def test_near_duplicates_surrounded_by_closer_vectors_of_another_project_still_consolidate(
    alice, bob, plan
):
    twins = _store_twins(alice)
    _crowd(bob.project, around=twins, per_memory=120)  # more than ef_search (100) each
    assert alice.project.pk not in _nearest_of_whole_table(twins[0])
    assert alice.project.pk not in _nearest_of_whole_table(twins[1])

    search = candidate_pairs(project=alice.project, min_similarity=0.85)
    assert (search.exact_scopes, search.probed_scopes) == ((1, 0) if plan == "exact" else (0, 1))
    report = alice.post("/api/v1/memories/consolidate/", {}).json()

    assert report["clusters_found"] == 1
    assert report["clusters"][0]["primary_id"] == twins[1]
    assert Memory.objects.get(pk=twins[0]).deleted_at is not None
    assert Memory.objects.filter(project=bob.project, deleted_at__isnull=True).count() == 240


def test_near_duplicates_crowded_by_other_users_of_the_same_project_still_consolidate(alice):
    twins = _store_twins(alice)
    _crowd(alice.project, around=twins, per_memory=60, user_id="u2")
    report = alice.post("/api/v1/memories/consolidate/", {"dry_run": True}).json()
    twin_cluster = next(c for c in report["clusters"] if c["primary_id"] in twins)
    assert [m["id"] for m in twin_cluster["absorbed"]] == [twins[0]]


def test_both_plans_find_the_same_pairs(alice, plan):
    _store_twins(alice)
    _crowd(alice.project, around=list(Memory.objects.values_list("pk", flat=True)), per_memory=3)
    pairs = candidate_pairs(project=alice.project, min_similarity=0.6).pairs
    # 8 memories of one scope, all alike: 28 unordered pairs
    assert {frozenset((a, b)) for a, b, _ in pairs} == {
        frozenset((a, b))
        for a in Memory.objects.values_list("pk", flat=True)
        for b in Memory.objects.values_list("pk", flat=True)
        if a != b
    }


def test_an_incremental_run_only_looks_at_memories_changed_since(alice, remember, plan):
    old_twins = _store_twins(alice, user_id="u1")
    Memory.objects.filter(pk__in=old_twins).update(updated_at=timezone.now() - timedelta(days=2))
    since = timezone.now() - timedelta(days=1)
    new = remember("React hooks enable state in function components", user_id="u1")
    remember("Vue has a composition API", user_id="u1")

    report = memories_consolidate(project=alice.project, actor=ACTOR, since=since, dry_run=True)

    assert report.memories_scanned == 2
    assert report.since == since.isoformat()
    [cluster] = report.clusters  # the new memory found its old twins: one star of three
    members = {cluster.primary_id, *(m["id"] for m in cluster.absorbed)}
    assert members == {*old_twins, new["id"]}


def test_untouched_clusters_are_left_for_the_next_full_run(alice):
    twins = _store_twins(alice)
    Memory.objects.filter(pk__in=twins).update(updated_at=timezone.now() - timedelta(days=2))
    since = timezone.now() - timedelta(days=1)
    report = memories_consolidate(project=alice.project, actor=ACTOR, since=since)
    assert (report.memories_scanned, report.clusters_found) == (0, 0)
    assert memories_consolidate(project=alice.project, actor=ACTOR).clusters_found == 1


def test_the_scheduled_run_starts_where_the_last_run_started(alice, remember):
    from memories.tasks import run_consolidation

    twins = _store_twins(alice)
    assert run_consolidation(alice.project.pk)["alice"]["clusters_found"] == 1
    state = MaintenanceState.objects.get(project=alice.project)
    # rewind: the merged primary and the absorbed twin were written an hour before that run
    Memory.objects.filter(pk__in=twins).update(updated_at=timezone.now() - timedelta(hours=1))
    remember("Vue has a composition API")

    result = run_consolidation(alice.project.pk)["alice"]

    assert result["memories_scanned"] == 1
    assert result["since"] is not None
    assert MaintenanceState.objects.get(project=alice.project).last_consolidation_at > (
        state.last_consolidation_at
    )


def test_the_api_and_the_command_run_incrementally_when_asked(alice, remember):
    _store_twins(alice)
    body = {"since": (timezone.now() + timedelta(minutes=1)).isoformat(), "dry_run": True}
    assert alice.post("/api/v1/memories/consolidate/", body).json()["memories_scanned"] == 0
    full = alice.post("/api/v1/memories/consolidate/", {"dry_run": True}).json()
    assert (full["memories_scanned"], full["since"]) == (2, None)
    # "last" without a previous run is a full run
    last = alice.post("/api/v1/memories/consolidate/", {"since": "last", "dry_run": True}).json()
    assert last["memories_scanned"] == 2

    out = StringIO()
    call_command("consolidate_memories", "--project", "alice", "--since", "2999-01-01", stdout=out)
    assert "[since 2999-01-01" in out.getvalue()
    assert "0 scanned" in out.getvalue()


def test_a_bad_since_is_a_named_400(alice):
    response = alice.post("/api/v1/memories/consolidate/", {"since": "yesterday"})
    assert response.status_code == 400
    assert "since" in response.json()["error"]["fields"]


def test_the_cost_model_picks_exact_pairs_for_small_scopes_and_probes_for_large_ones():
    assert exact_is_cheaper(200, 10_000, 12_500)
    assert exact_is_cheaper(2_000, 100_000, 125_000)  # measured: 185 s exact, 243 s probes
    assert not exact_is_cheaper(4_000, 100_000, 125_000)
    assert not exact_is_cheaper(2_000, 10_000, 12_500)
    # a large scope of a project that is a sliver of the table: probes would step over
    # thousands of other tenants' rows each, so exact pairs win again
    assert exact_is_cheaper(2_000, 2_000, 1_000_000)


def test_clusters_merged_in_several_batches_move_links_between_their_primaries(alice, monkeypatch):
    from memories.models import MemoryLink
    from memories.services import consolidation_merge

    monkeypatch.setattr(consolidation_merge, "BATCH_CLUSTERS", 1)
    react = _store_twins(alice, user_id="u1")
    tea = [
        alice.post("/api/v1/memories/", {"content": c, "user_id": "u2", "confidence": conf}).json()[
            "id"
        ]
        for c, conf in (
            ("User drinks green tea every morning", 0.5),
            ("Every morning the user drinks green tea", 0.6),
        )
    ]
    MemoryLink.objects.create(
        project=alice.project, from_memory_id=react[0], to_memory_id=tea[0], link_type="relates_to"
    )
    progress: list[tuple[int, int]] = []
    report = memories_consolidate(
        project=alice.project,
        actor=ACTOR,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert (report.clusters_found, report.memories_deleted) == (2, 2)
    assert progress == [(1, 2), (2, 2)]
    assert MemoryLink.objects.filter(
        from_memory_id=react[1], to_memory_id=tea[1], link_type="relates_to"
    ).exists()
    assert not MemoryLink.objects.filter(from_memory_id=react[0], link_type="relates_to").exists()


@pytest.mark.django_db
def test_probe_settings_hold_inside_the_block_and_are_restored_after_it():
    from django.db import transaction

    def current() -> tuple[str, str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('hnsw.ef_search'), current_setting('work_mem')")
            return cursor.fetchone()

    with transaction.atomic():
        before = current()
        with (
            connection.cursor() as cursor,
            consolidation_pairs.local_settings(cursor, {"hnsw.ef_search": "17", "work_mem": "7MB"}),
        ):
            assert current() == ("17", "7MB")
        assert current() == before
