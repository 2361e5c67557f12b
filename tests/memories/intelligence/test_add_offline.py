"""POST /memories/add/ without an LLM: the deterministic extractor and offline decisions."""

from __future__ import annotations

from memories.models import LinkType, Memory, MemoryLink


def test_add_single_fact_returns_one_add_event_in_the_third_person(add):
    events = add("My name is Bob")
    assert [(e["event"], e["memory"]) for e in events] == [("ADD", "User's name is Bob")]


def test_add_conversation_extracts_several_facts_from_user_messages_only(add):
    events = add(
        [
            {"role": "user", "content": "Hi! I live in Berlin and I love hiking."},
            {"role": "assistant", "content": "Berlin is lovely. I am an assistant."},
            {"role": "user", "content": "What should I pack? I work at Acme as a designer."},
        ]
    )
    assert [e["event"] for e in events] == ["ADD", "ADD", "ADD"]
    assert [e["memory"] for e in events] == [
        "User lives in Berlin",
        "User loves hiking",
        "User works at Acme as a designer",
    ]


def test_a_fact_keeps_the_message_it_replied_to_and_is_found_by_its_words(add, alice):
    events = add(
        [
            {"role": "assistant", "content": "Did you visit the Louvre on your trip?"},
            {"role": "user", "content": "Yes! I went there twice."},
            {"role": "user", "content": "I bought a   print of the Mona Lisa. " + "x" * 400},
        ]
    )
    first, second = (Memory.objects.get(pk=event["id"]) for event in events[:2])
    assert first.content == "User went there twice"
    assert first.context == "assistant: Did you visit the Louvre on your trip?"
    assert second.context == "user: Yes! I went there twice."  # the message before its own
    hits = alice.post(
        "/api/v1/memories/search/", {"query": "louvre", "mode": "keyword", "user_id": "u1"}
    ).json()["results"]
    assert [hit["content"] for hit in hits] == ["User went there twice"]


def test_an_opening_message_has_no_context_and_a_long_one_is_cut(add):
    (event,) = add("I live in Lisbon")
    assert Memory.objects.get(pk=event["id"]).context == ""
    (event,) = add(
        [
            {"role": "assistant", "content": "Hello " * 200},
            {"role": "user", "content": "I like tea"},
        ]
    )
    context = Memory.objects.get(pk=event["id"]).context
    assert context.startswith("assistant: Hello Hello") and context.endswith("…")
    assert len(context) == len("assistant: ") + 300


def test_irregular_past_tenses_stay_as_they_are(add):
    events = add("I went to Lisbon in May. I bought a bike and I met Ana.")
    assert [e["memory"] for e in events] == [
        "User went to Lisbon in May",
        "User bought a bike",
        "User met Ana",
    ]


def test_add_with_chit_chat_only_returns_no_events(add):
    assert add("hello") == []
    assert add("Thanks! How are you?") == []


def test_adding_the_same_fact_twice_returns_none(add):
    first = add("I like Python")
    second = add("I like Python.")
    assert second == [{"id": first[0]["id"], "event": "NONE", "memory": "User likes Python"}]
    assert Memory.objects.filter(content="User likes Python").count() == 1


def test_a_changed_value_of_the_same_subject_updates_the_memory_with_a_trail(add, alice):
    first = add("I live in NYC")
    second = add("I moved to San Francisco")
    assert second[0]["event"] == "UPDATE"
    assert second[0]["id"] == first[0]["id"]
    assert second[0]["old_memory"] == "User lives in NYC"
    assert second[0]["memory"] == "User moved to San Francisco"
    history = alice.get(f"/api/v1/memories/{first[0]['id']}/history/").json()
    assert [(h["event"], h["old_content"]) for h in history] == [
        ("ADD", None),
        ("UPDATE", "User lives in NYC"),
    ]


def test_an_explicit_end_of_a_stored_state_deletes_it_restorably(add, alice):
    first = add("I am vegetarian")
    second = add("I started eating meat again")
    assert [(e["event"], e["memory"]) for e in second] == [
        ("DELETE", "User is vegetarian"),
        ("ADD", "User started eating meat again"),
    ]
    assert second[0]["id"] == first[0]["id"]
    assert alice.get("/api/v1/contradictions/").json()["results"] == []
    history = alice.get(f"/api/v1/memories/{first[0]['id']}/history/").json()
    assert [h["event"] for h in history] == ["ADD", "DELETE"]
    assert alice.post(f"/api/v1/memories/{first[0]['id']}/restore/").status_code == 200
    third = add("I no longer live in Berlin") if add("I live in Berlin") else None
    assert [e["event"] for e in third] == ["DELETE", "ADD"]


def test_a_weaker_negation_is_added_and_flagged_as_a_contradiction_not_deleted(add, alice):
    first = add("I like Python")
    second = add("I don't like Python")
    assert [e["event"] for e in second] == ["ADD"]
    assert Memory.objects.get(pk=first[0]["id"]).deleted_at is None
    reviews = alice.get("/api/v1/contradictions/").json()["results"]
    assert [r["memory_a"]["id"] for r in reviews] == [first[0]["id"]]


def test_with_review_set_an_ended_state_is_added_and_flagged_not_deleted(add, alice):
    alice.project.settings = {"delete_decisions": "review"}
    alice.project.save()
    first = add("I am vegetarian")
    second = add("I started eating meat again")
    assert [e["event"] for e in second] == ["ADD"]
    assert Memory.objects.get(pk=first[0]["id"]).deleted_at is None
    assert MemoryLink.objects.filter(
        from_memory_id=second[0]["id"], to_memory_id=first[0]["id"], link_type=LinkType.CONTRADICTS
    ).exists()
    reviews = alice.get("/api/v1/contradictions/").json()["results"]
    assert len(reviews) == 1
    assert reviews[0]["memory_a"]["id"] == first[0]["id"]
    assert "antonym:vegetarian/meat" in reviews[0]["cues"]


def test_add_infers_types_and_importance_and_attaches_metadata(add):
    events = add("I prefer dark mode", metadata={"channel": "chat"})
    memory = Memory.objects.get(pk=events[0]["id"])
    assert memory.memory_type == "preference"
    assert memory.importance == 0.95
    assert memory.metadata == {"channel": "chat"}
    assert memory.source == "add"


def test_infer_false_stores_the_text_as_one_memory_as_is(add):
    events = add("Meeting notes: ship v2 on Friday.", infer=False)
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "Meeting notes: ship v2 on Friday.")
    ]


def test_add_requires_a_scope(alice):
    response = alice.post("/api/v1/memories/add/", {"messages": "My name is Bob"})
    assert response.status_code == 400
    assert set(response.json()["error"]["fields"]) >= {"user_id"}


def test_add_rejects_malformed_messages_naming_the_field(alice):
    response = alice.post(
        "/api/v1/memories/add/", {"messages": [{"role": "robot", "content": 1}], "user_id": "u"}
    )
    assert response.status_code == 400
    assert "messages" in response.json()["error"]["fields"]


def test_add_never_touches_another_projects_memories(add, alice, bob):
    add("I live in NYC")
    response = bob.post(
        "/api/v1/memories/add/", {"messages": "I moved to San Francisco", "user_id": "u1"}
    )
    assert [e["event"] for e in response.json()["results"]] == ["ADD"]
    assert Memory.objects.get(project=alice.project).content == "User lives in NYC"


def test_scopes_are_isolated_within_a_project(add):
    add("I live in NYC", user_id="alice")
    events = add("I moved to San Francisco", user_id="bob")
    assert [e["event"] for e in events] == ["ADD"]


def test_add_needs_the_write_scope(alice):
    from tests.conftest import make_tenant

    reader = make_tenant("alice", scopes=["read"])
    response = reader.post("/api/v1/memories/add/", {"messages": "I like tea", "user_id": "u"})
    assert response.status_code == 403
