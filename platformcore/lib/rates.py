"""Rates written as text ("600/min", "10/s", "none"): what settings, environment variables and
a project's `limits` say, parsed once into a `Rate`."""

from __future__ import annotations

import functools
from dataclasses import dataclass

PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60}
PERIODS |= {"h": 3600, "hour": 3600, "d": 86400, "day": 86400}
UNLIMITED = {"none", "off", "unlimited"}


@dataclass(frozen=True)
class Rate:
    """At most `requests` in each window of `seconds`."""

    requests: int
    seconds: int

    @property
    def per(self) -> str:
        """The window in words: "minute"."""
        return {1: "second", 60: "minute", 3600: "hour", 86400: "day"}[self.seconds]

    def __str__(self) -> str:
        return f"{self.requests}/{self.per}"


@functools.lru_cache(maxsize=256)
def parse_rate(text: str | None) -> Rate | None:
    """`"<n>/<period>"` (period s, min, hour or day, singular or plural) as a Rate; None, ""
    or "none": no limit. A ValueError says what is wrong."""
    if text is None or text.strip().lower() in UNLIMITED | {""}:
        return None
    count, _, period = text.strip().lower().partition("/")
    seconds = PERIODS.get(period) or PERIODS.get(period.removesuffix("s"))
    if not count.isdigit() or int(count) < 1 or seconds is None:
        raise ValueError(f"{text!r} is not a rate: write <n>/<s|min|hour|day>, or none")
    return Rate(int(count), seconds)
