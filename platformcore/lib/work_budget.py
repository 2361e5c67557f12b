"""A per-project budget for the expensive requests (`add`, bulk writes, document uploads,
graph bulk, reflection, consolidation): at most `slots` of one project run at once in a server
process, the next wait *in the event loop* (holding no request thread) for at most `wait`
seconds, and past that, or past `queue` already waiting, get `429` with `Retry-After`. One
project's heavy requests queue behind each other, never in front of other projects' searches,
which keep every request thread but the budget's (docs/security.md, "Work per request").

A request is charged to its project before its view runs, so before authentication: the
project of a credential is remembered once a request has authenticated with it
(`note_credential`, called by the API-key authentication); a credential not seen yet is its
own budget until then. Credentials are kept as SHA-256 digests, a bounded number of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass

_MAX_CREDENTIALS = 10_000


class ProjectBusy(Exception):
    """The project already runs (and queues) what its budget allows."""

    def __init__(self, waited: bool) -> None:
        super().__init__("waited" if waited else "queue full")
        self.waited = waited


@dataclass
class _Lane:
    running: int = 0
    waiting: int = 0
    freed: asyncio.Event | None = None


class _Credentials:
    """Credential digest -> project id, most recent last (thread-safe: request threads write)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._projects: OrderedDict[str, int] = OrderedDict()

    def note(self, raw: str, project_id: int) -> None:
        digest = _digest(raw)
        with self._lock:
            self._projects[digest] = project_id
            self._projects.move_to_end(digest)
            while len(self._projects) > _MAX_CREDENTIALS:
                self._projects.popitem(last=False)

    def lane_of(self, raw: str) -> str:
        digest = _digest(raw)
        with self._lock:
            project = self._projects.get(digest)
        return f"project:{project}" if project is not None else f"credential:{digest}"


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


credentials = _Credentials()


def note_credential(raw: str, project_id: int) -> None:
    """A request authenticated with `raw` for `project_id`: its later heavy requests are
    charged to that project."""
    credentials.note(raw, project_id)


class WorkBudget:
    """The lanes of one event loop (a server process): each lane (a project) runs at most
    `slots` requests at once and lets at most `queue` wait, each up to `wait` seconds."""

    def __init__(self, *, slots: int, queue: int, wait: float) -> None:
        self.slots, self.queue, self.wait = slots, queue, wait
        self._lanes: dict[str, _Lane] = {}

    @contextlib.asynccontextmanager
    async def slot(self, lane_name: str) -> AsyncIterator[None]:
        lane = self._lanes.setdefault(lane_name, _Lane())
        await self._enter(lane)
        try:
            yield
        finally:
            lane.running -= 1
            if lane.freed is not None:
                lane.freed.set()
            if not lane.running and not lane.waiting:
                self._lanes.pop(lane_name, None)

    async def _enter(self, lane: _Lane) -> None:
        if lane.running < self.slots:
            lane.running += 1
            return
        if lane.waiting >= self.queue:
            raise ProjectBusy(waited=False)
        lane.waiting += 1
        deadline = asyncio.get_running_loop().time() + self.wait
        try:
            while lane.running >= self.slots:
                left = deadline - asyncio.get_running_loop().time()
                if left <= 0:
                    raise ProjectBusy(waited=True)
                lane.freed = lane.freed or asyncio.Event()
                lane.freed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lane.freed.wait(), left)
            lane.running += 1
        finally:
            lane.waiting -= 1
