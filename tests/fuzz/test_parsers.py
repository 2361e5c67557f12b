"""Property tests (hypothesis) of the two parsers that take free-form JSON from clients.

- The filter language (memories/selectors/filter_language.py): any JSON value either
  translates to a query that PostgreSQL runs, or is refused with InvalidInput naming a path
  under `filters`; never another exception. Expressions generated from the grammar translate.
- The messages of `add` (memories/services/fact_extraction/messages.py): any JSON value is
  either a conversation or InvalidInput naming `messages`; strings and {role, content} lists
  parse to the same text, in order. Through the API, a `messages` of any shape (a string, a
  single {role, content} object, a list) is a 200 or a 400 naming the field, never a 5xx.

Text that PostgreSQL cannot store (a NUL character, an unpaired surrogate: both valid JSON)
is generated on purpose: it must be a 400, not a database error.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memories.models import Memory
from memories.selectors.filter_language import (
    _ALLOWED,
    _FIELDS,
    LOGICAL,
    MAX_CONDITIONS,
    OPERATORS,
    filter_expression_q,
)
from memories.services.fact_extraction.messages import (
    MAX_MESSAGES,
    ROLES,
    conversation_text,
    parse_messages,
)
from platformcore.lib.errors import InvalidInput
from tests.conftest import Tenant

pytestmark = pytest.mark.django_db

# a function-scoped `db` (each example shares the test's transaction), no deadline on a busy
# machine, a fixed seed: the same examples on every run
PROPERTY = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- arbitrary JSON, and JSON made of the language's own words (to get past the first check)

TEXT = st.text(max_size=12)  # NUL included
STORABLE_TEXT = st.text(
    st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=12
)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
    | st.sampled_from(["\ud800", "a\udfff"])  # unpaired surrogates: valid JSON, not UTF-8
)
NEAR_MISSES = ["and", "not", "metadata", "metadata.", "metadata.__x", "metadata.a b"]
WORDS = st.sampled_from(
    [*_FIELDS, *OPERATORS, *LOGICAL, *NEAR_MISSES, "field", "operator", "value", "metadata.a.b"]
)
DATES = st.sampled_from(
    ["2024-01-31", "2024-02-30", "2024-13-01T00:00:00", "2024-01-01T25:00:00", "yesterday"]
)
ANY_JSON = st.recursive(
    JSON_SCALARS | WORDS | DATES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(WORDS | TEXT, children, max_size=4)
    ),
    max_leaves=25,
)

# -- valid expressions, generated from the grammar

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "text": STORABLE_TEXT,
    "number": st.integers(min_value=-(10**6), max_value=10**6)
    | st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    "datetime": st.datetimes().map(lambda d: d.isoformat()) | st.dates().map(str),
    "bool": st.booleans(),
    "uuid": st.uuids().map(str),
    "array": STORABLE_TEXT,
    "json": st.none() | st.booleans() | st.integers(-(10**6), 10**6) | STORABLE_TEXT,
    "entity": STORABLE_TEXT.filter(str.strip),
    "entity_id": st.integers(min_value=1, max_value=2**63 - 1),
}
ORDERED_JSON = st.integers(-(10**6), 10**6) | STORABLE_TEXT


@st.composite
def conditions(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(st.sampled_from([*_FIELDS, "metadata.price", "metadata.specs.ram"]))
    kind = _FIELDS[field][1] if field in _FIELDS else "json"
    operator = draw(st.sampled_from(_ALLOWED[kind]))
    if operator in ("in", "nin"):
        value: Any = draw(st.lists(VALUES[kind], min_size=1, max_size=3))
    elif operator in ("contains", "icontains") and kind != "array":
        value = draw(STORABLE_TEXT)
    elif operator in ("gt", "gte", "lt", "lte") and kind == "json":
        value = draw(ORDERED_JSON)
    else:
        value = draw(VALUES[kind])
    spelling = draw(st.sampled_from(["portable", "short", "eq"]))
    if spelling == "portable":
        return {"field": field, "operator": operator, "value": value}
    if spelling == "eq" and operator == "eq":
        return {field: value}
    return {field: {operator: value}}


EXPRESSIONS = st.recursive(
    conditions(),
    lambda children: (
        st.lists(children, min_size=1, max_size=3).map(lambda items: {"AND": items})
        | st.lists(children, min_size=1, max_size=3).map(lambda items: {"OR": items})
        | children.map(lambda item: {"NOT": item})
    ),
    max_leaves=12,
)


def _runs(q: Any) -> None:
    """The translated filter compiles and runs in PostgreSQL."""
    list(Memory.objects.filter(q).values_list("pk", flat=True)[:1])


@PROPERTY
@given(expression=ANY_JSON)
@example(expression={"created_at": {"gt": "2024-02-30"}})  # well-formed, impossible: was a 500
@example(expression={"user_id": "a\x00b"})  # NUL in a text parameter: was a 500
@example(expression={"metadata.a": {"in": ["\ud800"]}})  # unpaired surrogate: was a 500
def test_any_json_filter_translates_or_is_an_invalid_input_naming_its_path(
    expression: Any, alice: Tenant
) -> None:
    try:
        q = filter_expression_q(expression, project=alice.project)
    except InvalidInput as error:
        assert error.fields and all(path.startswith("filters") for path in error.fields)
        return
    _runs(q)


@PROPERTY
@given(expression=EXPRESSIONS)
def test_expressions_of_the_grammar_translate_and_run(expression: Any, alice: Tenant) -> None:
    try:
        q = filter_expression_q(expression, project=alice.project)
    except InvalidInput as error:  # only ever the size limit
        assert str(MAX_CONDITIONS) in error.message, (expression, error.message)
        return
    _runs(q)


@settings(PROPERTY, max_examples=40)
@given(expression=ANY_JSON | EXPRESSIONS)
def test_any_filter_on_the_api_is_a_200_or_a_400_naming_filters(
    expression: Any, alice: Tenant
) -> None:
    response = alice.get("/api/v1/memories/", {"filters": json.dumps(expression)})
    assert response.status_code in (200, 400), (expression, response.content)
    if response.status_code == 400:
        assert any(name.startswith("filters") for name in response.json()["error"]["fields"])


# -- the messages of `add`

ROLE = st.sampled_from(ROLES)
GOOD_MESSAGE = st.fixed_dictionaries({"role": ROLE, "content": STORABLE_TEXT})
UNSTORABLE = st.sampled_from(["a\x00b", "\ud800", "x\udfffy"])  # PostgreSQL refuses them
MESSAGE = st.fixed_dictionaries({"role": ROLE, "content": STORABLE_TEXT | TEXT | UNSTORABLE})


@settings(PROPERTY, max_examples=300)
@given(value=ANY_JSON | UNSTORABLE | st.lists(MESSAGE | ANY_JSON, max_size=4) | MESSAGE)
def test_any_json_is_a_conversation_or_an_invalid_input_naming_messages(value: Any) -> None:
    try:
        messages = parse_messages(value)
    except InvalidInput as error:
        assert list(error.fields) == ["messages"], error.fields
        return
    assert messages and all(m.role in ROLES and isinstance(m.content, str) for m in messages)
    conversation_text(messages)


@PROPERTY
@given(text=STORABLE_TEXT.filter(str.strip))
def test_a_string_is_one_user_message(text: str) -> None:
    [message] = parse_messages(text)
    assert (message.role, message.content) == ("user", text)


@PROPERTY
@given(items=st.lists(GOOD_MESSAGE, min_size=1, max_size=MAX_MESSAGES))
def test_a_list_of_role_and_content_parses_in_order(items: list[dict[str, str]]) -> None:
    messages = parse_messages(items)
    assert [(m.role, m.content) for m in messages] == [(i["role"], i["content"]) for i in items]
    expected = [f"{i['role']}: {i['content']}" for i in items if i["content"].strip()]
    assert conversation_text(messages) == "\n".join(expected)


@pytest.mark.slow
@settings(PROPERTY, max_examples=40)
@example(messages="a\x00b")  # was a 500 (PostgreSQL text refuses NUL)
@example(messages=[{"role": "user", "content": "\ud800"}])  # was a 500 (not UTF-8)
@given(messages=ANY_JSON | UNSTORABLE | MESSAGE | st.lists(MESSAGE, min_size=1, max_size=3))
def test_any_messages_on_the_add_endpoint_is_a_200_or_a_400_naming_the_field(
    messages: Any, alice: Tenant
) -> None:
    body = json.dumps({"messages": messages, "user_id": "u1", "infer": False})  # \u escapes
    response = alice.client.post("/api/v1/memories/add/", body, content_type="application/json")
    assert response.status_code in (200, 400), (messages, response.content)
    if response.status_code == 400:
        assert set(response.json()["error"]["fields"]) & {"messages", "content"}
