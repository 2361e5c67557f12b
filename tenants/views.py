"""Tenant scoping for API views: the project always comes from the authenticated key."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from tenants.models import ApiKey, Project


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
