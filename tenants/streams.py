"""A cap on the long-lived connections one API key holds open at once: websockets, SSE streams
and MCP streams (GET /mcp, /sse) share MEMORY_MAX_STREAMS_PER_KEY (20; a project's
`limits["streams"]` overrides it, 0 = no cap). Each open connection holds a *slot*.

Slots live in the shared "limits" cache (Redis, or a table in PostgreSQL), not in process
memory: a server runs several worker processes, and a count per process would let a key hold
the cap in each of them. A slot is a cache entry `streams:<key id>:<i>`, i < cap, taken with
an atomic `add` (Redis SET NX; an INSERT on the table's primary key), so two connections
opening at once never take the same one. It expires after SLOT_SECONDS unless its connection
renews it (every SLOT_SECONDS / 3), so the slots of a process that died with connections open
come free by themselves; a connection that ends releases its slot at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator

from django.conf import settings
from django.core.cache import caches

from platformcore.lib.db_threads import database_call
from tenants.models import ApiKey

logger = logging.getLogger(__name__)
SLOT_SECONDS = 90
RENEW_SECONDS = SLOT_SECONDS / 3
RETRY_AFTER_SECONDS = 30  # what a refused client is told to wait: streams end at their pace
CLOSE_CODE = 4429  # websocket close code of a refused connection (HTTP: 429)
CACHE_ALIAS = "limits"


def stream_cap(api_key: ApiKey) -> int:
    """Open streams this key may hold: its project's `limits["streams"]`, else the setting."""
    own = (api_key.project.limits or {}).get("streams")
    return int(own if own is not None else settings.MEMORY_MAX_STREAMS_PER_KEY)


def refusal_message(api_key: ApiKey) -> str:
    return (
        f"This API key already holds its {stream_cap(api_key)} open streams (websocket, SSE, "
        "MCP); close one or retry later."
    )


class StreamSlot:
    """One open connection's place under its key's cap (`name` None: the key has no cap)."""

    def __init__(self, api_key_id: int, name: str | None) -> None:
        self.api_key_id = api_key_id
        self.name = name
        self.token = uuid.uuid4().hex
        self.renewed = time.monotonic()

    @classmethod
    async def acquire(cls, api_key: ApiKey) -> StreamSlot | None:
        """A slot for a new connection of `api_key`, or None when it holds its cap already."""
        cap = stream_cap(api_key)
        if cap <= 0:
            return cls(api_key.pk, None)
        slot = cls(api_key.pk, None)
        slot.name = await database_call(slot._take, cap)
        return slot if slot.name is not None else None

    def _take(self, cap: int) -> str | None:
        cache = caches[CACHE_ALIAS]
        names = [f"streams:{self.api_key_id}:{index}" for index in range(cap)]
        held = cache.get_many(names)
        for name in names:  # a slot taken meanwhile by another connection: try the next
            if name not in held and cache.add(name, self.token, SLOT_SECONDS):
                return name
        return None

    async def renew_if_due(self) -> None:
        """Keep the slot alive; a cheap no-op until RENEW_SECONDS have passed."""
        if self.name is None or time.monotonic() - self.renewed < RENEW_SECONDS:
            return
        self.renewed = time.monotonic()
        try:
            await database_call(self._renew)
        except Exception:  # the cache is unreachable: the connection goes on regardless
            logger.warning("stream slot %s could not be renewed", self.name, exc_info=True)

    def _renew(self) -> None:
        cache = caches[CACHE_ALIAS]
        assert self.name is not None
        if cache.get(self.name) == self.token:
            cache.touch(self.name, SLOT_SECONDS)
        else:  # expired (a long pause) and perhaps taken: hold a free one if there is one
            self.name = self._take(self._cap_now()) or self.name

    def _cap_now(self) -> int:
        api_key = ApiKey.objects.select_related("project").get(pk=self.api_key_id)
        return stream_cap(api_key)

    async def keep_alive(self) -> None:
        """Renew the slot for as long as the task runs (cancel it when the connection ends)."""
        while True:
            await asyncio.sleep(RENEW_SECONDS)
            await self.renew_if_due()

    async def release(self) -> None:
        """Free the slot (once; later calls do nothing)."""
        name, self.name = self.name, None
        if name is None:
            return
        try:
            await database_call(self._free, name)
        except Exception:  # it expires by itself
            logger.warning("stream slot %s could not be released", name, exc_info=True)

    def _free(self, name: str) -> None:
        cache = caches[CACHE_ALIAS]
        if cache.get(name) == self.token:
            cache.delete(name)

    async def holding(self, stream: AsyncIterator[str]) -> AsyncIterator[str]:
        """`stream`, renewing the slot between its chunks and freeing it when it ends (an SSE
        stream: its keepalives come at least every 15 s). A stream abandoned without being
        closed stops renewing, so its slot still expires."""
        try:
            async for chunk in stream:
                yield chunk
                await self.renew_if_due()
        finally:
            if isinstance(stream, AsyncGenerator):
                with contextlib.suppress(Exception):
                    await stream.aclose()
            await self.release()


@contextlib.asynccontextmanager
async def stream_slot(api_key: ApiKey) -> AsyncIterator[StreamSlot | None]:
    """`async with stream_slot(key) as slot:` a slot renewed while the block runs and freed
    after it, or None (over the cap: refuse the connection)."""
    slot = await StreamSlot.acquire(api_key)
    if slot is None:
        yield None
        return
    renewing = asyncio.create_task(slot.keep_alive())
    try:
        yield slot
    finally:
        renewing.cancel()
        await slot.release()
