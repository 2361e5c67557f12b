"""Log records as JSON lines, and the request id every record of a request carries.

`MEMORY_LOG_FORMAT=json` writes one JSON object a line to stderr (time, level, logger,
message, request_id, and the exception's traceback when there is one), for a log collector;
`plain` (the default) keeps the human-readable line. Either way each record made while a
request is served carries that request's id (`X-Request-ID`, see
memoryplatform/request_observation.py), so the lines of one request can be found together.

Named `logs`, not `logging`, so that no import of the standard library's module can ever
resolve to this one.
"""

from __future__ import annotations

import json
import logging
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

request_id: ContextVar[str | None] = ContextVar("request_id", default=None)

# What a LogRecord holds of its own; anything else was passed in `extra=` and is logged too.
# (`request` is the HttpRequest Django's request logger adds: its id is logged instead)
_RECORD_FIELDS = set(vars(logging.makeLogRecord({}))) | {
    "message",
    "asctime",
    "request_id",
    "request",
}


class RequestIdFilter(logging.Filter):
    """Stamps each record with the id of the request being served ('-' outside one). Django
    logs a request's 4xx/5xx after the middleware chain has returned, with the request in
    the record: its id is taken from there."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):  # unless given with `extra=`
            request = getattr(record, "request", None)
            record.request_id = getattr(request, "request_id", None) or request_id.get() or "-"
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id.get(),
            "process": record.process,
        }
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, default=str)
