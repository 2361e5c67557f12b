"""POST /memories/add/ with an LLM: mem0's behavioural cases against a local fake server that
speaks the chat-completions API (the real `openai` client is used)."""

from __future__ import annotations

import json

from memories.models import ContradictionReview, LinkType, Memory, MemoryLink
from memories.services.fact_extraction.llm import EXTRACTION_FORMAT, FACT_EXTRACTION_TASK


def _seed(remember, content: str) -> str:
    return remember(content, user_id="u1")["id"]


def test_extraction_and_decision_prompts_are_sent_in_json_mode(add, fake_openai):
    fake_openai.reply({"facts": ["User's name is Bob"]}, {"memory": [{"event": "ADD"}]})
    events = add("My name is Bob")
    assert [(e["event"], e["memory"]) for e in events] == [("ADD", "User's name is Bob")]
    extraction, decision = fake_openai.chat_requests()
    assert extraction["body"]["response_format"] == {"type": "json_object"}
    assert extraction["body"]["temperature"] == 0
    sent = extraction["body"]["messages"][1]["content"]
    assert sent == '<<<CONVERSATION\n"user: My name is Bob"\n>>>CONVERSATION'
    assert (
        "<<<EXISTING_MEMORIES\n[]\n>>>EXISTING_MEMORIES"
        in decision["body"]["messages"][1]["content"]
    )


def test_dedup_returns_none(add, fake_openai, remember):
    existing = _seed(remember, "User likes Python")
    fake_openai.reply({"facts": ["User likes Python"]}, {"memory": [{"event": "NONE"}]})
    events = add("I like Python")
    assert [(e["event"], e["id"]) for e in events] == [("NONE", existing)]


def test_contradiction_updates_the_existing_memory_shown_under_a_short_id(
    add, fake_openai, remember, alice
):
    existing = _seed(remember, "User lives in NYC")
    fake_openai.reply(
        {"facts": ["User moved to San Francisco"]},
        {
            "memory": [
                {
                    "event": "UPDATE",
                    "id": "0",
                    "old_memory": "User lives in NYC",
                    "data": "User lives in San Francisco",
                }
            ]
        },
    )
    events = add("I moved to San Francisco")
    assert events == [
        {
            "id": existing,
            "event": "UPDATE",
            "memory": "User lives in San Francisco",
            "old_memory": "User lives in NYC",
            "new_memory": "User lives in San Francisco",
        }
    ]
    prompt = fake_openai.chat_requests()[1]["body"]["messages"][1]["content"]
    assert '[{"id": "0", "text": "User lives in NYC"}]' in prompt
    assert existing not in prompt
    history = alice.get(f"/api/v1/memories/{existing}/history/").json()
    assert [h["event"] for h in history] == ["ADD", "UPDATE"]


def test_refinement_returns_a_merged_update(add, fake_openai, remember):
    existing = _seed(remember, "User works in tech")
    merged = "User works in tech, at Google as a senior engineer"
    fake_openai.reply(
        {"facts": ["User works at Google as a senior engineer"]},
        {"memory": [{"event": "UPDATE", "id": "0", "data": merged}]},
    )
    events = add("I work at Google as a senior engineer")
    assert [(e["event"], e["id"], e["memory"]) for e in events] == [("UPDATE", existing, merged)]
    assert Memory.objects.get(pk=existing).version == 2


def test_a_model_delete_is_a_soft_delete_with_history_and_can_be_restored(
    add, fake_openai, remember, alice
):
    existing = _seed(remember, "User is vegetarian")
    fake_openai.reply(
        {"facts": ["User started eating meat again"]},
        {"memory": [{"event": "DELETE", "id": "0", "old_memory": "User is vegetarian"}]},
    )
    events = add("I started eating meat again")
    assert events == [
        {
            "id": existing,
            "event": "DELETE",
            "memory": "User is vegetarian",
            "old_memory": "User is vegetarian",
        }
    ]
    assert Memory.objects.get(pk=existing).deleted_at is not None
    history = alice.get(f"/api/v1/memories/{existing}/history/").json()
    assert [h["event"] for h in history] == ["ADD", "DELETE"]
    assert alice.post(f"/api/v1/memories/{existing}/restore/").status_code == 200
    assert Memory.objects.get(pk=existing).deleted_at is None


def test_a_model_delete_and_add_remove_the_old_memory_before_the_new_one_is_checked(
    add, fake_openai, remember
):
    existing = _seed(remember, "User works at Acme")
    fake_openai.reply(
        {"facts": ["User is self-employed"]},
        {
            "memory": [
                {"event": "DELETE", "id": "0", "old_memory": "User works at Acme"},
                {"event": "ADD", "data": "User is self-employed"},
            ]
        },
    )
    events = add("I am self-employed now")
    assert [(e["event"], e["memory"]) for e in events] == [
        ("DELETE", "User works at Acme"),
        ("ADD", "User is self-employed"),
    ]
    assert not ContradictionReview.objects.filter(memory_a_id=existing).exists()


def test_with_review_set_a_model_delete_goes_to_contradiction_review_and_deletes_nothing(
    add, fake_openai, remember, alice
):
    alice.project.settings = {"delete_decisions": "review"}
    alice.project.save()
    existing = _seed(remember, "User works at Acme")
    fake_openai.reply(
        {"facts": ["User is self-employed"]},
        {
            "memory": [
                {"event": "DELETE", "id": "0", "old_memory": "User works at Acme"},
                {"event": "ADD", "data": "User is self-employed"},
            ]
        },
    )
    events = add("I am self-employed now")
    assert [e["event"] for e in events] == ["ADD"]
    new_id = events[0]["id"]
    assert Memory.objects.get(pk=existing).deleted_at is None
    review = ContradictionReview.objects.get(memory_a_id=existing, memory_b_id=new_id)
    assert (review.status, review.detected_by, review.cues) == ("open", "llm", ["model_delete"])
    assert MemoryLink.objects.filter(
        from_memory_id=new_id, to_memory_id=existing, link_type=LinkType.CONTRADICTS
    ).exists()


def test_with_review_set_a_model_delete_alone_adds_the_fact_and_opens_a_review(
    add, fake_openai, remember, alice
):
    alice.project.settings = {"delete_decisions": "review"}
    alice.project.save()
    existing = _seed(remember, "User is vegetarian")
    fake_openai.reply(
        {"facts": ["User started eating meat again"]},
        {"memory": [{"event": "DELETE", "id": "0"}]},
    )
    events = add("I started eating meat again")
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "User started eating meat again")
    ]
    assert Memory.objects.get(pk=existing).deleted_at is None
    assert ContradictionReview.objects.filter(
        memory_a_id=existing, memory_b_id=events[0]["id"], status="open"
    ).exists()


def test_a_pinned_memory_is_never_deleted_by_a_decision_but_goes_to_review(
    add, fake_openai, remember
):
    existing = _seed(remember, "User works at Acme")
    Memory.objects.filter(pk=existing).update(pinned=True)
    fake_openai.reply(
        {"facts": ["User is self-employed"]}, {"memory": [{"event": "DELETE", "id": "0"}]}
    )
    events = add("I am self-employed now")
    assert [e["event"] for e in events] == ["ADD"]
    assert Memory.objects.get(pk=existing).deleted_at is None
    assert ContradictionReview.objects.filter(memory_a_id=existing, status="open").exists()


def test_one_conversation_can_produce_several_events(add, fake_openai, remember):
    existing = _seed(remember, "User lives in NYC")
    fake_openai.reply(
        {"facts": ["User lives in Boston", "User has a dog named Rex"]},
        {"memory": [{"event": "UPDATE", "id": "0", "data": "User lives in Boston"}]},
        {"memory": [{"event": "ADD", "data": "User has a dog named Rex"}]},
    )
    events = add(
        [
            {"role": "user", "content": "I now live in Boston with my dog Rex."},
            {"role": "assistant", "content": "Great!"},
        ]
    )
    assert [(e["event"], e["memory"]) for e in events] == [
        ("UPDATE", "User lives in Boston"),
        ("ADD", "User has a dog named Rex"),
    ]
    assert events[0]["id"] == existing


def test_llm_down_returns_empty_results_without_crashing(add, fake_openai):
    fake_openai.reply(500, 500, 500)
    assert add("My name is Bob") == []
    assert Memory.objects.count() == 0


def test_a_failed_decision_falls_back_to_the_offline_decision(add, fake_openai):
    fake_openai.reply({"facts": ["User's name is Bob"]}, 503, 503, 503)
    events = add("My name is Bob")
    assert [(e["event"], e["memory"]) for e in events] == [("ADD", "User's name is Bob")]


def test_a_custom_prompt_replaces_the_extraction_task_for_that_call(add, fake_openai):
    fake_openai.reply({"facts": ["Order 42 shipped"]}, {"memory": [{"event": "ADD"}]})
    add("Order 42 shipped today", prompt="Extract order events")
    system = fake_openai.chat_requests()[0]["body"]["messages"][0]["content"]
    assert system.startswith("Extract order events\n\n" + EXTRACTION_FORMAT)
    assert FACT_EXTRACTION_TASK not in system


def test_unknown_or_foreign_ids_from_the_model_are_ignored(add, fake_openai, remember, bob):
    _seed(remember, "User lives in NYC")
    foreign = bob.post("/api/v1/memories/", {"content": "Bob's secret", "user_id": "u1"}).json()
    fake_openai.reply(
        {"facts": ["User lives in Rome"]},
        {
            "memory": [
                {"event": "UPDATE", "id": "7", "data": "hijack"},
                {"event": "DELETE", "id": foreign["id"]},
            ]
        },
    )
    assert add("I live in Rome") == []
    assert Memory.objects.get(pk=foreign["id"]).deleted_at is None


def test_plain_arrays_and_fenced_json_answers_are_understood(add, fake_openai):
    fake_openai.reply("```json\n" + json.dumps(["User likes tea"]) + "\n```", [{"event": "ADD"}])
    events = add("I like tea")
    assert [(e["event"], e["memory"]) for e in events] == [("ADD", "User likes tea")]


def test_pii_is_masked_before_the_conversation_reaches_the_model(add, fake_openai):
    fake_openai.reply({"facts": []})
    add("My email is bob@example.com")
    sent = fake_openai.chat_requests()[0]["body"]["messages"][1]["content"]
    assert "bob@example.com" not in sent
    assert "[REDACTED_EMAIL]" in sent
