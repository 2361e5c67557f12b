"""Where a request's time went, stage by stage: the `Server-Timing` of a response.

Code marks a stage with `with stage("keyword"):`; inside a request the time is added to the
request's record (a stage entered twice counts both times), anywhere else it costs one
`perf_counter` pair and is dropped. The first middleware (memoryplatform/request_observation.py)
opens the record and answers with it in the W3C `Server-Timing` header, which a browser's
developer tools draw and any client can read:

    Server-Timing: keyword;dur=3.1, embed;dur=4.6, vector;dur=2.9, ..., total;dur=14.8

Stages that run at the same time on two threads (hybrid search's keyword and semantic sides)
each show their own time; `total` is the request's wall time in the server, so stages may sum
to more than it. Work on another thread reaches the record when handed over with
`carrying(work)`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class Record:
    """Seconds by stage, in the order the stages were first entered."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def header(self, total_seconds: float) -> str:
        """The `Server-Timing` value: each stage's milliseconds, then `total`."""
        with self._lock:
            parts = [f"{name};dur={seconds * 1000:.1f}" for name, seconds in self.seconds.items()]
        return ", ".join([*parts, f"total;dur={total_seconds * 1000:.1f}"])


_record: ContextVar[Record | None] = ContextVar("stages", default=None)


@contextmanager
def recording() -> Iterator[Record]:
    """Collect the stages of the code run in the block (a request, a benchmark's call)."""
    record = Record()
    token = _record.set(record)
    try:
        yield record
    finally:
        _record.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as stage `name` of the current record, if any."""
    record = _record.get()
    if record is None:
        yield
        return
    started = time.perf_counter()
    try:
        yield
    finally:
        record.add(name, time.perf_counter() - started)


def carrying(work: Callable[[], T]) -> Callable[[], T]:
    """`work` bound to the caller's record, to run on another thread (whose context is its own)."""
    record = _record.get()
    if record is None:
        return work

    def run() -> T:
        token = _record.set(record)
        try:
            return work()
        finally:
            _record.reset(token)

    return run
