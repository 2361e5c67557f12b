"""Checks every key-authenticated API view runs (DRF's default permission classes)."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, permissions


class NoNulInQuery(permissions.BasePermission):
    """A query parameter holding a NUL character is a 400 naming it, once the key is known
    to be good (an unknown key still gets its 401); PostgreSQL stores no NUL."""

    def has_permission(self, request: Any, view: Any) -> bool:
        for name, values in request.query_params.lists():
            if "\x00" in name or any("\x00" in value for value in values):
                message = "may not contain the NUL character (%00)"
                raise exceptions.ValidationError({name.replace("\x00", ""): [message]})
        return True
