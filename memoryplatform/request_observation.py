"""The first middleware of every request: its id, its log context and its metrics.

- **Request id**: an incoming `X-Request-ID` (a proxy's or a client's, up to 128 characters
  of letters, digits and `._:-`) is kept, otherwise one is made; every log record made while
  the request is served carries it (memoryplatform/logs.py) and the response echoes it in
  `X-Request-ID`, so a client's report, a proxy's log line and ours can be matched.
- **Metrics**: count and time of the request by its route (the resolved URL pattern's name),
  method and status class (platformcore/metrics.py).
- **Stages**: the time of each stage the request went through (a search's keyword statement,
  query embedding, vector statement, fusion...) in the `Server-Timing` header, with `total`
  (platformcore/lib/stages.py).

Sync and async capable, in whichever mode the chain runs, with no thread hop (see
platformcore/lib/inline_middleware.py for why that matters under ASGI).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

from memoryplatform import logs
from platformcore import metrics
from platformcore.lib import stages

HEADER = "X-Request-ID"
_ACCEPTED_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
logger = logging.getLogger("memoryplatform.requests")


class RequestObservationMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self._async:
            return self._acall(request)
        started, token = _begin(request)
        try:
            with stages.recording() as record:
                response = self.get_response(request)
        finally:
            logs.request_id.reset(token)
        return _finish(request, response, started, record)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        started, token = _begin(request)
        try:
            with stages.recording() as record:
                response = await self.get_response(request)
        finally:
            logs.request_id.reset(token)
        return _finish(request, response, started, record)


def _begin(request: HttpRequest) -> tuple[float, Any]:
    incoming = request.headers.get(HEADER, "")
    request_id = incoming if _ACCEPTED_ID.fullmatch(incoming) else uuid.uuid4().hex
    request.request_id = request_id  # type: ignore[attr-defined]
    return time.perf_counter(), logs.request_id.set(request_id)


def _finish(
    request: HttpRequest, response: HttpResponseBase, started: float, record: stages.Record
) -> Any:
    seconds = time.perf_counter() - started
    response[HEADER] = request.request_id  # type: ignore[attr-defined]
    if record.seconds:
        response["Server-Timing"] = record.header(seconds)
    route = route_of(request)
    metrics.observe_request(
        route=route, method=request.method or "", status=response.status_code, seconds=seconds
    )
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug(
            "%s %s %s %.1f ms",
            request.method,
            route,
            response.status_code,
            seconds * 1000,
            extra={"request_id": request.request_id},  # type: ignore[attr-defined]
        )
    return response


def route_of(request: HttpRequest) -> str:
    """The request's route as a label of bounded cardinality: the URL pattern's name (or
    its view's dotted path), `static` for static files, `unmatched` for anything else."""
    match = getattr(request, "resolver_match", None)
    if match is not None:
        return str(match.view_name or match.route or "unnamed")
    if request.path_info.startswith("/" + settings.STATIC_URL.lstrip("/")):
        return "static"
    return "unmatched"
