"""Prometheus metrics: what the platform counts and times, and the `/metrics` exposition.

Every measurement lives here; the places that measure call one small hook each:

- HTTP requests: `memoryplatform.request_observation.RequestObservationMiddleware`
  (`observe_request`),
  labelled by the resolved URL pattern's name (`memory-list`, `admin:index`), never the raw
  path, so a label has as many values as there are routes, not as there are memory ids;
- searches: `memory_search` in `memories/selectors/search/dispatch.py` (`timed_search`), by mode;
- MCP tools: `call()` in `mcpserver/tools/__init__.py` (`mcp_tool_call`), by tool and outcome;
- live feed: the websocket consumer and the SSE stream (`connection_opened` / `_closed`,
  `counted_stream`);
- background jobs: django-q2's `post_execute` signal (`job_finished`, connected in apps.py), by
  task function and outcome.
- maintenance: the rows a job re-embedded and the indexes it rebuilt
  (`maintenance_items`, maintenance/embeddings.py and
  memories/services/keyword_index.py), and each keyword index's estimated bloat
  (`keyword_index_measured`).

Gauges read from the database (queue depth, memories by state) are computed when `/metrics`
is scraped (memoryplatform/gauges.py), not kept up to date by every write.

Processes: with `PROMETHEUS_MULTIPROC_DIR` set, prometheus-client's multiprocess mode is on
(each process writes its values to files in that directory and a scrape adds them up), so
several server processes and the worker cluster report as one. Without it, values live in
this process's registry; `manage.py serve` then gives the worker cluster it starts a directory
of its own (`include_directory`), so job durations still reach the server's `/metrics`.

This module is infrastructure: it imports no app, so every layer may call its hooks.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

R = TypeVar("R")
# The classic text format, which every Prometheus reads (our names need no UTF-8 escaping).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
disable_created_metrics()  # no `_created` series: a third of the output, read by nobody
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUESTS = Counter(
    "memory_http_requests_total",
    "HTTP requests answered, by route (URL pattern name), method and status class.",
    ["route", "method", "status"],
)
REQUEST_SECONDS = Histogram(
    "memory_http_request_duration_seconds",
    "Time to answer an HTTP request (to the response's headers for streams).",
    ["route", "method", "status"],
)
SEARCH_SECONDS = Histogram(
    "memory_search_duration_seconds",
    "Time of a memory search (validated query to ranked page), by mode.",
    ["mode"],
)
TOOL_CALLS = Counter(
    "memory_mcp_tool_calls_total",
    "MCP tool calls, by tool and outcome (ok, error, denied: no key, scope or rate; exception).",
    ["tool", "outcome"],
)
TOOL_SECONDS = Histogram(
    "memory_mcp_tool_call_duration_seconds",
    "Time of an MCP tool call, by tool.",
    ["tool"],
)
LIVE_CONNECTIONS = Gauge(
    "memory_live_connections",
    "Open live-feed connections, by transport (websocket, sse).",
    ["transport"],
    multiprocess_mode="livesum",
)
JOB_SECONDS = Histogram(
    "memory_job_duration_seconds",
    "Time of a background job (django-q2 task), by task function and outcome.",
    ["func", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 1800, float("inf")),
)

MAINTENANCE_ITEMS = Counter(
    "memory_maintenance_items_total",
    "Rows a maintenance job worked on, by job (reembed, keyword_reindex) and target (table or "
    "index).",
    ["job", "target"],
)
KEYWORD_INDEX_BLOAT = Gauge(
    "memory_keyword_index_bloat_ratio",
    "Share of a keyword (GIN) index that is bloat, as last measured by its maintenance job.",
    ["index"],
    multiprocess_mode="mostrecent",
)

_extra_directories: list[Path] = []
_request_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}


# --- hooks ------------------------------------------------------------------------------


def observe_request(*, route: str, method: str, status: int, seconds: float) -> None:
    labels = (route, method if method in METHODS else "other", f"{status // 100}xx")
    children = _request_children.get(labels)
    if children is None:  # bounded: one entry per route, method and status class seen
        children = (REQUESTS.labels(*labels), REQUEST_SECONDS.labels(*labels))
        _request_children[labels] = children
    children[0].inc()
    children[1].observe(seconds)


def timed_search(search: Callable[..., R]) -> Callable[..., R]:
    """Decorates the search dispatcher: times each search that returns, by the mode of its
    result (a registered mode: an unknown one is refused before any search runs)."""

    @functools.wraps(search)
    def timed(*args: Any, **kwargs: Any) -> R:
        started = time.perf_counter()
        result = search(*args, **kwargs)
        SEARCH_SECONDS.labels(result.mode).observe(time.perf_counter() - started)  # type: ignore[attr-defined]
        return result

    return timed


def tool_name(fn: Callable[..., Any]) -> str:
    """The tool a `call()` body belongs to: the function it is defined in (`run` inside
    `memory_search` is `memory_search.<locals>.run`): bounded by the code, not the caller."""
    qualname = getattr(fn, "__qualname__", "") or getattr(fn, "__name__", "")
    return qualname.split(".", 1)[0] or "unknown"


@contextmanager
def mcp_tool_call(tool: str) -> Iterator[None]:
    started = time.perf_counter()
    outcome = "ok"
    try:
        yield
    except Exception as exc:
        outcome = _tool_outcome(exc)
        raise
    finally:
        TOOL_CALLS.labels(tool, outcome).inc()
        TOOL_SECONDS.labels(tool).observe(time.perf_counter() - started)


def _tool_outcome(exc: BaseException) -> str:
    if type(exc).__name__ != "ToolError":  # the MCP SDK's; this module imports no SDK
        return "exception"
    refused = ("unauthenticated", "forbidden", "rate_limited")
    return "denied" if str(exc).startswith(refused) else "error"


def connection_opened(transport: str) -> None:
    LIVE_CONNECTIONS.labels(transport).inc()


def connection_closed(transport: str) -> None:
    LIVE_CONNECTIONS.labels(transport).dec()


async def counted_stream(transport: str, stream: AsyncIterator[str]) -> AsyncIterator[str]:
    """`stream`, counted as an open connection from its first chunk until it ends."""
    connection_opened(transport)
    try:
        async for chunk in stream:
            yield chunk
    finally:
        connection_closed(transport)
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:  # the stream's own cleanup (leaving its group) runs now
            await aclose()


def job_finished(sender: Any = None, task: dict[str, Any] | None = None, **_: Any) -> None:
    """django-q2's `post_execute` receiver: one observation per finished task."""
    if not task or not task.get("started") or not task.get("stopped"):
        return
    seconds = (task["stopped"] - task["started"]).total_seconds()
    outcome = "success" if task.get("success") else "failure"
    JOB_SECONDS.labels(_func_name(task.get("func")), outcome).observe(max(seconds, 0.0))


def maintenance_items(job: str, target: str, count: int) -> None:
    """A maintenance job's work: re-embedded rows by table, reindexed indexes."""
    if count:
        MAINTENANCE_ITEMS.labels(job, target).inc(count)


def keyword_index_measured(index: str, bloat: float) -> None:
    KEYWORD_INDEX_BLOAT.labels(index).set(bloat)


def _func_name(func: Any) -> str:
    if isinstance(func, str):
        return func
    module = getattr(func, "__module__", None) or "unknown"
    return f"{module}.{getattr(func, '__qualname__', type(func).__name__)}"


# --- exposition -------------------------------------------------------------------------


def multiprocess() -> bool:
    return bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))


def include_directory(path: Path) -> None:
    """Also read the multiprocess files in `path` at each scrape (the worker cluster that
    `serve` started, when this process keeps its own values in memory)."""
    if path not in _extra_directories:
        _extra_directories.append(path)


def forget_directory(path: Path) -> None:
    if path in _extra_directories:
        _extra_directories.remove(path)


def render(collectors: list[Collector]) -> bytes:
    """The exposition text: this process's values (or every process's, in multiprocess
    mode), the directories included, and `collectors` computed now. Families of the same
    name from several sources (the server's empty job histogram and the worker's) are merged
    into one, as the text format requires."""
    sources: list[Any] = []
    if multiprocess():
        sources.append(MultiProcessCollector(None))
    else:
        sources.append(REGISTRY)
    sources += [MultiProcessCollector(None, path=str(p)) for p in _extra_directories if p.is_dir()]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Merged([*sources, *collectors]))
    return generate_latest(registry)


class _Merged(Collector):
    """The families of several collectors, one family per name."""

    def __init__(self, sources: list[Any]) -> None:
        self._sources = sources

    def collect(self) -> Iterator[Metric]:
        families: dict[str, Metric] = {}
        for source in self._sources:
            for family in source.collect():
                known = families.setdefault(family.name, family)
                if known is not family:
                    known.samples.extend(family.samples)
        yield from families.values()

    def describe(self) -> list[Metric]:
        return []
