"""Scope checks: safe methods need `read`, writes need `write`, a view may ask for `admin`."""

from __future__ import annotations

from typing import Any

from rest_framework import permissions
from rest_framework.request import Request

from tenants.models import ApiKey


def required_scope(request: Request, view: Any) -> str:
    by_action = getattr(view, "required_scopes", {})
    action = getattr(view, "action", None)  # None for plain APIViews
    if action in by_action:
        return str(by_action[action])
    return "read" if request.method in permissions.SAFE_METHODS else "write"


class HasApiKeyScope(permissions.BasePermission):
    message = "This API key lacks the scope this request needs."

    def has_permission(self, request: Request, view: Any) -> bool:
        api_key = request.auth
        if not isinstance(api_key, ApiKey):
            return False
        scope = required_scope(request, view)
        if not api_key.has_scope(scope):
            self.message = f"This API key lacks the '{scope}' scope."
            return False
        return True
