"""JSON error envelope for the REST API: {"error": {"code", "message", "fields"}}."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import OperationalError
from django.http import Http404
from rest_framework import exceptions, parsers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from platformcore.lib import json_input
from platformcore.lib.errors import ServiceError
from platformcore.lib.timeouts import statement_timed_out, statement_timeout_message

logger = logging.getLogger(__name__)
DATABASE_RETRY_AFTER_SECONDS = 2


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser through `platformcore.lib.json_input`: a body nested too deep, with
    a NUL character or a number no column holds is a 400 before any code walks it."""

    def parse(self, stream: Any, media_type: Any = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            raw = stream.read() if stream is not None else b""
            data = json_input.loads(raw.decode(encoding), nul=False)
        except ValueError as exc:  # JsonInputError, a syntax error, a bad encoding
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
        if json_input.has_nul(raw) and (where := json_input.nul_path(data)) is not None:
            field = where.split(".", 1)[0].split("[", 1)[0] or "non_field_errors"
            message = f"{where}: may not contain the NUL character (\\u0000)"
            raise exceptions.ValidationError({field: [message]})
        return data


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """Turn DRF's nested error detail into {"field.path": [messages]}."""
    if isinstance(detail, dict):
        out: dict[str, list[str]] = {}
        for key, value in detail.items():
            if key == "non_field_errors" and prefix:  # a nested object's own error: its field
                out.update(_flatten(value, prefix))
                continue
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or "non_field_errors": [str(item) for item in detail]}
        out = {}
        for index, item in enumerate(detail):
            out.update(_flatten(item, f"{prefix}[{index}]" if prefix else str(index)))
        return out
    return {prefix or "non_field_errors": [str(detail)]}


def error_response(
    code: str, message: str, status_code: int, fields: dict | None = None
) -> Response:
    body = {"error": {"code": code, "message": message, "fields": fields or {}}}
    return Response(body, status=status_code)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ServiceError):
        return error_response(exc.code, exc.message, exc.status, exc.fields)
    if isinstance(exc, OperationalError) and statement_timed_out(exc):
        logger.warning("statement cancelled: %s", exc)
        message = statement_timeout_message()
        response = error_response("statement_timeout", message, status.HTTP_503_SERVICE_UNAVAILABLE)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, OperationalError):  # no connection to be had, a server restarting...
        logger.warning("database unavailable: %s", exc)
        message = "The database is busy or unavailable; retry shortly."
        response = error_response("unavailable", message, status.HTTP_503_SERVICE_UNAVAILABLE)
        response["Retry-After"] = str(DATABASE_RETRY_AFTER_SECONDS)
        return response
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        names = ", ".join(sorted(fields))
        message = f"Invalid input: {names}" if names else "Invalid input"
        if list(fields) == ["non_field_errors"]:
            message = fields["non_field_errors"][0]
        body = {"error": {"code": "invalid", "message": message, "fields": fields}}
    else:
        code = getattr(exc, "default_code", "error")
        detail = getattr(exc, "detail", str(exc))
        body = {"error": {"code": code, "message": str(detail), "fields": {}}}
    response.data = body
    return response


__all__ = ["error_response", "exception_handler", "status"]
