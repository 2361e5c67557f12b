"""Reranking with a cross-encoder (MEMORY_SEARCH_RERANKER): the best hybrid hits take its
order and carry its score, within a time budget, through the REST API and mem0's."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from memories.rerankers import CrossEncoderReranker, get_reranker
from tests.tiny_models import tiny_cross_encoder

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/search/"
NOTES = [
    "The deploy pipeline runs on GitHub Actions",
    "Deploys to production need two approvals",
    "The deploy key rotates every month",
    "Rollbacks of a deploy take five minutes",
    "Staging deploys run every night",
]
QUESTION = "how do deploys work"


@pytest.fixture
def reranker(settings):
    settings.MEMORY_SEARCH_RERANKER = tiny_cross_encoder()
    settings.MEMORY_SEARCH_RERANK_BUDGET_MS = 60_000.0  # a loaded CI machine is no reason to skip
    get_reranker.cache_clear()
    yield CrossEncoderReranker(tiny_cross_encoder())
    get_reranker.cache_clear()


@pytest.fixture
def notes(remember):
    for note in NOTES:
        remember(note)


def search(alice, **body):  # type: ignore[no-untyped-def]
    response = alice.post(URL, {"query": QUESTION, "user_id": "u1", **body})
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_the_best_hits_take_the_cross_encoders_order_and_carry_its_score(alice, notes, reranker):
    results = search(alice)
    expected = reranker.score(QUESTION, [hit["content"] for hit in results])
    assert [hit["score_parts"]["rerank"] for hit in results] == pytest.approx(
        sorted(expected, reverse=True), abs=1e-5
    )
    scores = [hit["score"] for hit in results]
    assert scores == sorted(scores, reverse=True)


def test_past_its_budget_or_when_asked_not_to_the_fused_order_stands(
    alice, notes, reranker, settings
):
    fused = search(alice, rerank=False)
    assert all("rerank" not in hit["score_parts"] for hit in fused)
    settings.MEMORY_SEARCH_RERANK_BUDGET_MS = 0.0001
    over_budget = search(alice)
    assert [hit["id"] for hit in over_budget] == [hit["id"] for hit in fused]
    assert all("rerank" not in hit["score_parts"] for hit in over_budget)


def test_mem0s_rerank_true_reranks(alice, notes, reranker):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alice.key}")
    body = {"query": QUESTION, "user_id": "u1", "rerank": True}
    results = client.post("/v3/memories/search/", body, format="json").json()["results"]
    expected = reranker.score(QUESTION, [hit["memory"] for hit in results])
    assert expected == sorted(expected, reverse=True)
    assert len(results) == len(NOTES)


def test_without_a_reranker_configured_nothing_changes(alice, notes):
    assert all("rerank" not in hit["score_parts"] for hit in search(alice))
