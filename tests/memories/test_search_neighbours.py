"""Hybrid search brings in what was said around its best hits in the same run."""

from __future__ import annotations

import pytest

from memories.selectors.filters import MemoryFilters
from memories.selectors.search import memory_search
from memories.selectors.search_types import SearchQuery
from platformcore.lib.errors import InvalidInput
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/search/"
QUESTION = "Melanie: How was the pottery workshop you went to?"
ANSWER = "Caroline: It was wonderful, I felt so welcome there."


def search(tenant: Tenant, **body) -> list[dict]:
    response = tenant.post(URL, {"mode": "hybrid", "min_similarity": 0.6, **body})
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def conversation(remember, run: str = "chat-1") -> None:
    remember("Caroline: I painted a sunset over the lake last weekend.", run_id=run)
    remember(QUESTION, run_id=run)
    remember(ANSWER, run_id=run)
    remember("Melanie: My kids started swimming lessons this week.", run_id=run)


def test_the_turn_after_a_matching_one_is_found_though_it_shares_no_word(alice, remember):
    conversation(remember)
    results = search(alice, query="pottery workshop", user_id="u1")
    by_content = {hit["content"]: hit for hit in results}
    assert ANSWER in by_content
    assert by_content[ANSWER]["score_parts"]["neighbour"] > 0
    assert results[0]["content"] == QUESTION


def test_neighbours_can_be_switched_off(alice, remember, settings):
    settings.MEMORY_SEARCH_NEIGHBOURS = 0
    conversation(remember)
    contents = [hit["content"] for hit in search(alice, query="pottery workshop")]
    assert contents == [QUESTION]


def test_a_neighbour_outside_the_filters_or_the_project_never_comes_in(alice, bob, remember):
    remember(QUESTION, run_id="chat-1")
    bob.post("/api/v1/memories/", {"content": "Bob's secret plan", "run_id": "chat-1"})
    remember("Another user's note in the same run", run_id="chat-1", user_id="u2")
    remember(ANSWER, run_id="chat-1")
    contents = [hit["content"] for hit in search(alice, query="pottery workshop", user_id="u1")]
    assert contents == [QUESTION, ANSWER]


def test_memories_without_a_run_have_no_neighbours(alice, remember):
    remember(QUESTION)
    remember(ANSWER)
    contents = [hit["content"] for hit in search(alice, query="pottery workshop")]
    assert contents == [QUESTION]


def test_a_memory_further_away_gets_a_smaller_share(alice, remember):
    conversation(remember)
    parts = {
        hit["content"]: hit["score_parts"].get("neighbour", 0.0)
        for hit in search(alice, query="pottery workshop")
    }
    assert parts[ANSWER] > parts["Melanie: My kids started swimming lessons this week."] > 0


def test_bad_neighbour_options_are_refused(alice):
    project = alice.project
    for options in ({"neighbours": 9}, {"neighbours": "two"}, {"neighbour_weight": 2}):
        query = SearchQuery(text="pottery", mode="hybrid", filters=MemoryFilters(), options=options)
        with pytest.raises(InvalidInput):
            memory_search(project=project, query=query)


def test_a_conversation_imported_out_of_order_has_its_neighbours_in_the_order_said(alice, remember):
    """The answer was stored first, today's turns next, the question last; each carries when
    it was said, and that is the order neighbours follow."""
    last_week, today = "2026-03-02T10:00:00Z", "2026-03-09T10:00:00Z"
    remember(ANSWER, run_id="chat-1", occurred_at="2026-03-02T10:01:00Z")
    remember("Caroline: I painted a sunset over the lake.", run_id="chat-1", occurred_at=today)
    remember("Melanie: My kids started swimming lessons.", run_id="chat-1", occurred_at=today)
    remember(QUESTION, run_id="chat-1", occurred_at=last_week)
    results = search(alice, query="pottery workshop", neighbours=1)
    parts = {hit["content"]: hit["score_parts"].get("neighbour", 0.0) for hit in results}
    assert results[0]["content"] == QUESTION
    assert parts[ANSWER] > 0
    assert "Melanie: My kids started swimming lessons." not in parts  # stored next, said later


def test_search_takes_the_neighbour_and_date_options(alice, remember):
    conversation(remember)
    contents = [hit["content"] for hit in search(alice, query="pottery workshop", neighbours=0)]
    assert contents == [QUESTION]
    weighted = search(alice, query="pottery workshop", neighbour_weight=0.5, date_weight=0.1)
    assert ANSWER in [hit["content"] for hit in weighted]
    for body in ({"neighbours": 9}, {"neighbour_weight": 1.5}, {"date_weight": -1}):
        response = alice.post(URL, {"query": "pottery", **body})
        assert response.status_code == 400, response.json()
        assert set(body) <= set(response.json()["error"]["fields"])
