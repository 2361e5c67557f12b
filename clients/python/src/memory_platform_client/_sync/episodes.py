# Generated from _async/episodes.py by clients/python/scripts/unasync.py: do not edit.
"""Episodes: a conversation or task grouping the memories stored during it, with a summary
once closed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memory_platform_client import _http
from memory_platform_client.types import JSON

if TYPE_CHECKING:
    from memory_platform_client._sync.client import Client


class Episodes:
    """Start an episode for a run, read it with its memories in order, close it."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def start(
        self,
        *,
        name: str = "",
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> JSON:
        """Open an episode; memories stored with its `run_id` join it. An episode still open
        for the same run is closed first."""
        json = _http.body(
            name=name, user_id=user_id, agent_id=agent_id, run_id=run_id, metadata=metadata
        )
        return self._client._call("episodes.start", json=json)

    def list(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        open: bool | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> JSON:
        params = _http.query(
            user_id=user_id, agent_id=agent_id, run_id=run_id, open=open, limit=limit, offset=offset
        )
        return self._client._call("episodes.list", params=params)

    def get(self, episode_id: str) -> JSON:
        """The episode with its memories in the order they were stored."""
        return self._client._call("episodes.get", path={"id": episode_id})

    def close(self, episode_id: str, *, summary: str | None = None, summarize: bool = True) -> JSON:
        """Close the episode; its summary is `summary`, else written from its memories."""
        json = _http.body(summary=summary, summarize=summarize)
        return self._client._call("episodes.close", path={"id": episode_id}, json=json)
