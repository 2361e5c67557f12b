"""When a memory happened (`occurred_at`) and dates in a question: an imported conversation
keeps its dates, a question naming a day finds what was said that day, and decay still counts
from when the memory was stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from memories.models import Memory
from memories.selectors.search import memory_search
from memories.selectors.search.dates import question_dates
from memories.selectors.search_types import SearchQuery
from memories.tasks import run_decay, run_prune
from platformcore.lib.errors import InvalidInput
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def spans(text: str) -> list[tuple[str, str] | int]:
    out = []
    for window in question_dates(text, NOW):
        if window.month is not None:
            out.append(window.month)
        else:
            out.append((window.start.date().isoformat(), window.end.date().isoformat()))
    return out


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Who did Maria have dinner with on May 3, 2023?", [("2023-05-02", "2023-05-05")]),
        ("What did Gina find on 1 February, 2023?", [("2023-01-31", "2023-02-03")]),
        ("notes from 2023-05-03", [("2023-05-02", "2023-05-05")]),
        ("What did Maria do in December 2023?", [("2023-11-30", "2024-01-02")]),
        ("When did Melanie go camping in June?", [6]),
        ("the week before August 3, 2023", [("2023-07-20", "2023-08-05")]),
        ("what did I decide yesterday", [("2026-11-23", "2026-11-26")]),
        ("what did we ship last week", [("2026-11-15", "2026-11-24")]),
        ("May I ask what you like?", []),
        ("what does alice prefer", []),
        ("on 31 February 2023", [("2023-01-31", "2023-03-02")]),  # no such day: the month
    ],
)
def test_the_dates_a_question_names(question: str, expected: list) -> None:
    assert spans(question) == expected


def test_a_question_naming_a_day_finds_what_was_said_that_day(alice: Tenant, settings) -> None:
    said = {
        "Maria: We had a lovely dinner with the neighbours.": "2023-05-03T19:00:00Z",
        "Maria: Dinner with my sister was fun, we cooked pasta.": "2023-06-14T19:00:00Z",
        "Maria: I had dinner with an old friend from school.": "2023-08-21T19:00:00Z",
    }
    for content, when in said.items():
        response = alice.post(
            "/api/v1/memories/",
            {"content": content, "run_id": "chat", "occurred_at": when},
        )
        assert response.status_code == 201, response.json()
        assert response.json()["occurred_at"].startswith(when[:10])

    question = "Who did Maria have dinner with on May 3, 2023?"
    results = alice.post("/api/v1/memories/search/", {"query": question}).json()["results"]
    assert results[0]["content"].startswith("Maria: We had a lovely dinner")
    assert results[0]["score_parts"]["date"] > 0
    assert all("date" not in hit["score_parts"] for hit in results[1:])

    settings.MEMORY_SEARCH_DATE_WEIGHT = 0
    switched_off = alice.post("/api/v1/memories/search/", {"query": question}).json()["results"]
    assert all("date" not in hit["score_parts"] for hit in switched_off)


def test_a_bad_occurred_at_or_date_weight_is_a_clear_error(alice: Tenant) -> None:
    response = alice.post(
        "/api/v1/memories/", {"content": "x", "user_id": "u1", "occurred_at": "last tuesday"}
    )
    assert response.status_code == 400
    assert "occurred_at" in response.json()["error"]["fields"]
    assert Memory.objects.count() == 0
    query = SearchQuery(text="in May 2023", options={"date_weight": 3})
    with pytest.raises(InvalidInput, match="date_weight"):
        memory_search(project=alice.project, query=query)


def test_old_history_imported_today_is_neither_dormant_nor_pruned(alice: Tenant) -> None:
    two_years_ago = (timezone.now() - timedelta(days=730)).isoformat()
    item = {"content": "I adopted a cat named Miso.", "occurred_at": two_years_ago, "user_id": "al"}
    response = alice.post("/api/v1/memories/bulk/", {"memories": [item]})
    assert response.status_code in (200, 201), response.json()
    run_decay()
    run_prune()
    memory = Memory.objects.get()
    assert memory.deleted_at is None and memory.state == "active"
    listed = alice.get("/api/v1/memories/?user_id=al").json()["results"]
    assert [m["occurred_at"][:4] for m in listed] == [two_years_ago[:4]]
