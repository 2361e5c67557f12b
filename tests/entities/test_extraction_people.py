"""Offline graph extraction of statements about people: types, ended relations, the user."""

from __future__ import annotations

from entities.models import Entity, Relation
from entities.services.graph_extraction import extract_offline
from tests.fakes.openai_server import tool_calls


def relations_of(text: str, **kwargs) -> set[tuple[str, str, str, bool]]:
    extraction = extract_offline(text, **kwargs)
    return {(r.source, r.relation_type, r.target, r.retracted) for r in extraction.relations}


def types_of(text: str) -> dict[str, str]:
    return {e.name: e.entity_type for e in extract_offline(text).entities}


def test_names_are_typed_by_gazetteer_then_by_their_role_in_the_sentence():
    assert types_of("Quorra works at Zentrix and lives in Oxbridge") == {
        "Quorra": "person",
        "Zentrix": "organization",
        "Oxbridge": "location",
    }
    assert types_of("Yuki is a designer at Figma") == {"Yuki": "person", "Figma": "organization"}
    assert types_of("Lisa leads the Search project") == {
        "Lisa": "person",
        "Search project": "project",
    }


def test_the_user_is_the_self_name_given_and_a_person():
    extraction = extract_offline("User works for Siemens as a data engineer", self_name="u7")
    assert {(e.name, e.entity_type) for e in extraction.entities} == {
        ("u7", "person"),
        ("Siemens", "organization"),
    }
    assert relations_of("User lives in Berlin", self_name="u7") == {
        ("u7", "located_in", "Berlin", False)
    }


def test_ended_relations_are_marked_retracted():
    assert relations_of("Dave no longer works at Amazon") == {("Dave", "works_at", "Amazon", True)}
    assert relations_of("Clara moved from Rome to Milan") == {
        ("Clara", "located_in", "Rome", True),
        ("Clara", "located_in", "Milan", False),
    }


def test_adjectives_and_pieces_of_longer_names_are_not_entities():
    assert types_of("Sara loves Italian food") == {"Sara": "person"}
    assert set(types_of("Felix is the CTO of Acme Corp")) == {"Felix", "Acme Corp"}


def test_the_llm_paths_user_is_the_memorys_user_too(alice, remember, fake_openai, settings):
    settings.MEMORY_GRAPH_EXTRACTION = "sync"
    fake_openai.reply(
        tool_calls(
            [
                ("extract_entities", {"entities": [{"name": "Siemens", "type": "organization"}]}),
                (
                    "extract_relations",
                    {
                        "relations": [
                            {"source": "User", "relation": "works_at", "target": "Siemens"}
                        ]
                    },
                ),
            ]
        )
    )
    remember("User works at Siemens", user_id="u9")
    relation = Relation.objects.select_related("source").get(project=alice.project)
    assert (relation.source.name, relation.relation_type) == ("u9", "works_at")
    assert Entity.objects.get(project=alice.project, name="u9").entity_type == "person"
