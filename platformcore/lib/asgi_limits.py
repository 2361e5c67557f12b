"""A request body limit for every HTTP path of the ASGI app (REST, MCP, SSE).

Django's `DATA_UPLOAD_MAX_MEMORY_SIZE` never sees a JSON body (DRF's parser reads the request
as a stream), and the MCP transport reads whatever it is sent. `RequestBodyLimit` refuses a
request whose `Content-Length` is above the limit before reading it, and stops one that sends
more than the limit without announcing it (chunked) as soon as it has: `413` with a JSON error
body, the same envelope as every API error. Nothing past the limit is read or kept.
"""

from __future__ import annotations

import json
from typing import Any


class _TooLarge(Exception):
    pass


class RequestBodyLimit:
    def __init__(self, app: Any, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        started = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise _TooLarge
            return message

        async def tracking_send(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await self._refuse(send)

    async def _refuse(self, send: Any) -> None:
        message = f"The request body is larger than {self.max_bytes} bytes."
        body = json.dumps({"error": {"code": "too_large", "message": message, "fields": {}}})
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body.encode()})
