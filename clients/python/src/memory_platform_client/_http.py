"""What the sync and async clients share: encoding requests, the retry policy, reading
responses and Server-Sent Events. No I/O here; the clients do the sending."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import httpx

from memory_platform_client.errors import (
    ConfigurationError,
    error_from_response,
    retry_after_seconds,
)
from memory_platform_client.types import Event

DEFAULT_URL = "http://127.0.0.1:8000"
RETRY_STATUSES = frozenset({429, 503})
MAX_PAGE_SIZE = 100  # the platform's largest page (MEMORY_MAX_PAGE_SIZE)
MAX_SEARCH_OFFSET = 1000  # search refuses deeper offsets


@dataclass(frozen=True)
class RetryPolicy:
    """Retries on 429 and 503 (the platform answers them before running the request, so a
    write is never applied twice): at most `max_retries` times, waiting what `Retry-After`
    says, else `backoff * 2**attempt`, never longer than `max_wait` seconds per wait."""

    max_retries: int = 3
    max_wait: float = 30.0
    backoff: float = 0.5

    def delay(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None to stop and report the response."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        advised = retry_after_seconds(response)
        wait = advised if advised is not None else self.backoff * 2**attempt
        return min(wait, self.max_wait)


def settings_from(api_key: str | None, url: str | None) -> tuple[str, str]:
    """The key and base URL: arguments first, then MEMORY_API_KEY / MEMORY_URL."""
    key = api_key or os.environ.get("MEMORY_API_KEY")
    if not key:
        raise ConfigurationError("No API key: pass api_key= or set MEMORY_API_KEY.")
    base = (url or os.environ.get("MEMORY_URL") or DEFAULT_URL).rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ConfigurationError(f"The URL must start with http:// or https://, not {base!r}.")
    return key, base


def headers_for(api_key: str) -> dict[str, str]:
    from memory_platform_client import __version__

    return {
        "Authorization": f"Bearer {api_key}",
        "Accept": "application/json",
        "User-Agent": f"memory-platform-client/{__version__}",
    }


def jsonable(value: Any) -> Any:
    """A value as JSON carries it (dates in ISO 8601)."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return value


def body(**fields: Any) -> dict[str, Any]:
    """A JSON body: the given fields without the ones left at None."""
    return {name: jsonable(value) for name, value in fields.items() if value is not None}


LIST_FILTERS = ("memory_type", "state", "tags", "entity_ids", "entities")


def filter_body(filters: dict[str, Any]) -> dict[str, Any]:
    """Filters for a JSON body: a single type, state or tag becomes a one-item list."""
    return body(
        **{
            name: [value] if name in LIST_FILTERS and isinstance(value, str | int) else value
            for name, value in filters.items()
        }
    )


def query(**fields: Any) -> dict[str, str | int | float]:
    """Query parameters as the platform reads them: lists comma-joined, booleans as
    true/false, filter expressions as JSON, dates in ISO 8601; None left out."""
    out: dict[str, str | int | float] = {}
    for name, value in fields.items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, list | tuple | set | frozenset):
            out[name] = ",".join(str(item) for item in value)
        elif isinstance(value, dict):
            out[name] = json.dumps(value)
        else:
            out[name] = jsonable(value)
    return out


def result_of(response: httpx.Response) -> Any:
    """The response's JSON (None for 204; text for other text such as GraphML; bytes for a
    file such as an export), or the typed error for a failed one."""
    if response.status_code >= 400:
        raise error_from_response(response)
    if response.status_code == 204 or not response.content:
        return None
    content_type = response.headers.get("content-type", "")
    if "json" in content_type:
        return response.json()
    if content_type.startswith(("application/gzip", "application/octet-stream")):
        return response.content
    return response.text


class EventDecoder:
    """Turns Server-Sent Events lines into events; comments (keep-alives) are skipped."""

    def __init__(self) -> None:
        self._kind = ""
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._kind = value
        elif name == "data":
            self._data.append(value)
        return None

    def _dispatch(self) -> Event | None:
        if not self._data:
            self._kind = ""
            return None
        raw, kind = "\n".join(self._data), self._kind or "message"
        self._kind, self._data = "", []
        try:
            payload: Any = json.loads(raw)
        except ValueError:
            payload = raw
        if isinstance(payload, dict) and "type" in payload and "data" in payload:
            return payload  # type: ignore[return-value]  # the platform's event as sent
        return Event(type=kind, data=payload)
