"""Utility scoring (Memento's evaluator): a job scores new and changed memories, offline or
by the LLM; the score shows in the memory, its utility endpoint and the stats, and weighs
a little in search ranking and in decay."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory
from memories.selectors.quality import rank_factor
from memories.services.utility import (
    actionability,
    heuristic_parts,
    length_fitness,
    memories_score_utility,
    specificity,
)
from memories.tasks import SCHEDULES, sweep_utility

SPECIFIC = (
    "Always run `pnpm install --frozen-lockfile` in CI: npm 9.8 broke the lockfile of "
    "web-app v2.3 on 2024-05-02"
)
VAGUE = "stuff things maybe"


def _store(tenant, content, **fields):
    fields.setdefault("user_id", "u1")
    response = tenant.post("/api/v1/memories/", {"content": content, **fields})
    assert response.status_code in (200, 201), response.json()
    return response.json()


def test_a_new_memory_is_scored_by_the_job_enqueued_when_the_write_commits(
    alice, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        created = _store(alice, SPECIFIC, memory_type="procedure")
    memory = Memory.objects.get(pk=created["id"])
    assert memory.verified_at is not None
    assert memory.utility_score != 0.5
    body = alice.get(f"/api/v1/memories/{created['id']}/").json()
    assert body["utility_score"] == memory.utility_score
    assert body["verified_at"] is not None


def test_a_memory_stored_outside_a_committed_write_waits_unassessed_at_the_neutral_score(alice):
    created = _store(alice, SPECIFIC)
    assert created["utility_score"] == 0.5
    assert created["verified_at"] is None


def test_changed_content_is_scored_again(alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        created = _store(alice, VAGUE)
    before = Memory.objects.get(pk=created["id"])
    with django_capture_on_commit_callbacks(execute=True):
        alice.patch(f"/api/v1/memories/{created['id']}/", {"content": SPECIFIC})
    after = Memory.objects.get(pk=created["id"])
    assert after.verified_at > before.verified_at
    assert after.utility_score > before.utility_score


def test_the_heuristic_prefers_specific_actionable_self_contained_memories(alice):
    assert specificity(SPECIFIC) > specificity(VAGUE)
    assert actionability(SPECIFIC, "procedure") > actionability("The sky was grey", "fact")
    assert length_fitness(VAGUE) < length_fitness(SPECIFIC) == 1.0
    useful = heuristic_parts(Memory(content=SPECIFIC, memory_type="procedure"), closest=0.2)
    vague = heuristic_parts(Memory(content=VAGUE, memory_type="observation"), closest=0.2)
    assert useful.score > vague.score


def test_a_near_duplicate_scores_lower_than_the_same_text_alone(alice):
    text = Memory(content=SPECIFIC, memory_type="procedure")
    assert heuristic_parts(text, closest=0.98).score < heuristic_parts(text, closest=0.1).score


def test_feedback_on_a_memory_moves_its_score(alice, django_capture_on_commit_callbacks):
    created = _store(alice, "The staging database is db-stg-2 on port 5433")
    memories_score_utility(project=alice.project)
    before = Memory.objects.get(pk=created["id"]).utility_score
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(3):
            response = alice.post(f"/api/v1/memories/{created['id']}/feedback/", {"helpful": False})
            assert response.status_code == 201
    body = alice.get(f"/api/v1/memories/{created['id']}/utility/").json()
    assert body["feedback"] == {"helpful": 0, "total": 3}
    assert body["utility_score"] < before


def test_the_llm_scores_when_one_is_configured(alice, fake_openai):
    created = _store(alice, "The team prefers squash merges", memory_type="preference")
    fake_openai.reply({"utility": 0.9, "reason": "actionable preference"})
    report = memories_score_utility(project=alice.project)
    assert report.by_llm == 1
    # the LLM's 0.9 weighs 0.8, the (absent, neutral) feedback 0.2
    assert Memory.objects.get(pk=created["id"]).utility_score == pytest.approx(0.82)


def test_a_failing_llm_falls_back_to_the_heuristic(alice, fake_openai):
    created = _store(alice, "The team prefers squash merges", memory_type="preference")
    fake_openai.reply(500, 500, 500)
    report = memories_score_utility(project=alice.project)
    assert (report.scored, report.by_llm) == (1, 0)
    assert Memory.objects.get(pk=created["id"]).verified_at is not None


def test_an_assessed_memory_is_not_scored_again_until_it_changes(alice):
    _store(alice, SPECIFIC)
    assert memories_score_utility(project=alice.project).scored == 1
    assert memories_score_utility(project=alice.project).scored == 0


def test_utility_weighs_a_little_in_ranking_and_is_neutral_when_unassessed(settings):
    settings.MEMORY_UTILITY_RANK_WEIGHT = 0.2
    assert rank_factor(None) == rank_factor(0.5) == 1.0
    assert rank_factor(1.0) == pytest.approx(1.1)
    assert rank_factor(0.0) == pytest.approx(0.9)


def test_search_ranks_the_more_useful_of_two_equally_relevant_memories_first(alice):
    a = _store(alice, "Deploys go out on Tuesdays", user_id="u1")
    b = _store(alice, "Deploys go out on Tuesdays", user_id="u2")
    Memory.objects.filter(pk=a["id"]).update(utility_score=0.1, verified_at=timezone.now())
    Memory.objects.filter(pk=b["id"]).update(utility_score=0.9, verified_at=timezone.now())
    body = alice.post("/api/v1/memories/search/", {"query": "deploys", "mode": "keyword"}).json()
    ids = [hit["id"] for hit in body["results"]]
    assert ids[:2] == [b["id"], a["id"]]
    parts = body["results"][0]["score_parts"]
    assert parts["utility"] == 0.9


def test_useful_memories_decay_more_slowly(alice):
    from memories.services.lifecycle import memory_decay_status

    a = _store(alice, "One memory", user_id="u1")
    b = _store(alice, "Another memory", user_id="u2")
    Memory.objects.filter(pk=a["id"]).update(utility_score=1.0)
    Memory.objects.filter(pk=b["id"]).update(utility_score=0.0)
    useful = memory_decay_status(project=alice.project, memory_id=a["id"])
    useless = memory_decay_status(project=alice.project, memory_id=b["id"])
    assert useful["effective_decay_rate"] < useless["effective_decay_rate"]


def test_stats_show_the_mean_utility_and_the_tiers(alice, remember):
    remember("A preference", memory_type="preference")
    created = remember("A fact")
    Memory.objects.filter(pk=created["id"]).update(utility_score=0.9, verified_at=timezone.now())
    stats = alice.get("/api/v1/analytics/overview/").json()
    assert stats["mean_utility"] == pytest.approx(0.7)
    assert stats["mean_assessed_utility"] == pytest.approx(0.9)
    assert stats["utility_assessed_count"] == 1
    # the stored tiers, as Memento infers them: a fact of importance 0.5 is warm
    assert stats["memories_by_tier"] == {"hot": 0, "warm": 1, "cold": 0, "permanent": 1}


def test_charlie_cannot_read_or_rate_alices_memory_utility(alice, charlie):
    created = _store(alice, SPECIFIC)
    assert charlie.get(f"/api/v1/memories/{created['id']}/utility/").status_code == 404
    response = charlie.post(f"/api/v1/memories/{created['id']}/feedback/", {"helpful": True})
    assert response.status_code == 404


def test_feedback_without_a_verdict_is_a_400_naming_the_field(alice):
    created = _store(alice, SPECIFIC)
    response = alice.post(f"/api/v1/memories/{created['id']}/feedback/", {})
    assert response.status_code == 400
    assert "helpful" in response.json()["error"]["fields"]


def test_the_hourly_sweep_scores_memories_whose_job_was_never_queued(alice):
    """A web process killed between a write's commit and the queueing of its scoring job:
    the sweep scores the memory; one changed in the last minutes waits for its own job."""
    lost = _store(alice, "Deploys run from the release branch after the smoke tests pass")
    recent = _store(alice, "The on-call rota changes every Monday at 9:00")
    an_hour_ago = timezone.now() - timedelta(hours=1)
    Memory.objects.filter(pk=lost["id"]).update(verified_at=None, updated_at=an_hour_ago)
    Memory.objects.filter(pk=recent["id"]).update(verified_at=None)

    report = sweep_utility()
    assert report["alice"]["scored"] == 1
    assert Memory.objects.get(pk=lost["id"]).verified_at is not None
    assert Memory.objects.get(pk=recent["id"]).verified_at is None
    assert "memory-utility-sweep" in SCHEDULES
