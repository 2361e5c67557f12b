"""Typed errors for the platform's JSON error body.

Every API error is `{"error": {"code": ..., "message": ..., "fields": {"field": ["..."]}}}`;
the status picks the class, so callers catch what they can handle (`NotFound`,
`ValidationError`, ...) and everything else as `MemoryPlatformError`.
"""

from __future__ import annotations

from typing import Any

import httpx


class MemoryPlatformError(Exception):
    """An error from the platform or on the way to it.

    `status` is the HTTP status (None when no response arrived), `code` the platform's error
    code (`invalid`, `not_found`, `not_authenticated`, ...), `fields` the field errors by name
    (`{"content": ["This field is required."]}`; nested fields are dotted: `memories.3.content`).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str = "error",
        fields: dict[str, list[str]] | None = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.fields = fields or {}
        self.body = body

    def __str__(self) -> str:
        head = f"HTTP {self.status} {self.code}: {self.message}" if self.status else self.message
        details = "; ".join(
            f"{name}: {' '.join(messages)}" for name, messages in sorted(self.fields.items())
        )
        return f"{head} ({details})" if details else head


class ConfigurationError(MemoryPlatformError, ValueError):
    """The client cannot be built as asked (no API key, a bad URL)."""


class APIConnectionError(MemoryPlatformError):
    """No response: the server could not be reached, or the request timed out."""


class ValidationError(MemoryPlatformError):
    """400: bad input; `fields` names each offending field."""


class AuthenticationError(MemoryPlatformError):
    """401: the API key is missing, unknown, revoked or expired."""


class PermissionDenied(MemoryPlatformError):
    """403: the key lacks the scope this call needs (`read`, `write` or `admin`)."""


class NotFound(MemoryPlatformError):
    """404: no such object in the key's project (another project's objects are 404 too)."""


class Conflict(MemoryPlatformError):
    """409: the request conflicts with the current state."""


class RateLimited(MemoryPlatformError):
    """429 after the client's retries: `retry_after` is the server's advice in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class ServerError(MemoryPlatformError):
    """5xx: the platform failed or was overloaded (503 after the client's retries)."""


_BY_STATUS: dict[int, type[MemoryPlatformError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: ValidationError,
    429: RateLimited,
}


def retry_after_seconds(response: httpx.Response) -> float | None:
    """`Retry-After` as seconds (a number or an HTTP date), or None when absent or unreadable."""
    from email.utils import parsedate_to_datetime

    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    from datetime import UTC, datetime

    return max(0.0, (moment - datetime.now(UTC)).total_seconds())


def error_from_response(response: httpx.Response) -> MemoryPlatformError:
    """The typed error for a failed response, read from our JSON error body when it has one."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or response.reason_phrase)
        code = str(error.get("code") or "error")
        fields = {str(k): [str(m) for m in v] for k, v in (error.get("fields") or {}).items()}
    else:
        message = (body if isinstance(body, str) and body else response.reason_phrase) or "error"
        code, fields = "error", {}
    status = response.status_code
    cls = _BY_STATUS.get(status) or (ServerError if status >= 500 else MemoryPlatformError)
    kwargs: dict[str, Any] = {"status": status, "code": code, "fields": fields, "body": body}
    if cls is RateLimited:
        kwargs["retry_after"] = retry_after_seconds(response)
    return cls(message[:2000], **kwargs)
