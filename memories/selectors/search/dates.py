"""Dates in a question, matched against when memories happened (a hybrid boost).

"Who did Maria have dinner with on May 3, 2023?", "What did John do in August 2023?", "what
did I decide last week": a question that names a day, a month or a time relative to now asks
about what happened then. Hybrid search finds such dates in the question and adds
`weight` (MEMORY_SEARCH_DATE_WEIGHT, option `date_weight`) to the relevance of each candidate
whose date falls in one of them. A memory's date is `occurred_at` (when what it says happened
or was said, given by the writer: an imported conversation, mem0's `timestamp`), else
`created_at`.

Understood, in English: a day ("3 May 2023", "May 3, 2023", "3rd of May, 2023",
"2023-05-03"), a month ("May 2023", "in May": May of any year), a year ("in 2023"),
"yesterday", "today", "last night", "this/last week", "this/last month", "this/last year",
"N days/weeks/months/years ago", and "before"/"after" a day ("the week before August 3,
2023": the two weeks up to it). A day is taken with a day's margin on each side, for the
writer's and the asker's time zones. "May" alone is a verb and needs a day, a year or "in".

On the LoCoMo development conversations, turns stored with their session's date as
`occurred_at`: docs/benchmarks.md ("LoCoMo retrieval").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models.functions import Coalesce
from django.utils import timezone

from memories.models import Memory
from memories.selectors.search_types import SearchHit, SearchQuery
from platformcore.lib.errors import check_unit_interval
from tenants.models import Project

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY_FIRST = re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}\b", re.I)
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b", re.I)
_ISO = re.compile(r"\b(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b")
_MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b", re.I)
_IN_MONTH = re.compile(rf"\b(?:in|during|since|of|early|late|mid)\s+{_MONTH}\b(?!\s+\d)", re.I)
_IN_YEAR = re.compile(rf"\b(?:in|during|since|of)\s+{_YEAR}\b", re.I)
_AGO = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six)\s+(?P<unit>day|week|month|year)s?\s+ago\b", re.I
)
_RELATIVE = re.compile(
    r"\b(?P<what>yesterday|today|tonight|last night"
    r"|(?:this|last|past) (?:week|weekend|month|year))\b",
    re.I,
)
_BEFORE_AFTER = re.compile(r"\b(?P<side>before|after|since)\s*$", re.I)
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_MARGIN = timedelta(days=1)
_AROUND = timedelta(days=14)  # "before"/"after" a day


@dataclass(frozen=True)
class Window:
    """A time span [start, end), or a month of any year (`month`, when start is None)."""

    start: datetime | None = None
    end: datetime | None = None
    month: int | None = None

    def holds(self, moment: datetime) -> bool:
        if self.month is not None:
            return moment.month == self.month
        return self.start <= moment < self.end  # type: ignore[operator]


def question_dates(text: str, now: datetime | None = None) -> list[Window]:
    """The time spans a question names (see the module docstring); [] when none."""
    now = now or timezone.now()
    windows: list[Window] = []
    taken: list[tuple[int, int]] = []

    def free(match: re.Match[str]) -> bool:
        return not any(match.start() < end and start < match.end() for start, end in taken)

    for pattern in (_DAY_FIRST, _MONTH_FIRST, _ISO):
        for match in pattern.finditer(text):
            if not free(match):
                continue
            day = _day(match)
            if day is None:
                continue
            taken.append(match.span())
            windows.append(_around_day(day, _BEFORE_AFTER.search(text[: match.start()])))
    for match in _MONTH_YEAR.finditer(text):
        if free(match):
            taken.append(match.span())
            year, month = int(match["year"]), MONTHS[match["month"].lower()]
            windows.append(_span(date(year, month, 1), _next_month(year, month)))
    for match in _IN_MONTH.finditer(text):
        if free(match):
            taken.append(match.span())
            windows.append(Window(month=MONTHS[match["month"].lower()]))
    for match in _IN_YEAR.finditer(text):
        if free(match):
            taken.append(match.span())
            year = int(match["year"])
            windows.append(_span(date(year, 1, 1), date(year + 1, 1, 1)))
    windows.extend(_relative(text, now))
    return windows


def _day(match: re.Match[str]) -> date | None:
    month = match["month"]
    number = int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]
    try:
        return date(int(match["year"]), number, int(match["day"]))
    except ValueError:
        return None


def _around_day(day: date, side: re.Match[str] | None) -> Window:
    start = datetime.combine(day, datetime.min.time(), tzinfo=UTC)
    if side is None:
        return Window(start - _MARGIN, start + timedelta(days=1) + _MARGIN)
    if side["side"].lower() == "before":
        return Window(start - _AROUND, start + timedelta(days=1) + _MARGIN)
    return Window(start - _MARGIN, start + _AROUND)


def _span(first: date, after_last: date) -> Window:
    return Window(
        datetime.combine(first, datetime.min.time(), tzinfo=UTC) - _MARGIN,
        datetime.combine(after_last, datetime.min.time(), tzinfo=UTC) + _MARGIN,
    )


def _next_month(year: int, month: int) -> date:
    return date(year + month // 12, month % 12 + 1, 1)


def _relative(text: str, now: datetime) -> list[Window]:
    today = now.astimezone(UTC).date()
    windows = []
    for match in _RELATIVE.finditer(text):
        what = match["what"].lower().replace("past", "last")
        if what in ("today", "tonight"):
            windows.append(_span(today, today + timedelta(days=1)))
        elif what in ("yesterday", "last night"):
            windows.append(_span(today - timedelta(days=1), today))
        elif what == "this week":
            windows.append(_span(today - timedelta(days=today.weekday()), today + timedelta(1)))
        elif what in ("last week", "last weekend"):
            monday = today - timedelta(days=today.weekday() + 7)
            windows.append(_span(monday, monday + timedelta(days=7)))
        elif what == "this month":
            windows.append(_span(today.replace(day=1), today + timedelta(days=1)))
        elif what == "last month":
            first = (today.replace(day=1) - timedelta(days=1)).replace(day=1)
            windows.append(_span(first, today.replace(day=1)))
        elif what == "this year":
            windows.append(_span(date(today.year, 1, 1), today + timedelta(days=1)))
        elif what == "last year":
            windows.append(_span(date(today.year - 1, 1, 1), date(today.year, 1, 1)))
    for match in _AGO.finditer(text):
        count = _NUMBERS.get(match["n"].lower()) or int(match["n"])
        unit = {"day": 1, "week": 7, "month": 30, "year": 365}[match["unit"].lower()]
        if count * unit > 365 * 100:
            continue
        middle = today - timedelta(days=count * unit)
        half = timedelta(days=max(1, unit // 2))
        windows.append(_span(middle - half, middle + half))
    return windows


# --- the boost ------------------------------------------------------------------------------


def date_weight(query: SearchQuery) -> float:
    weight = query.options.get("date_weight")
    weight = settings.MEMORY_SEARCH_DATE_WEIGHT if weight is None else weight
    return check_unit_interval("date_weight", weight)


def prepare_dates(*, project: Project, query: SearchQuery) -> list[Window]:
    """The question's time spans (none when the boost is off): no database work."""
    del project
    return question_dates(query.text) if date_weight(query) else []


def date_boost(
    *, project: Project, query: SearchQuery, hits: list[SearchHit], prepared: Any = None
) -> dict[Any, float]:
    """{memory id: date_weight} for the hits dated within a span the question names. One
    short statement, and only for questions that name a time."""
    windows = prepare_dates(project=project, query=query) if prepared is None else prepared
    if not windows or not hits:
        return {}
    weight = date_weight(query)
    rows = (
        Memory.objects.filter(project=project, pk__in=[hit.memory.pk for hit in hits])
        .annotate(when=Coalesce("occurred_at", "created_at"))
        .values_list("pk", "when")
    )
    return {pk: weight for pk, when in rows if any(w.holds(when) for w in windows)}


date_boost.boost_name = "date"  # type: ignore[attr-defined]
date_boost.prepare = prepare_dates  # type: ignore[attr-defined]
