"""The mem0-style filter language: every operator, composition, both spellings, named errors."""

from __future__ import annotations

import pytest

from memories.models import Memory
from memories.selectors.filter_language import filter_expression_q
from platformcore.lib.errors import InvalidInput
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db
URL = "/api/v1/memories/"


@pytest.fixture
def shop(remember) -> dict[str, str]:
    rows = {
        "cheap": remember(
            "A cheap Python book", metadata={"price": 10, "shop": "north"}, tags=["book", "work"]
        ),
        "mid": remember(
            "A JavaScript course", metadata={"price": 50, "shop": "South"}, tags=["course"]
        ),
        "dear": remember(
            "An expensive rust laptop",
            metadata={"price": 1500, "specs": {"ram": 32}},
            tags=["work"],
            user_id="u2",
        ),
    }
    return {name: row["id"] for name, row in rows.items()}


def matching(tenant: Tenant, expression: dict) -> set[str]:
    import json

    response = tenant.get(URL, {"filters": json.dumps(expression), "limit": 100})
    assert response.status_code == 200, response.json()
    return {row["id"] for row in response.json()["results"]}


def names(shop: dict[str, str], ids: set[str]) -> set[str]:
    return {name for name, pk in shop.items() if pk in ids}


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ({"field": "user_id", "operator": "eq", "value": "u1"}, {"cheap", "mid"}),
        ({"field": "user_id", "operator": "ne", "value": "u1"}, {"dear"}),
        ({"field": "metadata.price", "operator": "gt", "value": 10}, {"mid", "dear"}),
        ({"field": "metadata.price", "operator": "gte", "value": 50}, {"mid", "dear"}),
        ({"field": "metadata.price", "operator": "lt", "value": 50}, {"cheap"}),
        ({"field": "metadata.price", "operator": "lte", "value": 50}, {"cheap", "mid"}),
        ({"field": "metadata.shop", "operator": "in", "value": ["north", "x"]}, {"cheap"}),
        ({"field": "metadata.shop", "operator": "nin", "value": ["north"]}, {"mid", "dear"}),
        ({"field": "memory", "operator": "contains", "value": "Python"}, {"cheap"}),
        ({"field": "memory", "operator": "contains", "value": "python"}, set()),
        ({"field": "memory", "operator": "icontains", "value": "python"}, {"cheap"}),
        ({"field": "metadata.shop", "operator": "contains", "value": "out"}, {"mid"}),
        ({"field": "metadata.shop", "operator": "icontains", "value": "SOUTH"}, {"mid"}),
        ({"field": "tags", "operator": "in", "value": ["course", "book"]}, {"cheap", "mid"}),
        ({"field": "tag", "operator": "nin", "value": ["work"]}, {"mid"}),
        ({"field": "tags", "operator": "contains", "value": "work"}, {"cheap", "dear"}),
        ({"field": "metadata.specs.ram", "operator": "eq", "value": 32}, {"dear"}),
        (
            {"field": "created_at", "operator": "gte", "value": "2000-01-01"},
            {"cheap", "mid", "dear"},
        ),
    ],
)
def test_each_operator_translates_to_sql(alice, shop, expression, expected) -> None:
    assert names(shop, matching(alice, expression)) == expected


def test_and_or_not_compose_like_the_seed_example(alice, shop) -> None:
    expression = {
        "AND": [
            {"field": "user_id", "operator": "eq", "value": "u1"},
            {
                "OR": [
                    {"field": "memory", "operator": "icontains", "value": "Python"},
                    {"field": "memory", "operator": "icontains", "value": "JavaScript"},
                ]
            },
            {"NOT": {"field": "metadata.price", "operator": "gt", "value": 20}},
        ]
    }
    assert names(shop, matching(alice, expression)) == {"cheap"}


def test_the_short_spelling_means_the_same(alice, shop) -> None:
    assert names(shop, matching(alice, {"metadata": {"price": {"gte": 50, "lt": 100}}})) == {"mid"}
    assert names(shop, matching(alice, {"metadata.specs": {"ram": 32}})) == {"dear"}
    assert names(shop, matching(alice, {"user_id": "u2"})) == {"dear"}
    assert names(shop, matching(alice, {"OR": [{"user_id": "u2"}, {"tags": "course"}]})) == {
        "mid",
        "dear",
    }


def test_list_combines_the_expression_with_the_other_filters(alice, shop) -> None:
    import json

    response = alice.get(URL, {"filters": json.dumps({"tags": "work"}), "user_id": "u1"})
    assert [row["id"] for row in response.json()["results"]] == [shop["cheap"]]


def test_the_expression_cannot_reach_another_project(charlie, shop) -> None:
    assert matching(charlie, {"field": "user_id", "operator": "ne", "value": "nobody"}) == set()


@pytest.mark.parametrize(
    ("expression", "path"),
    [
        (
            {"AND": [{"user_id": "u1"}, {"metadata": {"price": {"gt": [1]}}}]},
            "filters.AND[1].metadata.price.gt",
        ),
        ({"field": "colour", "operator": "eq", "value": "red"}, "filters.field"),
        ({"field": "user_id", "operator": "like", "value": "u"}, "filters.operator"),
        ({"field": "confidence", "operator": "contains", "value": "x"}, "filters.operator"),
        ({"field": "confidence", "operator": "gt", "value": "high"}, "filters.value"),
        ({"field": "created_at", "operator": "gt", "value": "last week"}, "filters.value"),
        ({"field": "user_id", "operator": "in", "value": []}, "filters.value"),
        ({"field": "user_id", "operator": "eq"}, "filters.value"),
        ({"OR": []}, "filters.OR"),
        ({"NOT": {"OR": [{"pinned": "yes"}]}}, "filters.NOT.OR[0].pinned"),
        ({"metadata.a__b": 1}, "filters.metadata.a__b"),
        ({}, "filters"),
    ],
)
def test_a_bad_node_is_a_400_naming_its_path(alice, expression, path) -> None:
    with pytest.raises(InvalidInput) as raised:
        filter_expression_q(expression)
    assert list(raised.value.fields) == [path]
    import json

    response = alice.get(URL, {"filters": json.dumps(expression)})
    assert response.status_code == 400
    assert list(response.json()["error"]["fields"]) == [path]


def test_malformed_json_is_a_400_on_the_filters_parameter(alice) -> None:
    response = alice.get(URL, {"filters": "{not json"})
    assert response.status_code == 400
    assert "filters" in response.json()["error"]["fields"]


def test_translation_never_filters_in_python() -> None:
    q = filter_expression_q({"AND": [{"user_id": "u1"}, {"metadata.price": {"gt": 5}}]})
    sql = str(Memory.objects.filter(q).query)
    assert '"user_id" = u1' in sql and "price" in sql


@pytest.mark.parametrize("lookup", ["regex", "iregex", "isnull", "has_key", "contains", "gt"])
def test_a_metadata_key_named_like_a_lookup_is_only_a_key(alice, remember, lookup):
    # metadata.x.<lookup> once became that Django lookup on metadata.x, bypassing the operator
    # whitelist (a caller's own regex run by PostgreSQL); it is the key <lookup> under x
    keyed = remember("keyed", metadata={"x": {lookup: "a+"}})
    remember("plain", metadata={"x": "aaaa"})
    response = alice.post(
        "/api/v1/memories/search/",
        {"query": "keyed plain", "mode": "keyword", "filters": {f"metadata.x.{lookup}": "a+"}},
    )
    assert response.status_code == 200, response.json()
    assert [hit["id"] for hit in response.json()["results"]] == [keyed["id"]]
