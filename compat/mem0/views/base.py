"""What every mem0 view shares: key authentication and project scoping (the platform's own,
`Authorization: Token <key>` included), and errors in a body mem0's clients read.

mem0's clients turn an error response into an exception by its status (400 ValidationError,
401/403 AuthenticationError, 404 MemoryNotFoundError, 429 RateLimitError, ...) with the
body's `detail` as the message, so each error keeps the platform's `error` envelope and adds
`detail`: the message, with the fields it names."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from platformcore.lib.api import exception_handler
from tenants.views import ProjectScopedMixin


def mem0_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    response = exception_handler(exc, context)
    if response is None or not isinstance(response.data, dict):
        return response
    error = response.data.get("error")
    if isinstance(error, dict):
        response.data = {"detail": _detail(error), **response.data}
    return response


def _detail(error: dict[str, Any]) -> str:
    message = str(error.get("message", ""))
    fields = error.get("fields") or {}
    named = "; ".join(
        f"{name}: {' '.join(str(m) for m in messages)}"
        for name, messages in fields.items()
        if not all(str(m) in message for m in messages)  # what the message says already
    )
    return f"{message} ({named})" if named else message


class Mem0View(ProjectScopedMixin, APIView):
    """A mem0 endpoint: the caller's project from its key, mem0-readable errors. Left out of
    the OpenAPI schema, which describes the platform's own API (docs/compat-mem0.md lists
    these)."""

    schema = None

    def get_exception_handler(self) -> Any:
        return mem0_exception_handler

    def page_links(self, request: Request, page: int, page_size: int, count: int) -> dict:
        """mem0's (DRF's) `next` / `previous` page URLs for a `page`/`page_size` listing."""

        def link(number: int) -> str:
            query = request.query_params.copy()
            query["page"], query["page_size"] = str(number), str(page_size)
            return request.build_absolute_uri(f"{request.path}?{query.urlencode()}")

        has_next = page * page_size < count
        return {
            "next": link(page + 1) if has_next else None,
            "previous": link(page - 1) if page > 1 else None,
        }
