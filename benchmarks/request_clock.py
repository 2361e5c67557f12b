"""Requests sent one at a time with every SQL statement timed from the client side and grouped
by its shape (literals removed): the loop `store_profile` and `search_profile` share."""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchmarks.common import percentiles

LITERALS = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b|%s")
SAVEPOINT = re.compile(r'"s\d+_x\d+"')  # Django names each savepoint after its thread
SPACES = re.compile(r"\s+")


def shape(sql: str) -> str:
    """A statement without its literals, shortened: statements of one kind group together."""
    text = SPACES.sub(" ", LITERALS.sub("?", SAVEPOINT.sub("?", sql))).strip()
    text = re.sub(r"\(\?(?:, ?\?)+\)", "(?…)", text)
    return text[:150]


class StatementClock:
    """A connection execute wrapper adding each statement's time to its shape."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = defaultdict(float)
        self.count: dict[str, int] = defaultdict(int)
        self.request_ms = 0.0
        self.request_count = 0

    def __call__(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            key = shape(sql)
            self.ms[key] += elapsed
            self.count[key] += 1
            self.request_ms += elapsed
            self.request_count += 1


@dataclass
class Timings:
    """Per measured request: wall time, SQL time and statement count; the clock's totals."""

    clock: StatementClock = field(default_factory=StatementClock)
    wall: list[float] = field(default_factory=list)
    sql: list[float] = field(default_factory=list)
    statements: list[int] = field(default_factory=list)
    stages: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    measuring: bool = False

    def note_stages(self, response: Any) -> None:
        """Keep a measured response's `Server-Timing` (platformcore/lib/stages.py): ms by stage."""
        if not self.measuring:
            return
        for part in response.get("Server-Timing", "").split(","):
            name, _, duration = part.strip().partition(";dur=")
            if duration:
                self.stages[name].append(float(duration))

    def stage_rows(self) -> list[list[Any]]:
        """[stage, p50, p95, mean, share of requests] from `Server-Timing`, in request order; a
        stage a request did not go through counts 0 for it."""
        measured = len(self.wall)
        rows = []
        for name, values in self.stages.items():
            spread = percentiles(values + [0.0] * (measured - len(values)))
            share = len(values) / measured
            mean = sum(values) / measured
            rows.append([name, spread["p50"], spread["p95"], round(mean, 2), round(share, 2)])
        return rows

    def statement_rows(self, top: int) -> list[list[Any]]:
        """[ms per request, count per request, shape] of the `top` costliest shapes."""
        measured = len(self.wall)
        rows = sorted(self.clock.ms.items(), key=lambda pair: -pair[1])[:top]
        return [
            [round(ms / measured, 2), round(self.clock.count[text] / measured, 2), text]
            for text, ms in rows
        ]


def timed_requests(
    send: Callable[[int], None],
    count: int,
    warmup: int,
    measuring: Callable[[], None] | None = None,
    timings: Timings | None = None,
) -> Timings:
    """Call `send(index)` for each of `count` requests; the first `warmup` are not measured
    (`measuring` is called when measuring starts). `send` may hand its response to the
    timings' `note_stages` (given, or returned), which keeps the measured ones."""
    from django.db import connection

    timings = timings or Timings()
    clock = timings.clock
    with connection.execute_wrapper(clock):
        for index in range(count):
            if index == warmup:
                clock.ms.clear()
                clock.count.clear()
                timings.measuring = True
                if measuring is not None:
                    measuring()
            clock.request_ms, clock.request_count = 0.0, 0
            started = time.perf_counter()
            send(index)
            elapsed = (time.perf_counter() - started) * 1000
            if index >= warmup:
                timings.wall.append(elapsed)
                timings.sql.append(clock.request_ms)
                timings.statements.append(clock.request_count)
    return timings
