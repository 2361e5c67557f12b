"""Working memory that ends with its session (an explicit close, an episode's close, the idle
timeout), and Memento's TTL tiers stored per memory with its per-type stale thresholds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryHistory
from memories.services.lifecycle import memories_decay
from memories.tasks import SCHEDULES, close_idle_sessions
from platformcore.lib.actor import job
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


def _age(memory_id: str, hours: float) -> None:
    then = timezone.now() - timedelta(hours=hours)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


def _layer(memory_id: str) -> str | None:
    memory = Memory.objects.filter(pk=memory_id, deleted_at__isnull=True).first()
    return memory.layer if memory else None


def _reason(memory_id: str) -> str:
    entry = MemoryHistory.objects.filter(memory_id=memory_id, event="DELETE").get()
    return entry.new_values["reason"]


def _working(remember, content: str, run: str, **fields) -> str:
    return remember(content, run_id=run, layer="short_term", **fields)["id"]


# --- sessions ------------------------------------------------------------------------------


def test_closing_a_session_ends_its_working_memory_but_keeps_what_it_promotes(
    alice: Tenant, charlie: Tenant, remember
) -> None:
    scratch = _working(remember, "Opened the billing service logs", "s1")
    kept = _working(remember, "The invoice job needs the EU region", "s1")
    important = _working(remember, "Never run migrations on Friday", "s1", importance=0.9)
    other = _working(remember, "Looking at the search latency graph", "s2")
    refused = charlie.post("/api/v1/session/close/", {"session_id": "s1"})
    assert refused.status_code == 200 and refused.json()["expired"] == 0  # not charlie's
    closed = alice.post("/api/v1/session/close/", {"session_id": "s1", "promote": [kept]})
    assert closed.status_code == 200, closed.json()
    assert closed.json()["expired_ids"] == [scratch]
    assert set(closed.json()["promoted_ids"]) == {kept, important}
    assert _layer(scratch) is None and _reason(scratch) == "session_closed"
    assert _layer(kept) == _layer(important) == "long_term"
    assert _layer(other) == "short_term"  # another session's working memory stays
    restored = alice.post(f"{URL}{scratch}/restore/")
    assert restored.status_code == 200  # nothing vanishes without a way back


def test_a_session_idle_past_its_timeout_ends_and_only_that_one(alice: Tenant, remember) -> None:
    assert SCHEDULES["memory-sessions"] == ("memories.tasks.close_idle_sessions", "I")
    stale = _working(remember, "Tried the staging deploy", "idle")
    fresh = _working(remember, "Reading the runbook", "busy")
    _age(stale, 2)
    alice.project.settings = {"session_idle_minutes": 0}
    alice.project.save()
    assert close_idle_sessions(alice.project.pk) == {}
    alice.project.settings = {"session_idle_minutes": 60}
    alice.project.save()
    report = close_idle_sessions(alice.project.pk)
    assert [closed["session_id"] for closed in report["alice"]] == ["idle"]
    assert _layer(stale) is None and _layer(fresh) == "short_term"


def test_an_episode_closed_ends_its_sessions_working_memory(alice: Tenant, remember) -> None:
    episode = alice.post("/api/v1/episodes/", {"run_id": "task-7", "name": "flaky tests"}).json()
    scratch = _working(remember, "Rerunning the auth suite", "task-7")
    alice.post(f"/api/v1/episodes/{episode['id']}/close/", {"summary": "Fixed the flaky test"})
    assert _layer(scratch) is None and _reason(scratch) == "session_closed"


def test_a_search_naming_its_session_leaves_out_other_sessions_working_memory(
    alice: Tenant, remember
) -> None:
    mine = _working(remember, "The cache key includes the tenant id", "s1")
    theirs = _working(remember, "The cache key should include the locale", "s2")
    body = {"query": "cache key", "user_id": "u1", "session_id": "s1"}
    found = [hit["id"] for hit in alice.post(f"{URL}search/", body).json()["results"]]
    assert mine in found and theirs not in found
    everyone = alice.post(f"{URL}search/", {"query": "cache key", "user_id": "u1"}).json()
    assert {mine, theirs} <= {hit["id"] for hit in everyone["results"]}


# --- TTL tiers -----------------------------------------------------------------------------


def test_each_memory_stores_the_tier_memento_infers_and_shows_it(alice: Tenant, remember) -> None:
    tiers = {
        kind: remember(f"A {kind} worth remembering", memory_type=kind)["ttl_tier"]
        for kind in ("preference", "decision", "error", "procedure", "fact", "episode")
    }
    assert tiers == {
        "preference": "permanent",
        "decision": "permanent",  # importance 0.8
        "error": "permanent",  # importance 0.9 comes before the error rule
        "procedure": "hot",
        "fact": "warm",
        "episode": "cold",  # importance 0.4
    }
    fact = remember("Low-priority trivia", memory_type="fact", importance=0.3)
    assert fact["ttl_tier"] == "cold"
    raised = alice.patch(f"{URL}{fact['id']}/", {"importance": 0.9}).json()
    assert raised["ttl_tier"] == "permanent"


def test_decay_demotes_unread_memories_by_their_types_threshold_and_a_read_brings_them_back(
    alice: Tenant, remember
) -> None:
    procedure = remember("Rotate the TLS certs with certbot renew", memory_type="procedure")
    fact = remember("The VPN gateway is vpn-2", memory_type="fact")
    pinned = remember("The on-call phone is in the drawer", memory_type="fact", pinned=True)
    for memory in (procedure, fact, pinned):
        _age(memory["id"], 24 * 20)
    report = memories_decay(project=alice.project, actor=job("decay"))
    # the procedure: hot past the 7-day grace window, then cold past half its 30 days
    assert report.tiers == {"hot>warm": 1, "warm>cold": 1}
    tier = {str(pk): value for pk, value in Memory.objects.values_list("id", "ttl_tier")}
    assert [tier[m["id"]] for m in (procedure, fact, pinned)] == ["cold", "warm", "warm"]
    for memory in (fact, pinned):
        _age(memory["id"], 24 * 31)  # past half of a fact's 60 days; the anchor stays
    memories_decay(project=alice.project, actor=job("decay"))
    assert Memory.objects.get(pk=fact["id"]).ttl_tier == "cold"
    assert Memory.objects.get(pk=pinned["id"]).ttl_tier == "warm"
    assert alice.get(f"{URL}{procedure['id']}/").json()["id"] == procedure["id"]
    assert Memory.objects.get(pk=procedure["id"]).ttl_tier == "hot"  # read: hot again


def test_a_project_asking_for_memento_expiry_prunes_cold_stale_memories_first(
    alice: Tenant, remember
) -> None:
    stale = remember("The old wiki lived at wiki.internal", memory_type="fact")
    anchor = remember("Backups are restored from s3://backups", memory_type="fact", pinned=True)
    for memory in (stale, anchor):
        _age(memory["id"], 24 * 61)
        Memory.objects.filter(pk=memory["id"]).update(ttl_tier="cold")
    queue = alice.get(f"{URL}prune/").json()
    assert queue["tier_expiry"] is False and queue["count"] == 0  # decay ranks, it keeps
    alice.project.settings = {"tier_expiry": True, "stale_thresholds": {"fact": 90}}
    alice.project.save()
    assert alice.get(f"{URL}prune/").json()["count"] == 0  # this project's facts: 90 days
    alice.project.settings = {"tier_expiry": True}
    alice.project.save()
    queue = alice.get(f"{URL}prune/").json()
    assert [(m["id"], m["prune_reason"]) for m in queue["results"]] == [(stale["id"], "stale")]
    pruned = alice.post(f"{URL}prune/", {}).json()
    assert pruned["pruned"] == 1 and pruned["stale"] == 1
    assert _reason(stale["id"]) == "stale"
    alice.project.settings = {"tier_expiry": True, "stale_thresholds": {"fact": -1}}
    alice.project.save()
    refused = alice.get(f"{URL}prune/")
    assert refused.status_code == 400 and "stale_thresholds" in refused.json()["error"]["fields"]
