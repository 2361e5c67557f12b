"""The PostgreSQL backend (platformcore.db.postgresql, under the embedded one too) loads
timestamps with psycopg's fast loader: values are the same aware UTC datetimes Django gives."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys

import pytest
from django.db import connection

pytestmark = pytest.mark.django_db
PLUS_FIVE = datetime.timezone(datetime.timedelta(hours=5))


def test_timestamps_come_back_as_the_same_instants_in_utc() -> None:
    stored = [
        datetime.datetime(2026, 11, 24, 4, 12, 24, 123456, tzinfo=datetime.UTC),
        datetime.datetime(1999, 12, 31, 23, 59, 59, tzinfo=datetime.UTC),
        datetime.datetime(2026, 3, 29, 1, 30, tzinfo=PLUS_FIVE),
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT unnest(%s::timestamptz[])", [stored])
        loaded = [row[0] for row in cursor.fetchall()]
    assert loaded == stored
    assert all(value.tzinfo is datetime.UTC for value in loaded)


def test_a_session_in_another_time_zone_still_loads_utc() -> None:
    instant = datetime.datetime(2026, 6, 1, 12, 0, tzinfo=datetime.UTC)
    with connection.cursor() as cursor:
        cursor.execute("SET TIME ZONE 'Europe/Paris'")
        try:
            cursor.execute("SELECT %s::timestamptz", [instant])
            (loaded,) = cursor.fetchone()
        finally:
            cursor.execute("SET TIME ZONE 'UTC'")
    assert loaded == instant
    assert loaded.tzinfo is datetime.UTC


def test_database_url_selects_the_same_backend() -> None:
    code = "from django.conf import settings; print(settings.DATABASES['default']['ENGINE'])"
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://user:secret@db.example:5432/memories",
        "DJANGO_SETTINGS_MODULE": "memoryplatform.settings",
    }
    out = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "platformcore.db.postgresql"
