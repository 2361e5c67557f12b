"""Tenant scoping for API views: the project always comes from the authenticated key."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryplatform.lib.db_threads import beside
from tenants.models import ApiKey, Project

logger = logging.getLogger(__name__)


def after_response(response: Response, work: Callable[[], object]) -> Response:
    """Run `work` once the response has been sent (Django calls a response's closers after
    the server has written it), so bookkeeping such as reinforcement never adds latency.
    It runs beside the request thread (memoryplatform.lib.db_threads): the closers run on the
    request's own thread (memoryplatform.lib.asgi_http), which a 2-3 ms UPDATE would keep from
    the next request. A failure is logged: the client already has its answer."""

    def run() -> None:
        try:
            work()
        except Exception:
            logger.exception("after-response work failed")

    response._resource_closers.append(lambda: beside(run))
    return response


class ProjectScopedMixin:
    """Gives views `self.project` and `self.actor`; views never read a project from input."""

    request: Request

    @property
    def project(self) -> Project:
        api_key = self.request.auth
        assert isinstance(api_key, ApiKey), "HasApiKeyScope guarantees a key"
        return api_key.project

    @property
    def actor(self) -> Any:
        from memoryplatform.lib.actor import Actor

        return Actor("key", self.request.auth.prefix)  # type: ignore[union-attr]

    def page_response(self, page: Any, serializer_class: type[serializers.Serializer]) -> Response:
        """The list envelope every paged endpoint returns."""
        return Response(
            {
                "results": serializer_class(page.results, many=True).data,
                "count": page.count,
                "limit": page.limit,
                "offset": page.offset,
            }
        )

    def validated(
        self, serializer_class: type[serializers.Serializer], data: Any
    ) -> dict[str, Any]:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)
