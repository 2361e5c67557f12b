"""Summaries of long memories: written in the background, searched beside the content, and
sent instead of the full text when a token budget is tight (saying so)."""

from __future__ import annotations

import numpy as np
import pytest

from memories.embeddings import get_embedder
from memories.models import Memory
from memories.services.summaries import extractive_summary, memories_summarize

pytestmark = pytest.mark.django_db

PROCEDURE = (
    "Rotating the database credentials is a four step procedure for the payments cluster. "
    "First create a new role in the vault with the same grants as the current one. "
    "Then roll the application pods one zone at a time so that each picks up the new secret. "
    "Watch the connection pool dashboards while the pods restart and pause if errors rise. "
    "Keep the old role for one full day, since batch jobs started before the rotation still "
    "hold it. The nightly reconciliation job reads the ledger with its own service account. "
    "It is not affected by the rotation and must not be restarted during the change window. "
    "Finally revoke the old role in the vault and record the rotation in the change log. "
    "Auditors check the change log every quarter and ask for the vault's access report. "
    "If anything fails, restore the previous secret version in the vault and roll back pods. "
    "Never rotate credentials on the last business day of a month, when invoicing runs. "
    "The whole rotation takes about forty minutes when nothing goes wrong on the cluster."
)


@pytest.fixture
def procedure(remember, django_capture_on_commit_callbacks) -> dict:
    """A long procedure stored for u1, its summary job run as the write commits."""
    with django_capture_on_commit_callbacks(execute=True):
        return remember(PROCEDURE, memory_type="procedure")


def test_a_long_memory_gets_an_extractive_summary_of_its_own_sentences(alice, procedure):
    body = alice.get(f"/api/v1/memories/{procedure['id']}/").json()
    summary = body["summary"]
    assert summary and len(summary) < len(PROCEDURE) / 2
    sentences = [s.strip() for s in summary.split(". ") if s.strip()]
    assert 1 <= len(sentences) <= 3
    assert all(sentence.rstrip(".") in PROCEDURE for sentence in sentences)
    memory = Memory.objects.get(pk=procedure["id"])
    assert memory.summary_method == "extractive" and memory.summary_tokens > 0
    assert memory.summary_embedding is not None


def test_a_short_memory_gets_none_and_an_edit_rewrites_the_summary(
    alice, remember, procedure, django_capture_on_commit_callbacks
):
    short = remember("User prefers dark mode")
    assert Memory.objects.get(pk=short["id"]).summary == ""
    with django_capture_on_commit_callbacks(execute=True):
        alice.patch(f"/api/v1/memories/{procedure['id']}/", {"content": "Rotate keys yearly."})
    memory = Memory.objects.get(pk=procedure["id"])
    assert (memory.summary, memory.summary_tokens, memory.summary_embedding) == ("", 0, None)


def test_the_llm_writes_the_summary_when_one_is_configured_and_search_finds_its_words(
    alice, remember, fake_openai
):
    memory = remember(PROCEDURE, memory_type="procedure")  # jobs not run: no LLM call yet
    fake_openai.reply({"summary": "Credential rotation runbook: new vault role, roll pods."})
    assert memories_summarize(project=alice.project, memory_ids=[memory["id"]]) == 1
    stored = Memory.objects.get(pk=memory["id"])
    assert (stored.summary_method, stored.summary.startswith("Credential rotation")) == (
        "llm",
        True,
    )
    assert "forty minutes" in str(fake_openai.chat_requests()[-1])  # the text, quoted as data
    # "runbook" is in the summary only: keyword search finds the memory by it
    found = alice.post(
        "/api/v1/memories/search/", {"query": "runbook", "mode": "keyword", "user_id": "u1"}
    ).json()["results"]
    assert [hit["id"] for hit in found] == [memory["id"]]


def test_semantic_search_matches_the_summary_where_the_content_vector_falls_short(alice, procedure):
    memory = Memory.objects.get(pk=procedure["id"])
    question = memory.summary
    query = np.asarray(get_embedder().embed(question))
    content_sim = float(query @ np.asarray(memory.embedding))
    summary_sim = float(query @ np.asarray(memory.summary_embedding))
    assert summary_sim > content_sim
    floor = (summary_sim + content_sim) / 2
    hits = alice.post(
        "/api/v1/memories/search/",
        {"query": question, "mode": "semantic", "user_id": "u1", "min_similarity": floor},
    ).json()["results"]
    assert [hit["id"] for hit in hits] == [procedure["id"]]
    assert hits[0]["score_parts"]["semantic"] == pytest.approx(summary_sim, abs=1e-4)


def test_a_budgeted_context_sends_the_summary_of_a_long_memory_and_says_so(alice, procedure):
    memory = Memory.objects.get(pk=procedure["id"])
    budget = memory.summary_tokens + 5
    assert budget < memory.token_count
    body = alice.post(
        "/api/v1/session/context/",
        {"user_id": "u1", "token_budget": budget, "types": ["procedure"]},
    ).json()
    assert [m["id"] for m in body["core"]] == [procedure["id"]]
    assert body["core"][0]["summarized"] is True
    assert body["core"][0]["content"] == memory.summary
    assert body["summarized"] == 1 and body["tokens_used"] == memory.summary_tokens
    assert f"(summary) {memory.summary}" in body["text"]
    roomy = alice.post(
        "/api/v1/session/context/", {"user_id": "u1", "token_budget": 4000, "types": ["procedure"]}
    ).json()
    assert roomy["core"][0]["summarized"] is False and roomy["core"][0]["content"] == PROCEDURE


def test_a_search_under_a_tight_budget_returns_the_summary_marked_summarized(alice, procedure):
    memory = Memory.objects.get(pk=procedure["id"])
    body = alice.post(
        "/api/v1/memories/search/",
        {"query": "rotate database credentials", "user_id": "u1", "token_budget": 100},
    ).json()
    hit = body["results"][0]
    assert (hit["id"], hit["summarized"], hit["content"]) == (
        procedure["id"],
        True,
        memory.summary,
    )
    assert body["tokens"] == memory.summary_tokens and body["budget_exhausted"] is False


def test_the_extractive_summary_keeps_the_order_and_favours_the_opening_sentence():
    text = "Kafka holds the events. Cats sleep. Kafka retention is seven days. Kafka is ours."
    assert extractive_summary(text, sentences=2).startswith("Kafka holds the events.")
    assert "Cats sleep" not in extractive_summary(text, sentences=2)
