"""`Memory` and `AsyncMemory`: mem0's open-source `Memory` API in this process, over the
platform's own services (the REST API calls the same ones), with no server and no key.

    from memory_platform import Memory
    m = Memory()                                    # the embedded store, one default project
    m.add("My name is Bob", user_id="bob")          # {"results": [{"event": "ADD", ...}]}
    m.search("what is my name?", user_id="bob")

The scope may be given as arguments (`user_id=`, as the fact-memory specification writes
it) or inside `filters` (`filters={"user_id": "bob"}`, as mem0's newer releases do); at least
one of user_id, agent_id, run_id, else ScopeError. docs/compat-mem0.md, "In-process".
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any, TypeVar

from django.db import connection

from memory_platform.config import Plan, plan_of
from memory_platform.setup import open_store

logger = logging.getLogger(__name__)
T = TypeVar("T")
Scope = str | int | None


def _scope(user_id: Scope, agent_id: Scope, run_id: Scope) -> dict[str, str | None]:
    """mem0 accepts integer ids and reads them as strings."""
    given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    return {name: None if value is None else str(value) for name, value in given.items()}


class Memory:
    """Long-term memory in this process: `add`, `search`, `get`, `get_all`, `update`,
    `delete`, `delete_all`, `history`, `reset`, and the knowledge graph's `entities` and
    `relations`. `Memory(config)` or `Memory.from_config(config)`: config/plan_of."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        self._plan: Plan = plan_of(config)
        for note in self._plan.notes:
            logger.info("configuration: %s", note)
        self._project_id = open_store(self._plan)
        from memory_platform import bridge  # Django is configured now

        self._bridge: ModuleType = bridge

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> Memory:
        return cls(config_dict)

    @property
    def project(self) -> str:
        """The slug of the project this instance reads and writes."""
        return self._plan.project

    def add(
        self,
        messages: str | dict[str, Any] | list[dict[str, Any]],
        *,
        user_id: Scope = None,
        agent_id: Scope = None,
        run_id: Scope = None,
        metadata: dict[str, Any] | None = None,
        filters: dict[str, Any] | None = None,
        prompt: str | None = None,
        infer: bool = True,
    ) -> dict[str, Any]:
        """Facts extracted from `messages` (an LLM if configured, offline otherwise) and
        reconciled with the scope's memories: `{"results": [ADD/UPDATE/DELETE/NONE events]}`.
        `prompt` replaces the extraction prompt for this call; `infer=False` stores each user
        and assistant message as given."""
        data = {
            "messages": messages,
            **_scope(user_id, agent_id, run_id),
            "metadata": metadata,
            "filters": filters,
            "prompt": prompt if prompt is not None else self._plan.prompt,
            "infer": infer,
        }
        return self._bridge.add(self._project_id, data, graph=self._plan.graph)

    def search(
        self,
        query: str,
        *,
        user_id: Scope = None,
        agent_id: Scope = None,
        run_id: Scope = None,
        limit: int | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
        threshold: float | None = None,
    ) -> dict[str, Any]:
        """The scope's memories best matching `query` (hybrid: keywords, meaning, the
        graph), each with its `score`; at most `limit` (or `top_k`; 100)."""
        data = {"query": query, **_scope(user_id, agent_id, run_id), "filters": filters}
        data |= {"limit": limit, "top_k": top_k, "threshold": threshold}
        return self._bridge.search(self._project_id, data, graph=self._plan.graph)

    def get(self, memory_id: str) -> dict[str, Any] | None:
        """One memory, or None."""
        return self._bridge.get(self._project_id, str(memory_id))

    def get_all(
        self,
        *,
        user_id: Scope = None,
        agent_id: Scope = None,
        run_id: Scope = None,
        limit: int | None = None,
        top_k: int | None = None,
        filters: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The scope's memories, newest first: at most `limit` (or `top_k`; 100, at most
        1,000)."""
        data = {**_scope(user_id, agent_id, run_id), "filters": filters}
        return self._bridge.get_all(self._project_id, data | {"limit": limit, "top_k": top_k})

    def update(
        self,
        memory_id: str,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        data: str | None = None,
    ) -> dict[str, str]:
        """New text (re-embedded, versioned, in history) and/or metadata. `data` is mem0's
        older name for `text`."""
        changes = {"text": text if text is not None else data, "metadata": metadata}
        return self._bridge.update(self._project_id, str(memory_id), changes)

    def delete(self, memory_id: str) -> dict[str, str]:
        """Soft delete: gone from every read, kept in history (restorable over REST)."""
        return self._bridge.delete(self._project_id, str(memory_id))

    def delete_all(
        self, *, user_id: Scope = None, agent_id: Scope = None, run_id: Scope = None
    ) -> dict[str, Any]:
        """Every memory of one scope; never without a scope (reset() wipes everything)."""
        return self._bridge.delete_all(self._project_id, _scope(user_id, agent_id, run_id))

    def history(self, memory_id: str) -> list[dict[str, Any]]:
        """The memory's changes, oldest first (ADD, UPDATE, DELETE, ...); [] if unknown."""
        return self._bridge.history(self._project_id, str(memory_id))

    def reset(self) -> None:
        """Delete every memory of the project, its history and its graph, for good."""
        self._bridge.reset(self._project_id)

    def entities(
        self,
        *,
        user_id: Scope = None,
        agent_id: Scope = None,
        run_id: Scope = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """The knowledge graph's entities the scope sees: `{"results": [{name, type, ...}]}`."""
        data = {**_scope(user_id, agent_id, run_id), "limit": limit}
        return self._bridge.entities(self._project_id, data)

    def relations(
        self, name: str, *, user_id: Scope = None, agent_id: Scope = None, run_id: Scope = None
    ) -> dict[str, Any]:
        """The relations of the entity `name` valid now: `{source, relationship, destination}`."""
        return self._bridge.relations(self._project_id, name, _scope(user_id, agent_id, run_id))

    def close(self) -> None:
        """Close this thread's database connection (the store stays open for the process)."""
        connection.close()


_executor: ThreadPoolExecutor | None = None
_executor_pid: int | None = None


def _threads() -> ThreadPoolExecutor:
    """A few threads of our own for AsyncMemory (each holds one database connection)."""
    global _executor, _executor_pid
    if _executor is None or _executor_pid != os.getpid():
        _executor, _executor_pid = ThreadPoolExecutor(4, thread_name_prefix="memory"), os.getpid()
    return _executor


def _off_loop(method: Callable[..., T]) -> Callable[..., Any]:
    @functools.wraps(method)
    async def run(self: AsyncMemory, *args: Any, **kwargs: Any) -> T:
        call = functools.partial(getattr(self._memory, method.__name__), *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(_threads(), call)

    return run


class AsyncMemory:
    """`Memory` for asyncio code: the same methods as coroutines. The platform's database
    layer is synchronous, so each call runs on one of a few worker threads and never blocks
    the event loop."""

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        # opened on a worker thread: the database refuses to be called from an event loop
        self._memory = _threads().submit(Memory, config).result()

    @classmethod
    def from_config(cls, config_dict: dict[str, Any]) -> AsyncMemory:
        return cls(config_dict)

    @property
    def project(self) -> str:
        return self._memory.project

    add = _off_loop(Memory.add)
    search = _off_loop(Memory.search)
    get = _off_loop(Memory.get)
    get_all = _off_loop(Memory.get_all)
    update = _off_loop(Memory.update)
    delete = _off_loop(Memory.delete)
    delete_all = _off_loop(Memory.delete_all)
    history = _off_loop(Memory.history)
    reset = _off_loop(Memory.reset)
    entities = _off_loop(Memory.entities)
    relations = _off_loop(Memory.relations)
