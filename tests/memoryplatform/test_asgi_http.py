"""HTTP through the ASGI application (what daphne and uvicorn serve): API requests run on the
handler's long-lived threads, and what they do still reaches the event loop's subscribers;
the SSE stream (an async view) is served by Django's own async handler."""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator, HttpCommunicator, WebsocketCommunicator
from django.db import connections

from memoryplatform.asgi import application
from tests.conftest import make_tenant

pytestmark = [pytest.mark.anyio, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
async def _close_worker_thread_connections():
    yield
    await sync_to_async(connections.close_all)()
    gc.collect()  # the SSE request's thread is gone; its connection closes when collected


def _headers(key: str, body: bytes = b"") -> list[tuple[bytes, bytes]]:
    return [
        (b"host", b"testserver"),
        (b"authorization", f"Bearer {key}".encode()),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]


async def request(key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else b""
    response = await HttpCommunicator(
        application, method, path, body=data, headers=_headers(key, data)
    ).get_response(timeout=10)
    return response["status"], json.loads(response["body"] or b"null")


async def test_api_round_trip_and_errors_through_the_asgi_app() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    status, created = await request(
        alice.key, "POST", "/api/v1/memories/", {"content": "ASGI fact", "user_id": "u1"}
    )
    assert status == 201, created
    status, fetched = await request(alice.key, "GET", f"/api/v1/memories/{created['id']}/")
    assert (status, fetched["content"]) == (200, "ASGI fact")
    status, error = await request(alice.key, "POST", "/api/v1/memories/", {"user_id": "u1"})
    assert status == 400
    assert "content" in error["error"]["fields"]
    bob = await sync_to_async(make_tenant)("bob")
    status, _ = await request(bob.key, "GET", f"/api/v1/memories/{created['id']}/")
    assert status == 404


async def test_admin_login_page_through_the_asgi_app() -> None:
    """Browser paths keep sessions and CSRF: the login page sets its CSRF cookie."""
    response = await HttpCommunicator(
        application, "GET", "/admin/login/", headers=[(b"host", b"testserver")]
    ).get_response(timeout=10)
    assert response["status"] == 200
    cookies = [value for name, value in response["headers"] if name.lower() == b"set-cookie"]
    assert any(cookie.startswith(b"csrftoken=") for cookie in cookies)
    assert b"csrfmiddlewaretoken" in response["body"]


async def test_a_write_through_the_asgi_app_reaches_websocket_subscribers() -> None:
    """The event is sent from the request's thread to the channel layer on the server's event
    loop (the in-memory layer only works there). The graph, extracted after the answer, sends
    its events after the memory's."""
    alice = await sync_to_async(make_tenant)("alice")
    ws = WebsocketCommunicator(
        application, f"/ws/events/?api_key={alice.key}", headers=[(b"origin", b"http://localhost")]
    )
    connected, _ = await ws.connect()
    assert connected
    assert (await ws.receive_json_from())["type"] == "subscribed"
    body = {"content": "Marie Curie works at the Sorbonne", "user_id": "u1"}
    status, created = await request(alice.key, "POST", "/api/v1/memories/", body)
    assert status == 201
    event = await ws.receive_json_from(timeout=5)
    assert (event["type"], event["data"]["id"]) == ("memory_created", created["id"])
    graph = [(await ws.receive_json_from(timeout=5)) for _ in range(2)]
    assert {e["type"] for e in graph} == {"entity_created"}
    assert {e["data"]["name"] for e in graph} == {"Marie Curie", "Sorbonne"}
    await ws.disconnect()


async def test_sse_stream_through_the_asgi_app() -> None:
    alice = await sync_to_async(make_tenant)("alice")
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/v1/events/",
        "raw_path": b"/api/v1/events/",
        "root_path": "",
        "query_string": b"",
        "headers": _headers(alice.key),
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    stream = ApplicationCommunicator(application, scope)
    await stream.send_input({"type": "http.request", "body": b""})
    start = await stream.receive_output(timeout=5)
    assert start["status"] == 200
    assert b"event: subscribed" in (await stream.receive_output(timeout=5))["body"]
    status, created = await request(
        alice.key, "POST", "/api/v1/memories/", {"content": "Streamed", "user_id": "u1"}
    )
    assert status == 201
    chunk = (await stream.receive_output(timeout=5))["body"].decode()
    assert chunk.startswith("id: ") and "\nevent: memory_created\n" in chunk
    assert created["id"] in chunk
    await stream.send_input({"type": "http.disconnect"})
    await stream.wait(timeout=5)  # the stream ends with its client
