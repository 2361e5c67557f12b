"""The websocket live feed: `ws/events/?api_key=<key>` (or an Authorization header), or an
OAuth access token meant for this server (`Authorization: Bearer <token>`).

It only authenticates, authorizes (read scope) and forwards the project's events, the ones
the client subscribed to: `types=a,b`, `user_id=`, `agent_id=`, `run_id=` on connect or
`{"action": "subscribe", ...}` later; `last_event_id=N` on connect or
`{"action": "resume", "last_event_id": N}` replays what it missed (platformcore/events.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import parse_qs

from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from platformcore import metrics
from platformcore.events import InvalidSubscription, Subscription, events_since, project_group
from platformcore.lib import json_input
from platformcore.lib.db_threads import database_call
from tenants import streams
from tenants.auth import StreamCredential, asgi_stream_credential
from tenants.models import ApiKey
from tenants.streams import StreamSlot

logger = logging.getLogger(__name__)
UNAUTHORIZED = 4401
FORBIDDEN = 4403
BAD_REQUEST = 4400
TOO_MANY_STREAMS = streams.CLOSE_CODE  # 4429


def _query(scope: dict[str, Any]) -> dict[str, str]:
    query = parse_qs(scope.get("query_string", b"").decode())
    return {name: values[0] for name, values in query.items() if values}


def _last_event_id(value: Any) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidSubscription("last_event_id must be an event id (an integer)") from None


class EventsConsumer(AsyncJsonWebsocketConsumer):
    group: str | None = None
    watch: asyncio.Task[None] | None = None
    slot: StreamSlot | None = None
    renewing: asyncio.Task[None] | None = None
    project_id: int = 0
    slug: str = ""
    subscription: Subscription = Subscription()
    last_sent: int = 0  # the newest event id sent: a replay and the live feed never repeat one

    async def connect(self) -> None:
        credential = asgi_stream_credential(self.scope)
        api_key: ApiKey | None = await database_call(credential.verify) if credential else None
        # Refused after the handshake, with a close code: a client sees why (4401: no usable
        # key, 4403: no read scope); refusing the handshake shows only an HTTP 403.
        if credential is None or api_key is None:
            await self.accept()
            await self.close(code=UNAUTHORIZED)
            return
        if not api_key.has_scope("read"):
            await self.accept()
            await self.close(code=FORBIDDEN)
            return
        self.slot = await StreamSlot.acquire(api_key)
        if self.slot is None:  # the key holds its cap of open streams (tenants/streams.py)
            await self.accept()
            await self.close(code=TOO_MANY_STREAMS)
            return
        self.renewing = asyncio.create_task(self.slot.keep_alive())
        self.project_id, self.slug = api_key.project_id, api_key.project.slug
        self.group = project_group(api_key.project_id)
        metrics.connection_opened("websocket")
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        self.watch = asyncio.create_task(self._close_when_revoked(credential, api_key))
        query = _query(self.scope)
        try:
            resume_after = _last_event_id(query.pop("last_event_id", None))
            query.pop("api_key", None)
            await self._subscribe(query)
        except InvalidSubscription as exc:
            await self.send_json({"type": "error", "message": str(exc)})
            await self.close(code=BAD_REQUEST)
            return
        if resume_after is not None:
            await self._replay(resume_after)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """A frame that is not JSON (or breaks the rules of all JSON input) gets an error
        message; the socket stays open."""
        try:
            content = json_input.loads(text_data if text_data is not None else bytes_data or b"")
        except ValueError as exc:
            await self.send_json({"type": "error", "message": f"send a JSON object: {exc}"})
            return
        await self.receive_json(content, **kwargs)

    async def dispatch(self, message: Any) -> None:
        """A handler that fails for any reason still gives back the key's stream slot (the
        server then closes the socket with 1011)."""
        try:
            await super().dispatch(message)
        except StopConsumer:
            raise
        except Exception:
            logger.exception("websocket consumer failed; releasing its stream slot")
            await self._release()
            raise

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """`{"action": "subscribe", "types": [...], "user_id": ...}` replaces the filters;
        `{"action": "resume", "last_event_id": N}` sends the buffered events after N."""
        try:
            if not isinstance(content, dict):
                raise InvalidSubscription("send a JSON object with an 'action'")
            action = content.get("action")
            if action == "subscribe":
                await self._subscribe({k: v for k, v in content.items() if k != "action"})
            elif action == "resume":
                await self._replay(_last_event_id(content.get("last_event_id")) or 0)
            else:
                raise InvalidSubscription("action must be 'subscribe' or 'resume'")
        except InvalidSubscription as exc:
            await self.send_json({"type": "error", "message": str(exc)})

    async def _subscribe(self, filters: dict[str, Any]) -> None:
        self.subscription = Subscription.of(**filters)
        await self.send_json(
            {"type": "subscribed", "project": self.slug, "filters": self.subscription.as_dict()}
        )

    async def _replay(self, after: int) -> None:
        missed = await database_call(events_since, self.project_id, after)
        sent = [await self._forward(event) for event in missed]
        await self.send_json({"type": "replayed", "count": sum(sent), "after": after})

    async def _close_when_revoked(self, credential: StreamCredential, api_key: ApiKey) -> None:
        """Check the key again every MEMORY_KEY_RECHECK_SECONDS; a revoked or expired key
        ends the connection (4401), as it would have refused it."""
        while True:
            await asyncio.sleep(settings.MEMORY_KEY_RECHECK_SECONDS)
            if not await database_call(credential.still_usable, api_key):
                await self.close(code=UNAUTHORIZED)
                return

    async def disconnect(self, code: int) -> None:
        await self._release()

    async def _release(self) -> None:
        """Stop the connection's tasks, free its slot, leave its group (once)."""
        if self.watch is not None and self.watch is not asyncio.current_task():
            self.watch.cancel()
        if self.renewing is not None:
            self.renewing.cancel()
        if self.slot is not None:
            await self.slot.release()
        if self.group:
            group, self.group = self.group, None
            metrics.connection_closed("websocket")
            await self.channel_layer.group_discard(group, self.channel_name)

    async def memory_event(self, message: dict[str, Any]) -> None:
        await self._forward(message["event"])

    async def _forward(self, event: Any) -> bool:
        event_id = event.get("id") or 0
        if (event_id and event_id <= self.last_sent) or not self.subscription.wants(event):
            return False
        self.last_sent = max(self.last_sent, event_id)
        await self.send_json(event)
        return True
