# Generated from _async/client.py by clients/python/scripts/unasync.py: do not edit.
# ruff: noqa: UP028
"""The sync client: one httpx connection pool, the key, retries, and the API's areas as
attributes (`client.memories`, `client.entities`, ...).

`_async/` is the source: `_sync/` is generated from it without async by
`clients/python/scripts/unasync.py`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx

from memory_platform_client import _http
from memory_platform_client._sync.documents import Documents
from memory_platform_client._sync.episodes import Episodes
from memory_platform_client._sync.graph import (
    Entities,
    Graph,
    Relations,
    Tags,
)
from memory_platform_client._sync.intelligence import (
    Contradictions,
    Lifecycle,
    Session,
)
from memory_platform_client._sync.memories import Links, Memories
from memory_platform_client._sync.platform import Analytics, Events, Exports
from memory_platform_client._sync.prompts import Prompts
from memory_platform_client.errors import APIConnectionError
from memory_platform_client.operations import OPERATIONS
from memory_platform_client.types import Deleted, Event


class Client:
    """A client for one project, reached with one API key.

    `api_key` and `url` default to the MEMORY_API_KEY and MEMORY_URL environment variables
    (the URL to http://127.0.0.1:8000). Requests answered 429 or 503 are retried up to
    `max_retries` times, honouring `Retry-After` (each wait at most `max_retry_wait` seconds).
    `http_client` replaces the client's own httpx client (proxies, custom transports); its
    base URL and headers are then the caller's to set, the key is still sent.
    """

    def __init__(
        self,
        api_key: str | None = None,
        *,
        url: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        max_retry_wait: float = 30.0,
        http_client: httpx.Client | None = None,
    ) -> None:
        key, self.url = _http.settings_from(api_key, url)
        self._headers = _http.headers_for(key)
        self._retry = _http.RetryPolicy(max_retries=max_retries, max_wait=max_retry_wait)
        self._http = http_client or httpx.Client(base_url=self.url, timeout=timeout)
        self.memories = Memories(self)
        self.links = Links(self)
        self.lifecycle = Lifecycle(self)
        self.contradictions = Contradictions(self)
        self.session = Session(self)
        self.entities = Entities(self)
        self.relations = Relations(self)
        self.graph = Graph(self)
        self.tags = Tags(self)
        self.prompts = Prompts(self)
        self.documents = Documents(self)
        self.episodes = Episodes(self)
        self.exports = Exports(self)
        self.analytics = Analytics(self)
        self.events = Events(self)

    def reset(self) -> Deleted:
        """Delete everything in the key's project (needs the `admin` scope)."""
        return self._call("reset")

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(
        self,
        operation: str,
        *,
        path: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        raw: bool = False,
    ) -> Any:
        """Send the request `OPERATIONS[operation]` describes (a JSON body, or a multipart
        form of `files` and `data`); its JSON (its bytes as they came with `raw`), or a
        typed error."""
        op = OPERATIONS[operation]
        url = op.url(**(path or {}))
        attempt = 0
        while True:
            try:
                response = self._http.request(
                    op.method,
                    url,
                    params=params,
                    json=json,
                    files=files,
                    data=data,
                    headers=self._headers,
                )
            except httpx.TransportError as exc:
                raise APIConnectionError(f"{op.method} {url}: {exc!r}") from exc
            delay = self._retry.delay(response, attempt)
            if delay is None:
                if raw and response.status_code < 400:
                    return response.content
                return _http.result_of(response)
            time.sleep(delay)
            attempt += 1

    def _pages(
        self,
        operation: str,
        *,
        path: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        page_size: int = _http.MAX_PAGE_SIZE,
        max_offset: int | None = None,
    ) -> Iterator[Any]:
        """Every result of a paged operation, fetching `page_size` at a time until a short
        page, the page's `count` (the total, where the operation gives one) or `max_offset`."""
        offset = int((json if json is not None else params or {}).get("offset") or 0)
        while max_offset is None or offset <= max_offset:
            window = {"limit": page_size, "offset": offset}
            if json is not None:
                page = self._call(operation, path=path, json={**json, **window})
            else:
                page = self._call(operation, path=path, params={**(params or {}), **window})
            results = page["results"]
            for item in results:
                yield item
            offset += len(results)
            total = page.get("count") if max_offset is None else None
            if len(results) < page_size or (total is not None and offset >= total):
                return

    def _stream(self, operation: str, *, read_timeout: float | None) -> Iterator[Event]:
        """Server-Sent Events from `operation`, decoded, until the server closes the stream."""
        op = OPERATIONS[operation]
        timeout = httpx.Timeout(self._http.timeout.connect or 30.0, read=read_timeout)
        headers = {**self._headers, "Accept": "text/event-stream"}
        try:
            with self._http.stream(
                op.method, op.url(), headers=headers, timeout=timeout
            ) as response:
                if response.status_code >= 400:
                    response.read()
                    _http.result_of(response)
                decoder = _http.EventDecoder()
                for line in response.iter_lines():
                    event = decoder.feed(line)
                    if event is not None:
                        yield event
        except httpx.TransportError as exc:
            raise APIConnectionError(f"{op.method} {op.path}: {exc!r}") from exc
