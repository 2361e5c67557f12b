"""django-q2's Redis queue, with jobs acknowledged: what a killed worker had taken runs again.

django-q2's own Redis broker takes a job with BLPOP and forgets it: a worker killed while it
ran the job (or while the job waited in the cluster's in-memory queue) loses it for good, and
its `acknowledge` does nothing. This broker (Q_CLUSTER["broker_class"] when REDIS_URL is set)
moves a job it hands out from the list into a sorted set of taken jobs, scored with the time it
is due back: now + Q_CLUSTER["retry"] (MEMORY_JOB_TIMEOUT + 60, past the job's own timeout).
The cluster's monitor acknowledges a job once the worker's result is in (a success, or a failure
when `ack_failures` says so, or the last of `max_attempts`), which removes it; any cluster's next
take first puts every overdue job back on the list. The PostgreSQL queue (django-q2's ORM broker)
works the same way with its `lock` column.

Taking and putting back are one Lua script each, atomic on the server and timed by the
server's clock, so several clusters on several hosts can share the queue. A job can run twice
(its worker died after the work, before the acknowledgement): jobs are idempotent.
"""

from __future__ import annotations

import logging
from time import sleep
from typing import Any

from django_q.brokers.redis_broker import Redis
from django_q.conf import Conf

logger = logging.getLogger(__name__)

# KEYS: the list, the taken set; ARGV: seconds until a taken job is due back, how many to take.
# Returns {how many overdue jobs went back on the list, the jobs taken...}.
_TAKE = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local overdue = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, 1000)
for _, job in ipairs(overdue) do
    redis.call('ZREM', KEYS[2], job)
    redis.call('RPUSH', KEYS[1], job)
end
local taken = {#overdue}
for _ = 1, tonumber(ARGV[2]) do
    local job = redis.call('LPOP', KEYS[1])
    if not job then break end
    redis.call('ZADD', KEYS[2], now + tonumber(ARGV[1]), job)
    taken[#taken + 1] = job
end
return taken
"""


class AcknowledgedRedis(Redis):
    """The Redis broker, whose jobs stay taken until acknowledged (see the module)."""

    @property
    def taken_key(self) -> str:
        return f"{self.list_key}:taken"

    def dequeue(self) -> list[tuple[Any, Any]] | None:
        """Up to Q_CLUSTER["bulk"] jobs as (ack id, payload): the payload is its own id (each
        carries the job's unique id). An empty queue waits `poll` seconds, as the ORM's does."""
        script = self.connection.register_script(_TAKE)
        result = script(keys=[self.list_key, self.taken_key], args=[Conf.RETRY, Conf.BULK])
        overdue, jobs = int(result[0]), result[1:]
        if overdue:
            logger.warning(
                "%d job(s) handed out again: taken more than %s s ago and never acknowledged "
                "(their worker died)",
                overdue,
                Conf.RETRY,
            )
        if jobs:
            return [(job, job) for job in jobs]
        sleep(Conf.POLL)
        return None

    def acknowledge(self, task_id: Any) -> None:
        self.connection.zrem(self.taken_key, task_id)

    def fail(self, task_id: Any) -> None:
        """A job that cannot be read (a bad signature): dropped, as the ORM broker drops it."""
        self.acknowledge(task_id)

    def delete(self, task_id: Any) -> None:
        self.acknowledge(task_id)

    def lock_size(self) -> int:
        """Jobs taken and not yet acknowledged (running, or lost with a worker until due)."""
        return int(self.connection.zcard(self.taken_key))

    def delete_queue(self) -> Any:
        return self.connection.delete(self.list_key, self.taken_key)

    def purge_queue(self) -> Any:
        self.connection.delete(self.taken_key)
        return super().purge_queue()
