"""The shared "limits" cache on PostgreSQL when there is no Redis: Django's database cache,
with each write one statement.

Django's `DatabaseCache` writes a key in five round trips: it counts the table's rows (to
decide whether to cull), then in a transaction of its own reads the key and updates or inserts
it. Every write to a memory moves its project's search-cache generation in this cache once the
transaction commits (platformcore/lib/result_cache.py), so a single store paid those five
round trips once or twice, on a busy server each a wait for PostgreSQL to be scheduled.

Here `set`, `set_many`, `add` and `touch` are one `INSERT ... ON CONFLICT` or `UPDATE` each
(atomic on their own, so concurrent writers of one key are safe without the transaction),
and expired rows are culled every `CULL_EVERY` writes of a process instead of counted on every
write. Reads, deletes, the table (`createcachetable`) and the stored format (pickled, base64)
are Django's own, so the table a running deployment has keeps working.
"""

from __future__ import annotations

import base64
import pickle
import threading
from datetime import UTC, datetime
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache
from django.db import connections, router
from django.utils.timezone import now as tz_now

CULL_EVERY = 500  # writes of a process between two sweeps of expired rows


class PostgresCache(DatabaseCache):
    def __init__(self, table: str, params: dict[str, Any]) -> None:
        super().__init__(table, params)
        self._writes = 0
        self._writes_lock = threading.Lock()

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> None:
        self.set_many({key: value}, timeout, version)

    def set_many(
        self, data: dict[Any, Any], timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> list[Any]:
        if not data:
            return []
        expires = self._expiry(timeout)
        rows = [(self.make_and_validate_key(k, version=version), v) for k, v in data.items()]
        values = ", ".join(["(%s, %s, %s)"] * len(rows))
        params: list[Any] = []
        for key, value in sorted(rows):  # one order for every writer: no deadlock between two
            params += [key, self._encode(value), expires]
        self._write(
            f"INSERT INTO {self._quoted_table()} AS t (cache_key, value, expires) VALUES {values}"
            " ON CONFLICT (cache_key) DO UPDATE SET value = EXCLUDED.value,"
            " expires = EXCLUDED.expires",
            params,
        )
        return []

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> bool:
        """Store `value` unless `key` holds a live value; True if it was stored."""
        key = self.make_and_validate_key(key, version=version)
        rows = self._write(
            f"INSERT INTO {self._quoted_table()} AS t (cache_key, value, expires)"
            " VALUES (%s, %s, %s) ON CONFLICT (cache_key) DO UPDATE SET"
            " value = EXCLUDED.value, expires = EXCLUDED.expires WHERE t.expires < %s"
            " RETURNING 1",
            [key, self._encode(value), self._expiry(timeout), self._now()],
        )
        return bool(rows)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        rows = self._write(
            f"UPDATE {self._quoted_table()} SET expires = %s"
            " WHERE cache_key = %s AND expires >= %s RETURNING 1",
            [self._expiry(timeout), key, self._now()],
        )
        return bool(rows)

    def _write(self, sql: str, params: list[Any]) -> list[Any]:
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            rows = cursor.fetchall() if cursor.description else []
            if self._due_for_cull():  # Django's cull: expired rows, then a share past the cap
                cursor.execute(f"SELECT COUNT(*) FROM {self._quoted_table()}")
                self._cull(db, cursor, self._now(), cursor.fetchone()[0])
        return rows

    def _due_for_cull(self) -> bool:
        with self._writes_lock:
            self._writes += 1
            return self._writes % CULL_EVERY == 0

    def _quoted_table(self) -> str:
        connection = connections[router.db_for_write(self.cache_model_class)]
        return connection.ops.quote_name(self._table)  # type: ignore[no-any-return]

    def _expiry(self, timeout: Any) -> datetime:
        seconds = self.get_backend_timeout(timeout)
        if seconds is None:
            return datetime.max.replace(tzinfo=UTC, microsecond=0)
        return datetime.fromtimestamp(seconds, tz=UTC).replace(microsecond=0)

    def _now(self) -> datetime:
        return tz_now().replace(microsecond=0)

    def _encode(self, value: Any) -> str:
        return base64.b64encode(pickle.dumps(value, self.pickle_protocol)).decode("latin1")
