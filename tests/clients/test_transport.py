"""The client's side of HTTP, against a fake server at the network edge (httpx's
MockTransport): retries on 429/503 honouring Retry-After, typed errors from our JSON error
body, how arguments become query strings and bodies, and the live feed's event stream."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from memory_platform_client import (
    AsyncClient,
    AuthenticationError,
    Client,
    ConfigurationError,
    MemoryPlatformError,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    ValidationError,
)
from memory_platform_client._http import EventDecoder
from memory_platform_client._sync import client as sync_client

Handler = Callable[[httpx.Request], httpx.Response]


def _client(handler: Handler, **options: object) -> Client:
    http = httpx.Client(base_url="http://platform.test", transport=httpx.MockTransport(handler))
    return Client("mp_test", url="http://platform.test", http_client=http, **options)  # type: ignore[arg-type]


def _error(status: int, code: str, message: str, fields=None, **headers: str) -> httpx.Response:
    body = {"error": {"code": code, "message": message, "fields": fields or {}}}
    return httpx.Response(status, json=body, headers=headers)


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds the client chose to wait between tries (instead of waiting them)."""
    recorded: list[float] = []
    monkeypatch.setattr(sync_client.time, "sleep", recorded.append)
    return recorded


def test_a_429_is_retried_after_the_seconds_retry_after_gives(waits: list[float]) -> None:
    answers = iter([_error(429, "throttled", "slow down", **{"Retry-After": "2"})])

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, httpx.Response(200, json={"deleted": 0}))

    assert _client(handler).reset() == {"deleted": 0}
    assert waits == [2.0]


def test_retries_are_bounded_and_end_in_a_typed_error(waits: list[float]) -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(429, "throttled", "slow down", **{"Retry-After": "120"})

    with pytest.raises(RateLimited) as raised:
        _client(handler, max_retries=2, max_retry_wait=5).analytics.overview()
    assert len(calls) == 3
    assert waits == [5.0, 5.0]  # Retry-After capped by max_retry_wait
    assert raised.value.retry_after == 120.0
    assert raised.value.status == 429


def test_an_overloaded_server_is_retried_with_backoff_then_reported(waits: list[float]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return _error(503, "overloaded", "busy")

    with pytest.raises(ServerError) as raised:
        _client(handler, max_retries=3).memories.get("m1")
    assert waits == [0.5, 1.0, 2.0]
    assert raised.value.code == "overloaded"


def test_other_errors_are_not_retried(waits: list[float]) -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return _error(500, "error", "boom")

    with pytest.raises(ServerError):
        _client(handler).memories.get("m1")
    assert len(calls) == 1
    assert waits == []


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, ValidationError),
        (401, AuthenticationError),
        (403, PermissionDenied),
        (404, NotFound),
        (405, MemoryPlatformError),
        (502, ServerError),
    ],
)
def test_each_status_becomes_its_typed_error(status: int, error: type[Exception]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return _error(status, "code", "message")

    with pytest.raises(error):
        _client(handler, max_retries=0).memories.get("m1")


def test_a_validation_error_names_the_fields_from_the_error_body() -> None:
    fields = {"content": ["This field is required."], "memories.3.tags": ["Not a list."]}

    def handler(request: httpx.Request) -> httpx.Response:
        return _error(400, "invalid", "Invalid input: content, memories.3.tags", fields)

    with pytest.raises(ValidationError) as raised:
        _client(handler).memories.create("")
    assert raised.value.fields == fields
    assert raised.value.status == 400
    assert "content: This field is required." in str(raised.value)


def test_a_non_json_error_still_becomes_a_typed_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, text="Bad Gateway")

    with pytest.raises(ServerError, match="Bad Gateway"):
        _client(handler).memories.get("m1")


def test_the_key_is_sent_as_a_bearer_token_and_lists_are_comma_joined() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"results": [], "count": 0, "limit": 5, "offset": 0})

    _client(handler).memories.list(
        user_id="alice",
        memory_type=["fact", "decision"],
        tags=["a", "b"],
        pinned=False,
        filters={"AND": [{"user_id": "alice"}]},
        limit=5,
    )
    request = seen[0]
    assert request.headers["Authorization"] == "Bearer mp_test"
    assert request.url.path == "/api/v1/memories/"
    assert dict(request.url.params) == {
        "user_id": "alice",
        "memory_type": "fact,decision",
        "tags": "a,b",
        "pinned": "false",
        "filters": '{"AND": [{"user_id": "alice"}]}',
        "limit": "5",
        "offset": "0",
    }


def test_a_search_body_carries_lists_and_leaves_out_unset_options() -> None:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"results": []})

    _client(handler).memories.search("tea", mode="keyword", memory_type="fact", user_id="u1")
    assert seen == [{"query": "tea", "mode": "keyword", "memory_type": ["fact"], "user_id": "u1"}]


def test_ids_in_paths_are_escaped() -> None:
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.raw_path.decode())
        return httpx.Response(200, json={})

    _client(handler).memories.get("../reset")
    assert seen == ["/api/v1/memories/..%2Freset/"]


def test_a_file_is_uploaded_as_multipart_and_text_as_json(tmp_path) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": "d1", "created": True})

    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nShip on Fridays.")
    client = _client(handler)
    client.documents.upload(path=notes, user_id="u1", metadata={"team": "ops"})
    client.documents.upload("plain words", title="T")
    multipart, plain = seen
    assert multipart.headers["content-type"].startswith("multipart/form-data")
    body = multipart.read().decode()
    assert 'filename="notes.md"' in body and "Ship on Fridays." in body
    assert '{"team": "ops"}' in body
    assert json.loads(plain.content) == {"text": "plain words", "title": "T"}
    with pytest.raises(TypeError):
        client.documents.upload("text", content=b"bytes")


def test_iterating_fetches_pages_until_the_total_is_reached() -> None:
    offsets: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        offset = int(request.url.params["offset"])
        offsets.append(request.url.params["offset"])
        results = [{"id": str(i)} for i in range(offset, min(offset + 2, 5))]
        return httpx.Response(200, json={"results": results, "count": 5, "limit": 2})

    ids = [m["id"] for m in _client(handler).memories.iter(page_size=2, user_id="u1")]
    assert ids == ["0", "1", "2", "3", "4"]
    assert offsets == ["0", "2", "4"]


def test_iterating_a_search_stops_at_a_short_page() -> None:
    bodies: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        count = 3 if body["offset"] == 0 else 1
        return httpx.Response(200, json={"results": [{"id": "x"}] * count, "count": count})

    hits = list(_client(handler).memories.iter_search("tea", page_size=3))
    assert len(hits) == 4
    assert [b["offset"] for b in bodies] == [0, 3]


def test_without_a_key_the_client_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMORY_API_KEY", raising=False)
    with pytest.raises(ConfigurationError, match="MEMORY_API_KEY"):
        Client()


def test_key_and_url_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_API_KEY", "mp_env")
    monkeypatch.setenv("MEMORY_URL", "http://memory.example:9000/")
    with Client() as client:
        assert client.url == "http://memory.example:9000"
        assert client._headers["Authorization"] == "Bearer mp_env"


def test_server_sent_events_are_decoded_and_keepalives_skipped() -> None:
    decoder = EventDecoder()
    lines = [
        "event: subscribed",
        'data: {"project": "alice"}',
        "",
        ": keepalive",
        "",
        "event: memory_created",
        'data: {"type": "memory_created", "project": "alice", "at": "t", "data": {"id": "1"}}',
        "",
    ]
    events = [e for e in map(decoder.feed, lines) if e is not None]
    assert events == [
        {"type": "subscribed", "data": {"project": "alice"}},
        {"type": "memory_created", "project": "alice", "at": "t", "data": {"id": "1"}},
    ]


@pytest.mark.anyio
async def test_the_async_client_retries_and_maps_errors_the_same_way() -> None:
    answers = iter([_error(503, "overloaded", "busy", **{"Retry-After": "0"})])

    def handler(request: httpx.Request) -> httpx.Response:
        return next(answers, _error(404, "not_found", "No such memory."))

    http = httpx.AsyncClient(
        base_url="http://platform.test", transport=httpx.MockTransport(handler)
    )
    async with AsyncClient("mp_test", url="http://platform.test", http_client=http) as client:
        with pytest.raises(NotFound, match="No such memory"):
            await client.memories.get("m1")
