"""Tenant scoping for API views: the project always comes from the authenticated key."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from platformcore.lib.actor import Actor
from tenants.models import ApiKey, Project
from tenants.namespaces import enter_namespace, namespace_for, namespaces_enabled, reading_as


class ProjectScopedMixin:
    """Gives views `self.project` and `self.actor`; views never read a project from input.
    With agent namespaces on, the request acts as the agent it names (tenants/namespaces.py)."""

    request: Request

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with reading_as(None):  # nothing carries over to the next request on this thread
            return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        api_key = request.auth
        if isinstance(api_key, ApiKey) and namespaces_enabled(api_key.project):
            enter_namespace(namespace_for(api_key=api_key, agent=_requested_agent(request)))

    @property
    def project(self) -> Project:
        api_key = self.request.auth
        assert isinstance(api_key, ApiKey), "HasApiKeyScope guarantees a key"
        return api_key.project

    @property
    def actor(self) -> Any:
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


def _requested_agent(request: Request) -> str | None:
    """The agent a request acts as: `X-Agent-ID`, else its `agent_id` (query or JSON body)."""
    named = request.headers.get("X-Agent-ID") or request.query_params.get("agent_id")
    if not named and isinstance(request.data, dict):
        named = request.data.get("agent_id")
    return named if isinstance(named, str) else None
