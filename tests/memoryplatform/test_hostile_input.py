"""Hostile input gets a 4xx JSON answer, never a 5xx: deep nesting (refused before anything
walks it, one limit for every JSON body, query parameter and MCP call), NUL characters,
numbers no column holds, huge page numbers, over-large bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest

from platformcore.lib import json_input
from tests.conftest import Tenant

DEEP = "[" * 1000 + "]" * 1000
DEEP_OBJECT = '{"a": ' * 1000 + "1" + "}" * 1000


def _deep_filters() -> str:
    return '{"AND": [' * 500 + '{"user_id": "u1"}' + "]}" * 500


def _post_raw(tenant: Tenant, path: str, body: str) -> Any:
    return tenant.client.post(path, body, content_type="application/json")


def _assert_json_4xx(response: Any, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json")
    return response.json()


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/memories/", '{"content": "x", "user_id": "u1", "metadata": ' + DEEP_OBJECT + "}"),
        ("/api/v1/memories/search/", '{"query": "x", "filters": ' + _deep_filters() + "}"),
        ("/v3/memories/search/", '{"query": "x", "filters": ' + _deep_filters() + "}"),
        ("/v3/memories/", '{"filters": ' + DEEP + "}"),
        ("/api/v1/graph/bulk/", '{"entities": ' + DEEP + "}"),
    ],
    ids=["memory-metadata", "search-filters", "mem0-search-filters", "mem0-list", "graph-bulk"],
)
def test_a_body_nested_a_thousand_deep_is_a_400_before_anything_walks_it(
    alice: Tenant, path: str, body: str
) -> None:
    error = _assert_json_4xx(_post_raw(alice, path, body))["error"]
    assert "nested more than 32 levels" in error["message"]


def test_oauth_registration_refuses_a_deep_body_in_its_own_error_shape(
    db: None, client: Any
) -> None:
    response = client.post("/oauth/register", DEEP, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_client_metadata"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/memories/"),
        ("get", "/api/v1/memories/search/?q=x"),
        ("delete", "/v1/memories/"),
    ],
)
def test_a_filters_query_parameter_nested_too_deep_is_a_400(
    alice: Tenant, method: str, path: str
) -> None:
    separator = "&" if "?" in path else "?"
    response = getattr(alice.client, method)(f"{path}{separator}filters={_deep_filters()}")
    _assert_json_4xx(response)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/tags/a%00b/"),
        ("delete", "/v2/entities/user/a%00b/"),
        ("get", "/api/v1/memories/?user_id=a%00b"),
        ("get", "/api/v1/entities/?q=a%00b"),
    ],
)
def test_a_nul_character_in_a_path_or_query_is_a_400(alice: Tenant, method: str, path: str) -> None:
    error = _assert_json_4xx(getattr(alice.client, method)(path))["error"]
    assert "NUL" in json.dumps(error)  # a query parameter's error names it


@pytest.mark.parametrize(
    "body",
    [
        '{"content": "x", "user_id": "u1", "metadata": {"a": "b\\u0000c"}}',
        '{"content": "x", "user_id": "u1", "metadata": {"a\\u0000": 1}}',
        '{"content": "x", "user_id": "u1", "metadata": {"n": 1e309}}',
        '{"content": "x", "user_id": "u1", "metadata": {"n": NaN}}',
        '{"content": "x", "user_id": "u1", "metadata": {"n": 100000000000000000000000000000}}',
    ],
)
def test_nul_and_numbers_no_column_holds_are_a_400_on_a_write(alice: Tenant, body: str) -> None:
    _assert_json_4xx(_post_raw(alice, "/api/v1/memories/", body))


@pytest.mark.parametrize(
    "filters",
    [
        '{"metadata.score": {"gt": 1e309}}',
        '{"metadata.score": {"gte": -1e400}}',
        '{"version": {"gt": 1000000000000000000000000000000}}',
        '{"version": {"gt": 9223372036854775807}}',
    ],
)
def test_filter_values_out_of_range_are_a_400(alice: Tenant, filters: str) -> None:
    body = '{"query": "x", "mode": "keyword", "filters": ' + filters + "}"
    response = _post_raw(alice, "/api/v1/memories/search/", body)
    assert response.status_code in (200, 400), response.content  # never a 5xx
    mem0 = _post_raw(alice, "/v3/memories/search/", '{"query": "x", "filters": ' + filters + "}")
    assert mem0.status_code in (200, 400), mem0.content


def test_a_page_number_past_any_offset_is_a_400(alice: Tenant) -> None:
    response = _post_raw(
        alice, "/v3/memories/?page=99999999999999999999", '{"filters": {"user_id": "u"}}'
    )
    error = _assert_json_4xx(response)["error"]
    assert "page" in error["fields"]
    listed = alice.get("/v1/entities/?page=99999999999999999999")
    assert listed.status_code == 400, listed.content


def test_a_body_over_djangos_form_limit_gets_the_json_error_naming_its_field(
    alice: Tenant,
) -> None:
    body = json.dumps({"content": "x" * 2_600_000, "user_id": "u1"})
    error = _assert_json_4xx(_post_raw(alice, "/api/v1/memories/", body))["error"]
    assert "content" in error["fields"]


def test_the_depth_check_costs_little_on_a_body_of_brackets() -> None:
    assert json_input.too_deep("[" * 33 + "]" * 33)
    assert not json_input.too_deep("[" * 32 + "]" * 32)
    assert not json_input.too_deep('["[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]')  # in a string
    assert not json_input.too_deep("[]" * 1_000_000)
    assert json_input.loads('{"a": "\\\\u0000"}') == {"a": "\\u0000"}  # an escaped backslash
    with pytest.raises(json_input.JsonInputError):
        json_input.loads('{"a": "\\u0000"}')


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


@pytest.mark.anyio
@pytest.mark.django_db(transaction=True)
async def test_an_mcp_tool_call_is_held_to_the_same_depth_and_nul_rules(alice: Tenant) -> None:
    from tests.mcpserver.conftest import in_process

    async with in_process(alice) as client:
        deep = await client.call_tool(
            "memory_store", {"content": "x", "user_id": "u1", "metadata": _nested(40)}
        )
        nul = await client.call_tool("memory_store", {"content": "a\x00b", "user_id": "u1"})
        fine = await client.call_tool(
            "memory_store", {"content": "x", "user_id": "u1", "metadata": _nested(20)}
        )
    assert deep.is_error and "nested more than 32 levels" in deep.content[0].text
    assert nul.is_error and "NUL" in nul.content[0].text
    assert not fine.is_error


def test_djangos_own_400s_answer_the_json_error_shape(alice: Tenant, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 3
    response = alice.client.post(
        "/api/v1/documents/", {f"f{i}": "x" for i in range(10)}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] in ("bad_request", "invalid")
