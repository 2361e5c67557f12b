"""Request ids and JSON log lines: every request has an id (the caller's X-Request-ID, or a
new one), the response echoes it, and each log record made while serving it carries it."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.conf import settings

from memoryplatform.logs import JsonFormatter, RequestIdFilter


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(RequestIdFilter())
        self.setFormatter(JsonFormatter())
        self.lines: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(json.loads(self.format(record)))


@pytest.fixture
def json_lines():
    """The JSON lines Django's request logger writes (what MEMORY_LOG_FORMAT=json gives)."""
    handler = _Records()
    logger = logging.getLogger("django.request")
    logger.addHandler(handler)
    yield handler.lines
    logger.removeHandler(handler)


def test_a_request_without_an_id_gets_a_new_one_in_the_response(anonymous) -> None:
    first = anonymous.get("/health/live")["X-Request-ID"]
    second = anonymous.get("/health/live")["X-Request-ID"]
    assert len(first) == 32 and first != second


def test_an_incoming_request_id_is_kept_and_echoed(anonymous) -> None:
    response = anonymous.get("/health/live", HTTP_X_REQUEST_ID="lb-7f3a.42:1")
    assert response["X-Request-ID"] == "lb-7f3a.42:1"


@pytest.mark.parametrize("bad", ["", "x" * 129, "two words", "bad\\id", "<script>"])
def test_an_unusable_incoming_id_is_replaced(anonymous, bad: str) -> None:
    response = anonymous.get("/health/live", HTTP_X_REQUEST_ID=bad)
    assert response["X-Request-ID"] != bad
    assert len(response["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_log_lines_of_a_request_carry_its_id_as_json(anonymous, json_lines) -> None:
    response = anonymous.get("/no/such/page/", HTTP_X_REQUEST_ID="trace-123")
    assert response.status_code == 404
    line = json_lines[-1]  # Django's "Not Found" warning
    assert line["request_id"] == "trace-123"
    assert line["level"] == "WARNING"
    assert line["logger"] == "django.request"
    assert "Not Found" in line["message"]
    assert line["time"].endswith("+00:00")


def test_a_json_line_holds_the_exception_and_the_extra_fields() -> None:
    formatter = JsonFormatter()
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed %s", ("job",), None)
        record.exc_info = sys.exc_info()
    record.job_id = "j1"
    line = json.loads(formatter.format(record))
    assert line["message"] == "failed job"
    assert line["job_id"] == "j1"
    assert "ValueError: boom" in line["exception"]
    assert line["request_id"] is None  # made outside any request


def test_the_json_format_is_chosen_by_memory_log_format() -> None:
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('memoryplatform.test').warning('hello %s', 'ops')"
    )
    env = {
        **os.environ,
        "MEMORY_LOG_FORMAT": "json",
        "DJANGO_SETTINGS_MODULE": "memoryplatform.settings",
    }
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
        cwd=settings.BASE_DIR,
    )  # fmt: skip
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello ops"
    assert line["request_id"] == "-"
