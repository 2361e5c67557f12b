"""mem0's filter syntax translated to the platform's filter language."""

from __future__ import annotations

import pytest

from compat.mem0.filters import (
    filters_from_query_string,
    scope_of,
    translate_filters,
)
from platformcore.lib.errors import InvalidInput


def test_plain_conditions_and_logic_pass_through() -> None:
    mem0 = {"AND": [{"user_id": "alice"}, {"created_at": {"gte": "2024-07-01"}}]}
    assert translate_filters(mem0) == mem0


def test_categories_keywords_and_app_id_are_renamed() -> None:
    assert translate_filters({"categories": {"in": ["food"]}}) == {"tags": {"in": ["food"]}}
    assert translate_filters({"keywords": "tea"}) == {"memory": {"icontains": "tea"}}
    assert translate_filters({"app_id": "web"}) == {"metadata.app_id": "web"}


def test_a_wildcard_means_the_field_is_set_and_on_categories_matches_everything() -> None:
    assert translate_filters({"run_id": "*"}) == {"run_id": {"ne": None}}
    assert translate_filters({"user_id": "a", "categories": "*"}) == {"user_id": "a"}
    assert translate_filters({"OR": [{"user_id": "a"}, {"categories": "*"}]}) is None


def test_not_with_a_list_is_the_and_of_its_items() -> None:
    translated = translate_filters({"NOT": [{"user_id": "a"}, {"agent_id": "b"}]})
    assert translated == {"NOT": {"AND": [{"user_id": "a"}, {"agent_id": "b"}]}}


def test_several_keys_become_one_condition_each_and_never_overwrite_each_other() -> None:
    translated = translate_filters({"categories": ["a"], "tags": ["b"]})
    assert translated == {"AND": [{"tags": ["a"]}, {"tags": ["b"]}]}


def test_a_malformed_filter_names_its_path() -> None:
    with pytest.raises(InvalidInput) as bad:
        translate_filters({"OR": {"user_id": "a"}})
    assert "filters.OR" in bad.value.fields


def test_the_scope_is_read_from_the_body_or_from_plain_equalities_in_the_filters() -> None:
    assert scope_of({"user_id": "a"}, {"agent_id": "b"}) == {"user_id": "a", "agent_id": "b"}
    assert scope_of({}, {"AND": [{"run_id": "r"}, {"user_id": {"in": ["x"]}}]}) == {"run_id": "r"}
    assert scope_of({}, {"user_id": "*"}) == {}


def test_a_query_string_filter_may_be_json_or_the_python_literal_mem0_clients_send() -> None:
    assert filters_from_query_string('{"user_id": "a"}') == {"user_id": "a"}
    assert filters_from_query_string("{'user_id': 'a'}") == {"user_id": "a"}
    with pytest.raises(InvalidInput):
        filters_from_query_string("__import__('os')")
