# Generated from _async/platform.py by clients/python/scripts/unasync.py: do not edit.
# ruff: noqa: UP028
"""Analytics and the live feed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

from memory_platform_client import _http
from memory_platform_client.types import JSON, Event

if TYPE_CHECKING:
    from memory_platform_client._sync.client import Client


class _Area:
    def __init__(self, client: Client) -> None:
        self._client = client


class Exports(_Area):
    """The key's whole project as a JSON-lines file (admin keys; docs/portability.md): a
    background job, then its file, which `manage.py import_project` reads."""

    def create(self, *, embeddings: bool = True) -> JSON:
        """Start an export (`embeddings=False`: the importer computes the vectors)."""
        return self._client._call("exports.create", json={"embeddings": embeddings})

    def get(self, export_id: str) -> JSON:
        """The job: `status`, `counts`, `size_bytes` and, once done, `download_url`."""
        return self._client._call("exports.get", path={"id": export_id})

    def download(self, export_id: str) -> bytes:
        """The finished export's file (gzip-compressed JSON lines)."""
        return self._client._call("exports.download", path={"id": export_id})


class Analytics(_Area):
    """Counts, growth and distributions of the project's memories."""

    def overview(self) -> JSON:
        """Counts and averages (memories by type and state, confidence, tokens...)."""
        return self._client._call("analytics.overview")

    def growth(
        self, *, interval: Literal["day", "week", "month"] | None = None, days: int | None = None
    ) -> JSON:
        """Memories stored per interval over the last `days` days."""
        params = _http.query(interval=interval, days=days)
        return self._client._call("analytics.growth", params=params)

    def types(self) -> JSON:
        """`{"by_type": {...}, "by_state": {...}}`."""
        return self._client._call("analytics.types")

    def tags(self, *, limit: int | None = None) -> JSON:
        """The most used tags with their counts."""
        return self._client._call("analytics.tags", params=_http.query(limit=limit))

    def confidence(self, *, buckets: int | None = None) -> JSON:
        """A histogram of decay-aware confidence."""
        return self._client._call("analytics.confidence", params=_http.query(buckets=buckets))

    def search(self, *, days: int | None = None) -> JSON:
        """Searches per day, empty-result rate and latency percentiles, overall and per mode."""
        return self._client._call("analytics.search", params=_http.query(days=days))

    def relations(self) -> JSON:
        """Knowledge-graph relations by type, open and closed."""
        return self._client._call("analytics.relations")

    def feedback(self, *, days: int | None = None) -> JSON:
        """Tool feedback per tool: reports, relevant and sufficient rates."""
        return self._client._call("analytics.feedback", params=_http.query(days=days))


class Events(_Area):
    """The project's live feed over Server-Sent Events."""

    def stream(self, *, read_timeout: float | None = None) -> Iterator[Event]:
        """Events as they happen (`subscribed` first, then `memory_created`, ...), until the
        caller stops iterating or the server ends the stream (`revoked`). Only this
        project's events arrive. `read_timeout`: give up after that many silent seconds (the
        server sends a keep-alive every 15 s; default: wait for ever)."""
        for event in self._client._stream("events.stream", read_timeout=read_timeout):
            yield event
