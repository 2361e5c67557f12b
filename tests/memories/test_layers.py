"""Memory layers: defaults on write, the layer job (promotion, expiry with a visible cause),
the layer filter, and the boost of the caller's recent short-term memories."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory, MemoryHistory
from memories.services.layers import memories_layers_maintain
from memories.tasks import SCHEDULES, run_layers
from platformcore.lib.actor import job
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


def _age(memory_id: str, hours: float) -> None:
    then = timezone.now() - timedelta(hours=hours)
    Memory.objects.filter(pk=memory_id).update(created_at=then, last_accessed_at=None)


def test_a_write_gets_the_layer_its_type_suggests_and_only_its_writer_makes_it_expire(
    remember,
) -> None:
    plain = remember("User prefers tea")
    of_a_run = remember("User is debugging the login page", run_id="r1")  # kept, as in mem0
    summary = remember("We shipped the release", memory_type="episode")
    chosen = remember("Water boils at 100 C at sea level", layer="semantic")
    working = remember("User has the login page open", run_id="r1", layer="short_term")
    assert [m["layer"] for m in (plain, of_a_run, summary, chosen, working)] == [
        "long_term",
        "long_term",
        "episodic",
        "semantic",
        "short_term",
    ]


def test_an_unknown_layer_is_refused_naming_the_field(alice: Tenant) -> None:
    response = alice.post(URL, {"content": "x", "user_id": "u1", "layer": "forever"})
    assert response.status_code == 400
    assert "layer" in response.json()["error"]["fields"]


def test_the_layer_job_promotes_important_and_often_read_short_term_memories(
    alice: Tenant, remember
) -> None:
    important = remember(
        "Use the staging database for tests", run_id="r1", layer="short_term", importance=0.9
    )
    read_often = remember("The flaky test is test_login", run_id="r1", layer="short_term")
    Memory.objects.filter(pk=read_often["id"]).update(access_count=3)
    passing = remember("Looked at the logs", run_id="r1", layer="short_term")
    report = memories_layers_maintain(project=alice.project, actor=job("layers"))
    assert set(report.promoted_ids) == {important["id"], read_often["id"]}
    layers = {str(pk): layer for pk, layer in Memory.objects.values_list("id", "layer")}
    assert [layers[m["id"]] for m in (important, read_often, passing)] == [
        "long_term",
        "long_term",
        "short_term",
    ]
    entry = MemoryHistory.objects.filter(memory_id=important["id"], event="UPDATE").get()
    assert entry.old_values == {"layer": "short_term"}
    assert entry.new_values == {"layer": "long_term", "reason": "promoted"}


def test_an_expired_short_term_memory_is_deleted_with_its_cause_and_can_be_restored(
    alice: Tenant, remember
) -> None:
    stale = remember("Tried restarting the worker", run_id="r1", layer="short_term")
    fresh = remember("Worker restarted fine", run_id="r1", layer="short_term")
    kept = remember("User prefers tea")  # long-term: never expires
    _age(stale["id"], 25)
    _age(kept["id"], 1000)
    report = memories_layers_maintain(project=alice.project, actor=job("layers"))
    assert report.expired_ids == [stale["id"]]
    assert alice.get(f"{URL}{stale['id']}/").status_code == 404
    assert alice.get(f"{URL}{fresh['id']}/").status_code == 200
    assert alice.get(f"{URL}{kept['id']}/").status_code == 200
    history = alice.get(f"{URL}{stale['id']}/history/").json()
    assert history[-1]["event"] == "DELETE"
    assert history[-1]["new_values"] == {"reason": "short_term_expired"}
    restored = alice.post(f"{URL}{stale['id']}/restore/")
    assert restored.status_code == 200 and restored.json()["layer"] == "short_term"


def test_a_projects_own_time_to_live_decides_expiry(alice: Tenant, remember) -> None:
    alice.project.settings = {"short_term_ttl_hours": 2}
    alice.project.save()
    memory = remember("Checked the queue depth", run_id="r1", layer="short_term")
    _age(memory["id"], 3)
    assert run_layers(alice.project.pk)["alice"]["expired_ids"] == [memory["id"]]


def test_a_pinned_short_term_memory_is_promoted_not_expired(alice: Tenant, remember) -> None:
    memory = remember(
        "The on-call rota lives in the wiki", run_id="r1", layer="short_term", pinned=True
    )
    _age(memory["id"], 100)
    report = memories_layers_maintain(project=alice.project, actor=job("layers"))
    assert (report.promoted_ids, report.expired_ids) == ([memory["id"]], [])


def test_the_layer_job_is_scheduled_hourly() -> None:
    assert SCHEDULES["memory-layers"] == ("memories.tasks.run_layers", "H")


def test_list_and_search_filter_by_layer(alice: Tenant, remember) -> None:
    remember("Deploys happen on Fridays")
    session = remember("Deploys are frozen this afternoon", run_id="r1", layer="short_term")
    listed = alice.get(URL, {"user_id": "u1", "layer": "short_term"}).json()
    assert [m["id"] for m in listed["results"]] == [session["id"]]
    found = alice.post(f"{URL}search/", {"query": "deploys", "layer": ["short_term"]}).json()
    assert [m["id"] for m in found["results"]] == [session["id"]]
    expression = {"filters": {"AND": [{"layer": "short_term"}, {"user_id": "u1"}]}}
    listed = alice.post(f"{URL}search/", {"query": "deploys", **expression}).json()
    assert [m["id"] for m in listed["results"]] == [session["id"]]
    refused = alice.get(URL, {"layer": "forever"})
    assert refused.status_code == 400
    assert [name.split(".")[0] for name in refused.json()["error"]["fields"]] == ["layer"]


def test_search_ranks_the_callers_recent_short_term_memories_a_little_higher(
    alice: Tenant, remember
) -> None:
    older = remember("The cache is warmed by the cron job")
    mine = remember("The cache is cold after the deploy", run_id="r1", layer="short_term")
    body = {"query": "cache", "user_id": "u1", "mode": "hybrid"}
    plain = alice.post(f"{URL}search/", body).json()["results"]
    boosted = alice.post(f"{URL}search/", {**body, "session_id": "r1"}).json()["results"]
    by_id = {hit["id"]: hit for hit in boosted}
    assert by_id[mine["id"]]["score_parts"]["session"] == pytest.approx(0.1, abs=1e-3)
    assert "session" not in by_id[older["id"]]["score_parts"]
    assert "session" not in {part for hit in plain for part in hit["score_parts"]}
    plain_score = next(hit["score"] for hit in plain if hit["id"] == mine["id"])
    assert by_id[mine["id"]]["score"] > plain_score


def test_a_time_to_live_of_zero_switches_expiry_off(alice: Tenant, remember) -> None:
    alice.project.settings = {"short_term_ttl_hours": 0}
    alice.project.save()
    memory = remember("Checked the queue depth", run_id="r1", layer="short_term")
    _age(memory["id"], 10_000)
    report = memories_layers_maintain(project=alice.project, actor=job("layers"))
    assert (report.expired, report.promoted) == (0, 0)
