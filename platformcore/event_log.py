"""The live feed's replay buffer: every event gets an id, and a client that reconnects asks for
what it missed (`Last-Event-ID` on SSE, `last_event_id` on the websocket).

Ids increase with each event of a project, in the order events are sent after their commits.
The buffer keeps the newest `MEMORY_EVENT_REPLAY` events of each project: in a Redis stream
per project when REDIS_URL is set (every server process shares it), in a table otherwise.
A client that was away longer than the buffer covers gets what is left and can tell from the
gap in ids.
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any, Protocol

from django.conf import settings
from django.db import connection

from platformcore.lib.project_scope import project_scope
from platformcore.models import EventRecord

if TYPE_CHECKING:
    from platformcore.events import Event

TRIM_EVERY = 100  # trim a project's table rows when its ids cross a multiple of this


class EventLog(Protocol):
    def append(self, project_id: int, events: list[Event]) -> list[Event]: ...

    def since(self, project_id: int, last_id: int, limit: int) -> list[Event]: ...


class DatabaseEventLog:
    def append(self, project_id: int, events: list[Event]) -> list[Event]:
        # one INSERT of every event, in a transaction of its own (after the write's commit):
        # a single statement, so no BEGIN and COMMIT around it
        rows = ", ".join(["(%s, %s, %s, %s::jsonb)"] * len(events))
        params: list[Any] = []
        for event in events:
            params += [project_id, event["type"], event["at"], json.dumps(event)]
        with project_scope(project_id), connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO memoryplatform_eventrecord (project_id, type, at, body)"
                f" VALUES {rows} RETURNING id",
                params,
            )
            ids = sorted(row[0] for row in cursor.fetchall())
            numbered = [{**event, "id": pk} for event, pk in zip(events, ids, strict=True)]
            first, last = ids[0], ids[-1]
            if (first - 1) // TRIM_EVERY != last // TRIM_EVERY:
                self._trim(project_id)
        return numbered  # type: ignore[return-value]

    def since(self, project_id: int, last_id: int, limit: int) -> list[Event]:
        rows = EventRecord.objects.filter(project_id=project_id, id__gt=last_id).order_by("id")
        with project_scope(project_id):  # a stream's replay runs in no request's scope
            return [{**row.body, "id": row.pk} for row in rows[:limit]]

    def _trim(self, project_id: int) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "DELETE FROM memoryplatform_eventrecord WHERE project_id = %(p)s AND id < ("
                " SELECT id FROM memoryplatform_eventrecord WHERE project_id = %(p)s"
                " ORDER BY id DESC OFFSET %(keep)s LIMIT 1)",
                {"p": project_id, "keep": settings.MEMORY_EVENT_REPLAY - 1},
            )


# INCR the project's counter and XADD each event under that number, atomically, so ids in a
# stream always increase even when several processes append at once.
_APPEND = """
local ids = {}
for i = 2, #ARGV do
  local id = redis.call('INCR', KEYS[1])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], id .. '-1', 'e', ARGV[i])
  ids[#ids + 1] = id
end
return ids
"""


class RedisEventLog:
    def __init__(self, url: str) -> None:
        # imported here: only a deployment with REDIS_URL set needs the Redis client
        import redis

        self.redis = redis.Redis.from_url(url)
        self.script = self.redis.register_script(_APPEND)

    def append(self, project_id: int, events: list[Event]) -> list[Event]:
        keys = [f"memory-events:{project_id}:counter", f"memory-events:{project_id}"]
        args = [settings.MEMORY_EVENT_REPLAY, *(json.dumps(e) for e in events)]
        ids = self.script(keys=keys, args=args)
        return [{**event, "id": int(i)} for event, i in zip(events, ids, strict=True)]  # type: ignore[misc]

    def since(self, project_id: int, last_id: int, limit: int) -> list[Event]:
        entries = self.redis.xrange(f"memory-events:{project_id}", f"({last_id}-1", "+", limit)
        return [{**json.loads(fields[b"e"]), "id": _number(entry)} for entry, fields in entries]


def _number(entry_id: Any) -> int:
    return int((entry_id.decode() if isinstance(entry_id, bytes) else entry_id).split("-")[0])


@functools.cache
def event_log() -> EventLog:
    url = settings.REDIS_URL
    return RedisEventLog(url) if url else DatabaseEventLog()
