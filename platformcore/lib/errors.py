"""Errors raised by services; every entry point (REST, MCP, commands) maps them the same way."""

from __future__ import annotations

from typing import Any
from uuid import UUID


class ServiceError(Exception):
    """Base class: a request the service refuses, with a stable code and HTTP status."""

    code = "error"
    status = 400

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class InvalidInput(ServiceError):
    code = "invalid"
    status = 400


class NotFound(ServiceError):
    code = "not_found"
    status = 404


class Conflict(ServiceError):
    code = "conflict"
    status = 409


class ProviderError(ServiceError):
    """An embedding or LLM provider failed (network, timeout, bad answer)."""

    code = "provider_error"
    status = 502


def parse_uuid(value: object, *, what: str = "object") -> UUID:
    """A UUID from user input; anything malformed is simply 'not found'."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except (TypeError, ValueError) as exc:
        raise NotFound(f"{what} not found") from exc


def check_choice(field: str, value: object, allowed: list[str]) -> str:
    """`value` if it is one of `allowed`, else InvalidInput naming `field` and the choices."""
    if value not in allowed:
        choices = ", ".join(allowed)
        raise InvalidInput(
            f"{field} must be one of {choices}", fields={field: [f"one of {choices}"]}
        )
    return str(value)


MAX_ITEMS = 1000  # items of one list in one call: bulk writes, graph batches, deletes by name


def check_unit_interval(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{name} must be a number", fields={name: ["must be a number"]})
    if not 0.0 <= float(value) <= 1.0:
        raise InvalidInput(
            f"{name} must be within [0, 1]", fields={name: ["must be within [0, 1]"]}
        )
    return float(value)


def check_count(field: str, items: object, maximum: int = MAX_ITEMS) -> None:
    """Refuse a list longer than `maximum` before any of it is handled: every entry point
    (REST, MCP, commands) reaches the service, so the cap holds whichever one is used."""
    if isinstance(items, list | tuple) and len(items) > maximum:
        raise InvalidInput(
            f"at most {maximum} items in {field}, got {len(items)}",
            fields={field: [f"at most {maximum} items"]},
        )
