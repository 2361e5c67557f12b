from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memories.models import Memory
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
BASE = "/api/v1/analytics/"


@pytest.fixture
def stored(alice: Tenant, remember) -> None:
    remember("Prefers dark mode", memory_type="preference", tags=["ui", "theme"])
    remember("Chose React", memory_type="decision", tags=["ui"])
    old = remember("Deploy failed", memory_type="error", confidence=0.8)
    Memory.objects.filter(pk=old["id"]).update(created_at=timezone.now() - timedelta(days=60))


def test_overview_counts_and_averages(alice: Tenant, stored: None) -> None:
    body = alice.get(f"{BASE}overview/").json()
    assert body["total_memories"] == 3
    assert body["memories_by_type"] == {"preference": 1, "decision": 1, "error": 1}
    assert 0 < body["average_confidence"] <= 1


def test_types_distribution(alice: Tenant, stored: None) -> None:
    assert alice.get(f"{BASE}types/").json()["by_type"]["decision"] == 1


def test_tag_frequency_most_used_first(alice: Tenant, stored: None) -> None:
    assert alice.get(f"{BASE}tags/").json()["results"] == [
        {"tag": "ui", "count": 2},
        {"tag": "theme", "count": 1},
    ]


def test_growth_counts_recent_memories_per_day(alice: Tenant, stored: None) -> None:
    body = alice.get(f"{BASE}growth/", {"interval": "day", "days": 30}).json()
    assert sum(row["count"] for row in body["results"]) == 2
    assert alice.get(f"{BASE}growth/", {"interval": "year"}).status_code == 400


def test_confidence_histogram_buckets_effective_confidence(alice: Tenant, stored: None) -> None:
    rows = alice.get(f"{BASE}confidence/", {"buckets": 4}).json()["results"]
    assert [row["count"] for row in rows] == [1, 0, 0, 2]  # the 60-day-old one decayed to 0.2


def test_analytics_of_another_project_are_empty(charlie: Tenant, stored: None) -> None:
    assert charlie.get(f"{BASE}overview/").json()["total_memories"] == 0
    assert charlie.get(f"{BASE}tags/").json()["results"] == []
    assert sum(r["count"] for r in charlie.get(f"{BASE}confidence/").json()["results"]) == 0


def test_analytics_need_a_key(anonymous) -> None:
    assert anonymous.get(f"{BASE}overview/").status_code == 401


def test_relations_by_type_split_into_open_and_closed(alice: Tenant, charlie: Tenant) -> None:
    from tests.entities.conftest import build_graph

    build_graph(alice.project, [("Ada", "works_at", "Acme"), ("Bob", "works_at", "Acme")])
    build_graph(alice.project, [("Ada", "uses", "Python")])
    relation = alice.get("/api/v1/relations/").json()["results"][0]
    alice.post(f"/api/v1/relations/{relation['id']}/close/", {})

    body = alice.get(f"{BASE}relations/").json()

    assert body["open"] + body["closed"] == 3
    assert body["closed"] == 1
    assert set(body["by_type"]) == {"works_at", "uses"}
    assert charlie.get(f"{BASE}relations/").json() == {"by_type": {}, "open": 0, "closed": 0}


def test_tool_feedback_report_rates_each_tool(alice: Tenant, charlie: Tenant) -> None:
    from analytics.services import tool_feedback_record
    from platformcore.lib.actor import Actor

    agent = Actor("key", "test")
    for relevant in (True, True, False):
        tool_feedback_record(
            project=alice.project,
            tool_name="memory_search",
            relevant=relevant,
            sufficient=False,
            actor=agent,
            suggestion="" if relevant else "missed the deploy note",
        )

    body = alice.get(f"{BASE}feedback/").json()

    assert body["reports"] == 3
    assert body["tools"]["memory_search"]["relevant_rate"] == pytest.approx(0.6667)
    assert body["by_trigger"] == {"voluntary": 3}
    assert [s["suggestion"] for s in body["suggestions"]] == ["missed the deploy note"]
    assert charlie.get(f"{BASE}feedback/").json()["reports"] == 0
