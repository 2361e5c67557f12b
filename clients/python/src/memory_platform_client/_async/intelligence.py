"""The memory store's upkeep: lifecycle (consolidation, decay, pruning), contradiction
reviews, and the start and end of an agent's session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime
from typing import Any, Literal

from memory_platform_client import _http
from memory_platform_client._async.memories import _Area
from memory_platform_client.types import (
    JSON,
    Contradiction,
    ContradictionList,
    Memory,
    MemoryType,
    PruneCandidates,
    Resolution,
    SessionContext,
)


class AsyncLifecycle(_Area):
    """Consolidation, decay and pruning (docs/intelligence.md, "Lifecycle and decay")."""

    async def consolidate(
        self,
        *,
        similarity_threshold: float | None = None,
        dry_run: bool | None = None,
        since: str | datetime | None = None,
        stages: Sequence[str] | None = None,
    ) -> JSON:
        """Run the maintenance pipeline: merge clusters of similar memories and the other
        `stages` (embeddings, merge, utility, decay, prune; default all). `since="last"`:
        only what changed since the last run. A report."""
        json = _http.body(
            similarity_threshold=similarity_threshold,
            dry_run=dry_run,
            since=since,
            stages=_list(stages),
        )
        return await self._client._call("lifecycle.consolidate", json=json)

    async def run_decay(self) -> JSON:
        """Recompute decay scores and lifecycle states now (decay re-ranks, it never removes)."""
        return await self._client._call("lifecycle.run_decay")

    async def decay_control(self) -> JSON:
        """Whether the project's scheduled decay is paused, and when it last ran."""
        return await self._client._call("lifecycle.decay_control")

    async def pause_decay(self) -> JSON:
        """Pause the project's scheduled decay (admin scope)."""
        return await self._client._call("lifecycle.pause_decay")

    async def resume_decay(self) -> JSON:
        """Resume the project's scheduled decay (admin scope)."""
        return await self._client._call("lifecycle.resume_decay")

    async def decay_status(self, memory_id: str) -> JSON:
        """A memory's lifecycle state, score, predicted next state and prune date."""
        return await self._client._call("lifecycle.decay_status", path={"id": memory_id})

    async def set_decay_rate(self, memory_id: str, decay_rate: float | None) -> JSON:
        """This memory's own decay rate per day (None: back to the project's); its status."""
        return await self._client._call(
            "lifecycle.set_decay_rate", path={"id": memory_id}, json={"decay_rate": decay_rate}
        )

    async def decompress(self, memory_id: str) -> Memory:
        """Put a compressed (archived) memory's full text back."""
        return await self._client._call("lifecycle.decompress", path={"id": memory_id})

    async def preserve(self, memory_id: str, *, until: str | datetime | None = None) -> Memory:
        """Keep a memory active (until a date, or for good)."""
        json = _http.body(until=until)
        return await self._client._call("lifecycle.preserve", path={"id": memory_id}, json=json)

    async def prune_candidates(
        self, *, threshold: float | None = None, limit: int | None = None, offset: int = 0
    ) -> PruneCandidates:
        """What the next prune would remove, lowest confidence first (nothing is removed)."""
        params = _http.query(threshold=threshold, limit=limit, offset=offset)
        return await self._client._call("lifecycle.prune_candidates", params=params)

    async def iter_prune_candidates(
        self, *, threshold: float | None = None, page_size: int = _http.MAX_PAGE_SIZE
    ) -> AsyncIterator[Memory]:
        params = _http.query(threshold=threshold)
        async for memory in self._client._pages(
            "lifecycle.iter_prune_candidates", params=params, page_size=page_size
        ):
            yield memory

    async def prune(self, *, threshold: float | None = None, dry_run: bool | None = None) -> JSON:
        """Prune low-confidence memories now (never preferences, pinned, preserved or
        important ones); a report."""
        json = _http.body(threshold=threshold, dry_run=dry_run)
        return await self._client._call("lifecycle.prune", json=json)


class AsyncContradictions(_Area):
    """Reviews of memories that contradict each other."""

    async def list(
        self, *, status: Literal["open", "resolved", "all"] | None = None
    ) -> ContradictionList:
        """Up to 100 reviews (`open` by default)."""
        params = _http.query(status=status)
        return await self._client._call("contradictions.list", params=params)

    async def get(self, review_id: str) -> Contradiction:
        return await self._client._call("contradictions.get", path={"id": review_id})

    async def resolve(
        self,
        review_id: str,
        resolution: Resolution,
        *,
        content: str | None = None,
        note: str | None = None,
    ) -> Contradiction:
        """keep_a / keep_b / keep_both, or merge (into `content` when given)."""
        json = _http.body(resolution=resolution, content=content, note=note)
        return await self._client._call("contradictions.resolve", path={"id": review_id}, json=json)


class AsyncSession(_Area):
    """The start and end of an agent's working session."""

    async def reflect(
        self,
        summary: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        session_id: str | None = None,
        decisions: Sequence[str] | None = None,
        errors_resolved: Sequence[str] | None = None,
        new_procedures: Sequence[str] | None = None,
        open_questions: Sequence[str] | None = None,
        task_effectiveness: JSON | None = None,
        promote: Sequence[str] | None = None,
    ) -> JSON:
        """A session summary becomes typed memories: `{"results": [{id, memory_type, ...}],
        "session"}`; the session's working memory then ends, but for `promote` (ids) and what
        the promotion rule keeps."""
        json = _http.body(
            summary=summary,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            session_id=session_id,
            decisions=_list(decisions),
            errors_resolved=_list(errors_resolved),
            new_procedures=_list(new_procedures),
            open_questions=_list(open_questions),
            task_effectiveness=task_effectiveness,
            promote=_list(promote),
        )
        return await self._client._call("session.reflect", json=json)

    async def context(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        token_budget: int | None = None,
        types: Sequence[MemoryType] | None = None,
        session_id: str | None = None,
    ) -> SessionContext:
        """What to know at the start of a session, within `token_budget` tokens."""
        json = _http.body(
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            token_budget=token_budget,
            types=_list(types),
            session_id=session_id,
        )
        return await self._client._call("session.context", json=json)

    async def close(self, session_id: str, *, promote: Sequence[str] | None = None) -> JSON:
        """End a session: its working memory (the run's short-term memories) leaves, but for
        `promote` (ids) and what the promotion rule keeps: `{promoted, expired, ...}`."""
        json = _http.body(session_id=session_id, promote=_list(promote))
        return await self._client._call("session.close", json=json)


def _list(items: Sequence[Any] | None) -> list[Any] | None:
    return None if items is None else list(items)
