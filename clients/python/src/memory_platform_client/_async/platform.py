"""Analytics and the live feed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal

from memory_platform_client import _http
from memory_platform_client.types import JSON, Event

if TYPE_CHECKING:
    from memory_platform_client._async.client import AsyncClient


class _Area:
    def __init__(self, client: AsyncClient) -> None:
        self._client = client


class AsyncExports(_Area):
    """The key's whole project as a JSON-lines file (admin keys; docs/portability.md): a
    background job, then its file, which `manage.py import_project` reads."""

    async def create(self, *, embeddings: bool = True) -> JSON:
        """Start an export (`embeddings=False`: the importer computes the vectors)."""
        return await self._client._call("exports.create", json={"embeddings": embeddings})

    async def get(self, export_id: str) -> JSON:
        """The job: `status`, `counts`, `size_bytes` and, once done, `download_url`."""
        return await self._client._call("exports.get", path={"id": export_id})

    async def download(self, export_id: str) -> bytes:
        """The finished export's file (gzip-compressed JSON lines)."""
        return await self._client._call("exports.download", path={"id": export_id})


class AsyncAnalytics(_Area):
    """Counts, growth and distributions of the project's memories."""

    async def overview(self) -> JSON:
        """Counts and averages (memories by type and state, confidence, tokens...)."""
        return await self._client._call("analytics.overview")

    async def growth(
        self, *, interval: Literal["day", "week", "month"] | None = None, days: int | None = None
    ) -> JSON:
        """Memories stored per interval over the last `days` days."""
        params = _http.query(interval=interval, days=days)
        return await self._client._call("analytics.growth", params=params)

    async def types(self) -> JSON:
        """`{"by_type": {...}, "by_state": {...}}`."""
        return await self._client._call("analytics.types")

    async def tags(self, *, limit: int | None = None) -> JSON:
        """The most used tags with their counts."""
        return await self._client._call("analytics.tags", params=_http.query(limit=limit))

    async def confidence(self, *, buckets: int | None = None) -> JSON:
        """A histogram of decay-aware confidence."""
        return await self._client._call("analytics.confidence", params=_http.query(buckets=buckets))

    async def search(self, *, days: int | None = None) -> JSON:
        """Searches per day, empty-result rate and latency percentiles, overall and per mode."""
        return await self._client._call("analytics.search", params=_http.query(days=days))

    async def relations(self) -> JSON:
        """Knowledge-graph relations by type, open and closed."""
        return await self._client._call("analytics.relations")

    async def feedback(self, *, days: int | None = None) -> JSON:
        """Tool feedback per tool: reports, relevant and sufficient rates."""
        return await self._client._call("analytics.feedback", params=_http.query(days=days))


class AsyncEvents(_Area):
    """The project's live feed over Server-Sent Events."""

    async def stream(self, *, read_timeout: float | None = None) -> AsyncIterator[Event]:
        """Events as they happen (`subscribed` first, then `memory_created`, ...), until the
        caller stops iterating or the server ends the stream (`revoked`). Only this
        project's events arrive. `read_timeout`: give up after that many silent seconds (the
        server sends a keep-alive every 15 s; default: wait for ever)."""
        async for event in self._client._stream("events.stream", read_timeout=read_timeout):
            yield event
