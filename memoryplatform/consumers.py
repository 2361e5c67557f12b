"""The websocket live feed: `ws/events/?api_key=<key>` (or an Authorization header).

It only authenticates, authorizes (read scope) and forwards the project's events.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from memoryplatform.events import project_group
from memoryplatform.lib.db_threads import database_call
from tenants.auth import raw_key_from_headers
from tenants.models import ApiKey
from tenants.services import api_key_verify

UNAUTHORIZED = 4401
FORBIDDEN = 4403


def _raw_key(scope: dict[str, Any]) -> str | None:
    headers = {name.decode().lower(): value.decode() for name, value in scope.get("headers", [])}
    query = parse_qs(scope.get("query_string", b"").decode())
    from_query = (query.get("api_key") or [None])[0]
    return raw_key_from_headers(
        headers.get("authorization"), headers.get("x-api-key") or from_query
    )


class EventsConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None

    async def connect(self) -> None:
        raw_key = _raw_key(self.scope)
        api_key: ApiKey | None = await database_call(api_key_verify, raw_key) if raw_key else None
        if api_key is None:
            await self.close(code=UNAUTHORIZED)
            return
        if not api_key.has_scope("read"):
            await self.close(code=FORBIDDEN)
            return
        self.group = project_group(api_key.project_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"type": "subscribed", "project": api_key.project.slug})

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def memory_event(self, message: dict[str, Any]) -> None:
        await self.send_json(message["event"])
