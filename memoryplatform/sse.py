"""Server-Sent Events: `GET /api/v1/events/` streams the caller's project events.

The same events as the websocket feed, for clients that only speak HTTP. A comment line is sent
every `KEEPALIVE_SECONDS` so proxies keep the connection open.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from channels.layers import get_channel_layer
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse

from memoryplatform.events import project_group
from memoryplatform.lib.db_threads import database_call
from tenants.auth import raw_key_from_headers
from tenants.services import api_key_verify

KEEPALIVE_SECONDS = 15.0


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": {}}}, status=status)


async def _stream(group: str, slug: str) -> AsyncIterator[str]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)
    try:
        yield f"event: subscribed\ndata: {json.dumps({'project': slug})}\n\n"
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            event = message.get("event")
            if event:
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
    finally:
        await layer.group_discard(group, channel)


async def events(request: HttpRequest) -> HttpResponse:
    if request.method != "GET":
        return _error(405, "method_not_allowed", "Use GET.")
    raw_key = raw_key_from_headers(
        request.headers.get("Authorization"),
        request.headers.get("X-API-Key") or request.GET.get("api_key"),
    )
    api_key = await database_call(api_key_verify, raw_key) if raw_key else None
    if api_key is None:
        return _error(401, "not_authenticated", "A valid API key is required.")
    if not api_key.has_scope("read"):
        return _error(403, "permission_denied", "This API key lacks the 'read' scope.")
    response = StreamingHttpResponse(
        _stream(project_group(api_key.project_id), api_key.project.slug),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
