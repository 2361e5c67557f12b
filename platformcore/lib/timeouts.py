"""A statement cancelled by `statement_timeout` (MEMORY_STATEMENT_TIMEOUT_MS): recognised the
same way by every entry point, told to the client in the same words."""

from __future__ import annotations

from django.conf import settings
from psycopg import errors


def statement_timed_out(exc: BaseException) -> bool:
    """Whether a database error is a cancelled statement (its timeout, or an operator's
    pg_cancel_backend), not an unreachable or broken database."""
    return isinstance(exc.__cause__, errors.QueryCanceled) or isinstance(exc, errors.QueryCanceled)


def statement_timeout_message() -> str:
    seconds = settings.MEMORY_STATEMENT_TIMEOUT_MS / 1000
    return (
        f"A database statement of this request ran longer than {seconds:g} s and was cancelled "
        "(MEMORY_STATEMENT_TIMEOUT_MS); narrow the request (filters, a smaller limit) or retry "
        "later."
    )
