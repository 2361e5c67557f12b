# Generated from _async/facade.py by clients/python/scripts/unasync.py: do not edit.
"""A mem0-style facade: code written against mem0's memory clients
(`add`, `search`, `get`, `get_all`, `update`, `delete`, `delete_all`, `history`, `reset`)
runs on the platform by changing the import.

Results keep mem0's shapes: `{"results": [...]}` for add, search and get_all; each memory
carries mem0's `memory` (its text) and `hash` beside the platform's own fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memory_platform_client import _http
from memory_platform_client._sync.client import Client
from memory_platform_client.errors import ValidationError
from memory_platform_client.types import JSON


def mem0_memory(memory: Mapping[str, Any]) -> JSON:
    """A platform memory as mem0 returns one (its fields plus `memory` and `hash`)."""
    return {**memory, "memory": memory.get("content"), "hash": memory.get("content_hash")}


def mem0_history(entry: Mapping[str, Any]) -> JSON:
    return {
        **entry,
        "old_memory": entry.get("old_content"),
        "new_memory": entry.get("new_content"),
        "actor_id": entry.get("actor"),
    }


class Memory:
    """mem0's client interface over the platform's API. `api_key` and `host` default to
    MEMORY_API_KEY and MEMORY_URL; `org_id` and `project_id` are accepted for mem0 code and
    ignored (the key decides the project). `client` reuses an existing client."""

    def __init__(
        self,
        api_key: str | None = None,
        host: str | None = None,
        org_id: str | None = None,
        project_id: str | None = None,
        *,
        client: Client | None = None,
        **options: Any,
    ) -> None:
        self.client = client or Client(api_key, url=host, **options)

    def add(
        self,
        messages: str | Sequence[Mapping[str, str]],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: JSON | None = None,
        infer: bool = True,
        prompt: str | None = None,
    ) -> JSON:
        """Extract facts from the messages and store them: `{"results": [events]}`."""
        return dict(
            self.client.memories.add(
                messages,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                prompt=prompt,
                infer=infer,
            )
        )

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = _http.MAX_PAGE_SIZE,
        filters: JSON | None = None,
        threshold: float | None = None,
    ) -> JSON:
        """The best matches, best first: `{"results": [memory with score]}`."""
        page = self.client.memories.search(
            query,
            limit=limit,
            min_similarity=threshold,
            **_http.body(user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters),
        )
        return {"results": [mem0_memory(hit) for hit in page["results"]]}

    def get(self, memory_id: str) -> JSON:
        return mem0_memory(self.client.memories.get(memory_id))

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = _http.MAX_PAGE_SIZE,
        filters: JSON | None = None,
    ) -> JSON:
        """Up to `limit` memories of the scope, newest first: `{"results": [...]}`."""
        results: list[JSON] = []
        scope = _http.body(user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters)
        for memory in self.client.memories.iter(page_size=min(limit, _http.MAX_PAGE_SIZE), **scope):
            if len(results) >= limit:
                break
            results.append(mem0_memory(memory))
        return {"results": results}

    def update(self, memory_id: str, data: str) -> JSON:
        """Replace the memory's text (a new version; history keeps the old one)."""
        memory = self.client.memories.update(memory_id, content=data)
        return {"message": "Memory updated successfully!", **mem0_memory(memory)}

    def delete(self, memory_id: str) -> JSON:
        self.client.memories.delete(memory_id)
        return {"message": "Memory deleted successfully!"}

    def delete_all(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> JSON:
        """Delete every memory of one scope (a scope is required, as in mem0)."""
        if not (user_id or agent_id or run_id):
            raise ValidationError(
                "delete_all needs user_id, agent_id or run_id",
                fields={"user_id": ["give user_id, agent_id or run_id"]},
            )
        deleted = self.client.memories.delete_scope(
            user_id=user_id, agent_id=agent_id, run_id=run_id
        )
        return {"message": "Memories deleted successfully!", **deleted}

    def history(self, memory_id: str) -> list[JSON]:
        """The memory's changes, oldest first, with mem0's `old_memory` / `new_memory`."""
        return [mem0_history(entry) for entry in self.client.memories.history(memory_id)]

    def reset(self) -> JSON:
        """Delete everything in the key's project (needs an admin key)."""
        return {"message": "Memory store reset successfully!", **self.client.reset()}

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
