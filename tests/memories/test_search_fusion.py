"""Hybrid search's calibrated fusion: a keyword match counts by how much of the question it
holds, a semantic match by how similar it is, never by where either stands in its list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/search/"
TEAM = [
    "The team has a retro every other Thursday",
    "The analytics dashboard is owned by the data team",
    "Bob's team owns the notifications service",
]


def search(tenant: Tenant, **body) -> list[dict]:
    response = tenant.post(URL, {"user_id": "u1", **body})
    assert response.status_code == 200, response.json()
    return response.json()["results"]


def test_a_one_word_keyword_match_does_not_outrank_a_clearly_better_meaning(
    alice, remember
) -> None:
    for text in [
        *TEAM,
        "Payments were double charged because the webhook handler was not idempotent",
        "The billing service is written in Go",
        "User plays the piano",
    ]:
        remember(text)
    question = "why were customers billed twice"
    results = search(alice, query=question)
    answer, billing = results[0]["score_parts"], results[1]["score_parts"]
    assert results[0]["content"].startswith("Payments were double charged")
    assert results[1]["content"] == "The billing service is written in Go"
    assert answer["keyword"] == 0.0 and 0 < billing["keyword"] < 0.05  # "bill" alone: weak
    assert billing["keyword_coverage"] < 0.2
    assert answer["semantic"] > billing["semantic"]
    # min-max fusion scales the best keyword match to 1.0, whatever it matched
    minmax = search(alice, query=question, fusion="minmax")
    assert minmax[0]["content"] == "The billing service is written in Go"
    assert minmax[0]["score_parts"]["keyword"] == 1.0


def test_score_parts_show_both_calibrated_signals(alice, remember) -> None:
    remember("Weekly planning happens on Monday mornings")
    remember("The design team uses Figma")
    question = "when does the team plan its week"
    # Stemming makes this a two-word match ("plan", "week") for the planning memory: it
    # comes first under any fusion, and the one-word "team" match covers far less.
    for fusion in ("minmax", "rrf"):
        found = search(alice, query=question, min_similarity=0, fusion=fusion)
        assert found[0]["content"] == "Weekly planning happens on Monday mornings"
    results = search(alice, query=question, min_similarity=0)
    assert [hit["content"] for hit in results] == [
        "Weekly planning happens on Monday mornings",
        "The design team uses Figma",
    ]
    planning, design = (hit["score_parts"] for hit in results)
    assert planning["keyword_coverage"] > 0.5 > design["keyword_coverage"] > 0
    for parts in (planning, design):
        assert 0 < parts["keyword"] <= 1 and parts["keyword_rank"] > 0
        assert parts["semantic_evidence"] >= 0 and -1 <= parts["semantic"] <= 1
        assert parts["relevance"] == pytest.approx(
            0.7 * parts["keyword"] + 0.3 * parts["semantic_evidence"], abs=1e-6
        )


def test_a_memory_holding_every_term_of_the_question_has_full_keyword_evidence(
    alice, remember
) -> None:
    remember("Canine obedience training on Saturdays")
    remember("Gardening in spring")
    parts = search(alice, query="obedience training")[0]["score_parts"]
    assert parts["keyword_coverage"] == pytest.approx(1.0)
    assert parts["keyword"] == pytest.approx(1.0)


def test_a_one_word_entity_name_said_as_a_plain_word_barely_boosts(alice, remember) -> None:
    for text in TEAM:
        remember(text)
    remember("The Team app is muted on weekends", entity_names=["Team"])
    results = search(alice, query="when does the team meet to look back on the sprint")
    assert results[0]["content"] == "The team has a retro every other Thursday"
    named = next(hit for hit in results if hit["content"].startswith("The Team app"))
    # four memories say "team", one is linked to the entity: its name match weighs 1/4, and
    # the graph adds a share of the relevance the memory earned, not a fixed amount
    assert 0 < named["score_parts"]["graph"] <= 0.5 / 4 * named["score_parts"]["relevance"]


COMMON_WORD = Path(__file__).parents[2] / "benchmarks/data/paraphrases_common_word.jsonl"


def test_one_word_in_common_with_a_longer_question_is_weak_evidence(alice, remember) -> None:
    """On the common-word paraphrase set (every question shares a common word with its
    memory and with others), a memory holding one term of a question of three or more
    counts half its share of the question: these memories come first, where a lone word
    ("still", "short") crowned another memory before."""
    rows = [json.loads(line) for line in COMMON_WORD.read_text().splitlines() if line]
    for row in rows:
        remember(row.get("memory") or row["distractor"])
    answers = {row["question"]: row["memory"] for row in rows if "question" in row}
    for question in [
        "are calls still being taped",
        "how short does alice want meetings to be",
    ]:
        results = search(alice, query=question)
        assert results[0]["content"] == answers[question], question
