"""Bookkeeping written after the answer: merged in memory, written by one thread per process.

Some writes only keep count of what callers did (a memory was read, a search was answered).
They must cost the request nothing: `DeferredWrites.add` merges the item into what is pending
and, if nothing is scheduled yet, schedules one write `delay()` seconds later on a thread of its
own (with a database connection of that thread). A busy server then makes one small write per
interval, not one per request. What is pending is written at the latest when the process exits
normally; a crash loses at most one interval of counts. A forked child starts empty: its
parent's pending items are written once, by the parent.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

from platformcore.lib.db_threads import executor_with_connections, with_connection

logger = logging.getLogger(__name__)

P = TypeVar("P")  # what is pending: a dict of merged items


class DeferredWrites(Generic[P]):
    """Pending items of one kind, and the one thread that writes them."""

    def __init__(
        self,
        name: str,
        *,
        empty: Callable[[], P],
        write: Callable[[P], int],
        delay: Callable[[], float],
    ) -> None:
        self.name, self._empty, self._write, self._delay = name, empty, write, delay
        self._lock = threading.Lock()
        self._pending: P = empty()
        self._scheduled = False
        self._executor: tuple[int, ThreadPoolExecutor] | None = None
        atexit.register(self._flush_at_exit)
        os.register_at_fork(after_in_child=self._forget)

    def add(self, merge: Callable[[P], None]) -> None:
        """`merge(pending)` under the lock, then make sure a write is scheduled."""
        with self._lock:
            merge(self._pending)
            if not self._scheduled:
                try:
                    self._thread().submit(with_connection, self._flush_after_delay)
                    self._scheduled = True
                except RuntimeError:  # the interpreter is exiting: the exit flush has them
                    pass

    def flush(self) -> int:
        """Write what is pending now (process exit, tests); returns what `write` returns."""
        with self._lock:
            pending, self._pending, self._scheduled = self._pending, self._empty(), False
        return self._write(pending)

    def _flush_after_delay(self) -> None:
        time.sleep(self._delay())
        try:
            self.flush()
        except Exception:  # the requests were answered; their bookkeeping is what is lost
            logger.exception("%s: deferred write failed", self.name)

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:
            logger.warning("%s: pending items not written at exit", self.name, exc_info=True)

    def _forget(self) -> None:
        """In a forked child: the parent's items are the parent's to write (once), and its
        lock and thread are not this process's."""
        self._lock = threading.Lock()
        self._pending, self._scheduled = self._empty(), False

    def _thread(self) -> ThreadPoolExecutor:
        pid = os.getpid()  # a forked process starts a thread of its own
        if self._executor is None or self._executor[0] != pid:
            self._executor = (pid, executor_with_connections(1, self.name))
        return self._executor[1]
