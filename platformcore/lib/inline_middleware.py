"""Django's stock middleware without a thread hop per hook under ASGI.

Under ASGI, `MiddlewareMixin` runs every `process_request` and `process_response` through
`sync_to_async`: with seven such middleware an API request crossed between the event loop and
a worker thread about twelve times before and after its view (each crossing wakes a thread
and the loop, which adds up to milliseconds on busy cores). Two kinds of fix, same behaviour:

- `Inline*`: middleware whose hooks never touch the database or a file (security headers,
  trailing slashes, X-Frame-Options) run their hooks directly in the event loop.
- `BrowserOnly*`: middleware that only serve browser sessions (sessions, `request.user`,
  messages, CSRF) are skipped for `/api/v1/`, which authenticates by API key alone (DRF's
  own authentication, no session, no CSRF cookie); every other path (the admin, the API
  docs) gets them exactly as before. Their session save may touch the database, so they
  keep Django's thread hop where they run.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.middleware import AuthenticationMiddleware
from django.contrib.messages.middleware import MessageMiddleware
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpResponse, JsonResponse
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.csrf import CsrfViewMiddleware
from django.middleware.security import SecurityMiddleware
from django.utils.deprecation import MiddlewareMixin

# key-authenticated APIs: ours, and mem0's paths (compat/mem0) that its clients call
API_PREFIX = (
    "/api/v1/",
    "/v1/",
    "/v2/",
    "/v3/",
    # the SQL-native server's unversioned paths (compat/sqlnative)
    "/api/memories",
    "/api/entities",
    "/api/relations",
    "/api/analytics/",
    "/api/events",
)


class _Inline:
    """Hooks run in whichever mode the chain runs: no sync_to_async around them."""

    async def __acall__(self, request: Any) -> Any:
        response = self.process_request(request) if hasattr(self, "process_request") else None
        response = response or await self.get_response(request)  # type: ignore[attr-defined]
        if hasattr(self, "process_response"):
            response = self.process_response(request, response)
        return response


class _BrowserOnly:
    """Skipped for API paths; Django's own behaviour everywhere else."""

    def __call__(self, request: Any) -> Any:
        if request.path_info.startswith(API_PREFIX):
            return self.get_response(request)  # type: ignore[attr-defined]
        return super().__call__(request)  # type: ignore[misc]

    async def __acall__(self, request: Any) -> Any:
        if request.path_info.startswith(API_PREFIX):
            return await self.get_response(request)  # type: ignore[attr-defined]
        return await super().__acall__(request)  # type: ignore[misc]


class InlineSecurityMiddleware(_Inline, SecurityMiddleware):
    pass


class InlineCommonMiddleware(_Inline, CommonMiddleware):
    pass


class InlineXFrameOptionsMiddleware(_Inline, XFrameOptionsMiddleware):
    pass


class BrowserOnlySessionMiddleware(_BrowserOnly, SessionMiddleware):
    pass


class BrowserOnlyCsrfViewMiddleware(_BrowserOnly, CsrfViewMiddleware):
    pass


class BrowserOnlyAuthenticationMiddleware(_BrowserOnly, AuthenticationMiddleware):
    pass


class BrowserOnlyMessageMiddleware(_BrowserOnly, MessageMiddleware):
    pass


class RefuseNulMiddleware(_Inline, MiddlewareMixin):
    """A NUL character in the path (or, outside the API, the query string) is a 400 before
    any view: PostgreSQL stores none in text, so a name holding one could only fail deeper."""

    def process_request(self, request: Any) -> HttpResponse | None:
        # the API's query parameters are checked after its key (NoNulInQuery): 401 first
        query = "" if request.path.startswith(API_PREFIX) else request.META.get("QUERY_STRING", "")
        if "\x00" not in request.path and "%00" not in query and "\x00" not in query:
            return None
        message = "The path or query may not contain the NUL character (%00)."
        body = {"error": {"code": "invalid", "message": message, "fields": {}}}
        return JsonResponse(body, status=400)
