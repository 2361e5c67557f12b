"""POST /memories/add/ without an LLM: facts about other people, their entities and
relations, and changes of state that update what they replace."""

from __future__ import annotations

from entities.models import Entity, Relation
from memories.models import Memory


def open_relations(project) -> set[tuple[str, str, str]]:
    rows = Relation.objects.filter(project=project).open().select_related("source", "target")
    return {(r.source.name, r.relation_type, r.target.name) for r in rows}


def entity_types(project) -> dict[str, str]:
    return dict(Entity.objects.filter(project=project).values_list("name", "entity_type"))


def test_third_person_statements_are_stored_with_typed_entities_and_relations(add, alice):
    events = add("Alice works at Google. Alice uses Kubernetes.")
    assert [(e["event"], e["memory"]) for e in events] == [
        ("ADD", "Alice works at Google"),
        ("ADD", "Alice uses Kubernetes"),
    ]
    types = entity_types(alice.project)
    assert types == {"Alice": "person", "Google": "organization", "Kubernetes": "technology"}
    assert open_relations(alice.project) == {
        ("Alice", "works_at", "Google"),
        ("Alice", "uses", "Kubernetes"),
    }


def test_she_and_he_refer_to_the_person_named_before(add):
    events = add("Ben lives in Austin. He works at Dell and manages the Storage team.")
    assert [e["memory"] for e in events] == [
        "Ben lives in Austin",
        "Ben works at Dell and manages the Storage team",
    ]


def test_the_users_own_job_is_a_works_at_relation_of_their_user_entity(add, alice):
    (event,) = add("I now work for Siemens as a data engineer")
    assert event["memory"] == "User works for Siemens as a data engineer"
    assert open_relations(alice.project) == {("u1", "works_at", "Siemens")}
    assert entity_types(alice.project) == {"u1": "person", "Siemens": "organization"}


def test_two_users_of_a_project_are_two_people_in_its_graph(add, alice):
    add("I live in Paris", user_id="u1")
    add("I live in Rome", user_id="u2")
    assert open_relations(alice.project) == {
        ("u1", "located_in", "Paris"),
        ("u2", "located_in", "Rome"),
    }


def test_a_move_updates_the_old_memory_and_moves_the_relation(add, alice):
    (first,) = add("I live in Paris.")
    (second,) = add("Actually I moved, I live in Berlin now.")
    assert second["event"] == "UPDATE"
    assert second["id"] == first["id"]
    assert second["memory"] == "User lives in Berlin"
    assert second["old_memory"] == "User lives in Paris"
    live = Memory.objects.filter(project=alice.project, deleted_at__isnull=True)
    assert list(live.values_list("content", flat=True)) == ["User lives in Berlin"]
    assert open_relations(alice.project) == {("u1", "located_in", "Berlin")}
    ended = Relation.objects.get(project=alice.project, target__name="Paris")
    assert ended.valid_to is not None and ended.invalidated_at is not None


def test_a_new_employer_of_someone_else_updates_their_memory_and_relation(add, alice):
    add("Bob works at Google.")
    (event,) = add("Bob works at Meta now.")
    assert (event["event"], event["memory"]) == ("UPDATE", "Bob works at Meta")
    assert open_relations(alice.project) == {("Bob", "works_at", "Meta")}


def test_no_longer_works_at_ends_the_relation(add, alice):
    add("Dave works at Amazon.")
    add("Dave no longer works at Amazon.")
    assert open_relations(alice.project) == set()
    ended = Relation.objects.get(project=alice.project, relation_type="works_at")
    assert ended.valid_to is not None


def test_different_people_in_the_same_city_do_not_update_each_other(add, alice):
    add("Laura lives in Madrid.")
    (event,) = add("Carlos lives in Madrid.")
    assert event["event"] == "ADD"
    assert open_relations(alice.project) == {
        ("Laura", "located_in", "Madrid"),
        ("Carlos", "located_in", "Madrid"),
    }


def test_plain_sentences_without_a_named_subject_are_still_not_stored(add):
    assert add("Deploy failed on staging again. The weather is lovely today.") == []
