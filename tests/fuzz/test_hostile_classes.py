"""Hostile input classes over every route's body and query parameters: no 5xx, ever.

Every operation the OpenAPI schema documents (and mem0's paths, which it does not), each of
its JSON body fields and query parameters, and the body as a whole, get values of the classes
that reached a 500 before (docs/security.md, "Hostile input"): JSON nested 1,000 deep, a NUL
character, numbers no column holds (1e309, -1e400, 10^30), page numbers past any offset, and
an over-large value. Drawn by hypothesis from the full list, derandomized and bounded
(MAX_EXAMPLES requests), as an admin key on seeded objects.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Tenant, make_tenant
from tests.fuzz.test_api_schema import _existing, _seed

MAX_EXAMPLES = 250
DEEP = "[" * 1000 + "]" * 1000
# raw JSON text (the values Python's encoder would not write) and the query-string form
CLASSES: dict[str, tuple[str, str]] = {
    "deep": (DEEP, DEEP),
    "deep-object": ('{"a":' * 1000 + "1" + "}" * 1000, '{"a":' * 200 + "1" + "}" * 200),
    "nul": ('"a\\u0000b"', "a\x00b"),
    "infinity": ("1e309", "1e309"),
    "minus-infinity": ("-1e400", "-1e400"),
    "huge-integer": ("1" + "0" * 30, "1" + "0" * 30),
    "huge-page": ("99999999999999999999", "99999999999999999999"),
    "oversize": ('"' + "x" * 2_600_000 + '"', "x" * 20_000),
}
MEM0 = [  # mem0's paths (not in the schema): (method, path, body fields, query parameters)
    ("post", "/v3/memories/add/", ["messages", "user_id", "metadata", "timestamp"], []),
    ("post", "/v3/memories/search/", ["query", "filters", "top_k", "threshold"], []),
    ("post", "/v3/memories/", ["filters"], ["page", "page_size"]),
    ("delete", "/v1/memories/", [], ["user_id", "filters"]),
    ("put", "/v1/memories/{memory}/", ["text", "metadata"], []),
    ("get", "/v1/entities/", [], ["page", "page_size"]),
    ("delete", "/v2/entities/user/{name}/", [], []),
    ("put", "/v1/batch/", ["memories"], []),
    ("post", "/v1/feedback/", ["memory_id", "feedback"], []),
    ("post", "/v1/exports/", ["filters", "schema"], []),
    ("post", "/v1/memories/", ["messages", "user_id", "metadata", "infer"], []),  # open source
    ("get", "/v1/memories/search/", [], ["q", "user_id", "filters", "limit"]),
    ("post", "/memories", ["messages", "user_id", "metadata"], []),  # mem0's own server
    ("post", "/search", ["query", "user_id", "filters"], []),
]


def _schema_operations() -> list[tuple[str, str, list[str], list[str]]]:
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method not in ("get", "post", "put", "patch", "delete") or path == "/api/v1/reset/":
                continue
            body = (operation.get("requestBody") or {}).get("content", {})
            ref = body.get("application/json", {}).get("schema", {}).get("$ref", "")
            fields = list(components.get(ref.rsplit("/", 1)[-1], {}).get("properties", {}))
            query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            found.append((method, path, fields, query))
    return found


def _cases() -> list[tuple[str, str, str, str | None, str]]:
    cases = []
    for method, path, fields, query in _schema_operations() + MEM0:
        targets = [("body", None)] if method in ("post", "put", "patch") else []
        targets += [("body", name) for name in fields] + [("query", name) for name in query]
        targets = targets or [("path", None)]
        cases += [(method, path, where, name, cls) for where, name in targets for cls in CLASSES]
    return cases


CASES = _cases()


def _path(path: str, seeded: dict[str, str], nul: bool) -> str:
    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if nul:
            return "a%00b"
        return _existing(path, name, seeded) or seeded.get(name, "x")

    return re.sub(r"\{(\w+)\}", fill, path)


def _send(tenant: Tenant, seeded: dict[str, str], case: tuple) -> Any:
    method, path, where, name, cls = case
    raw, in_query = CLASSES[cls]
    url = _path(path, seeded, nul=where == "path" and cls == "nul")
    if where == "query":
        url += ("&" if "?" in url else "?") + f"{name}={quote(in_query, safe='')}"
    body = None
    if where == "body":
        body = raw if name is None else '{"user_id": "u1", "' + name + '": ' + raw + "}"
    call = getattr(tenant.client, method)
    if body is None:
        return call(url)
    return call(url, body, content_type="application/json")


@pytest.fixture
def _tenant(transactional_db: None) -> Any:
    """One tenant with seeded objects for the whole run (hypothesis calls the test many
    times within one use of its fixtures)."""
    tenant = make_tenant("hostile")
    seeded = _seed(tenant)
    return tenant, {**seeded, "name": "alice"}


def test_every_route_and_input_class_is_covered() -> None:
    routes = {(method, path) for method, path, *_ in CASES}
    assert len(routes) > 90 and {cls for *_, cls in CASES} == set(CLASSES)


@pytest.mark.slow
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(case=st.sampled_from(CASES))
def test_hostile_input_never_gets_a_5xx(case: tuple, _tenant: Any) -> None:
    tenant, seeded = _tenant
    response = _send(tenant, seeded, case)
    assert response.status_code < 500, (case[:4], response.status_code, response.content[:300])
    if response.status_code >= 400 and response.get("Content-Type", "").startswith("application"):
        json.loads(response.content)  # the JSON error shape, not an HTML page
