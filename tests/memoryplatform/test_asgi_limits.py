"""Every HTTP path of the ASGI app refuses a body above MEMORY_MAX_REQUEST_BYTES with 413,
announced (Content-Length) or streamed, before reading it to the end: no request can make the
server hold or parse megabytes it will refuse anyway."""

from __future__ import annotations

import json

import pytest
from channels.testing import ApplicationCommunicator

from platformcore.lib.asgi_limits import RequestBodyLimit

pytestmark = pytest.mark.anyio


async def _echo(scope, receive, send) -> None:
    """An app that reads the whole body and answers its size."""
    size = 0
    while True:
        message = await receive()
        size += len(message.get("body", b""))
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": str(size).encode()})


async def _post(app, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> dict:
    scope = {"type": "http", "method": "POST", "path": "/api/v1/memories/", "headers": headers}
    communicator = ApplicationCommunicator(app, scope)
    for index, chunk in enumerate(chunks):
        more = index < len(chunks) - 1
        await communicator.send_input({"type": "http.request", "body": chunk, "more_body": more})
    start = await communicator.receive_output(5)
    body = await communicator.receive_output(5)
    await communicator.wait(5)
    return {"status": start["status"], "body": body["body"]}


async def test_a_declared_body_above_the_limit_is_refused_unread() -> None:
    app = RequestBodyLimit(_echo, max_bytes=1000)
    refused = await _post(app, [b"x" * 10], [(b"content-length", b"5000")])
    assert refused["status"] == 413
    assert json.loads(refused["body"])["error"]["code"] == "too_large"


async def test_a_streamed_body_is_stopped_once_it_passes_the_limit() -> None:
    app = RequestBodyLimit(_echo, max_bytes=1000)
    refused = await _post(app, [b"x" * 600, b"x" * 600, b"x" * 600], [])
    assert refused["status"] == 413


async def test_a_body_within_the_limit_reaches_the_app() -> None:
    app = RequestBodyLimit(_echo, max_bytes=1000)
    served = await _post(app, [b"x" * 500, b"x" * 500], [(b"content-length", b"1000")])
    assert (served["status"], served["body"]) == (200, b"1000")


@pytest.mark.django_db(transaction=True)
async def test_the_platform_refuses_an_oversized_api_and_mcp_request(settings) -> None:
    from memoryplatform.asgi import application

    limit = settings.MEMORY_MAX_REQUEST_BYTES
    big = str(limit + 1).encode()
    for path in ("/api/v1/memories/", "/mcp"):
        scope = {
            "type": "http",
            "method": "POST",
            "path": path,
            "headers": [(b"host", b"testserver"), (b"content-length", big)],
        }
        communicator = ApplicationCommunicator(application, scope)
        await communicator.send_input({"type": "http.request", "body": b"{}", "more_body": True})
        start = await communicator.receive_output(5)
        assert start["status"] == 413, path
        await communicator.receive_output(5)
