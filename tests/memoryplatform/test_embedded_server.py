"""The embedded PostgreSQL runs with the platform's memory settings, not the stock 128 MB."""

from __future__ import annotations

import pytest
from django.db import connection

from platformcore.db.embedded.server import SETTINGS_FILE, shared_buffers_mb, write_settings


@pytest.mark.django_db
def test_the_embedded_server_runs_with_the_platforms_shared_buffers(settings) -> None:
    if settings.DATABASES["default"]["ENGINE"] != "platformcore.db.embedded":
        pytest.skip("DATABASE_URL points at an external server")
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setting::bigint * 8192 / 1048576 FROM pg_settings WHERE name = 'shared_buffers'"
        )
        (megabytes,) = cursor.fetchone()
    assert megabytes == shared_buffers_mb() >= 128


def test_settings_are_included_once_and_follow_the_environment(tmp_path, monkeypatch) -> None:
    (tmp_path / "postgresql.conf").write_text("max_connections = 100\n")
    monkeypatch.setenv("MEMORY_EMBEDDED_SHARED_BUFFERS", "2GB")
    write_settings(tmp_path)
    write_settings(tmp_path)
    conf = (tmp_path / "postgresql.conf").read_text()
    assert conf.count(f"include_if_exists = '{SETTINGS_FILE}'") == 1
    assert "shared_buffers = '2048MB'" in (tmp_path / SETTINGS_FILE).read_text()
    monkeypatch.setenv("MEMORY_EMBEDDED_SHARED_BUFFERS", "a lot")
    with pytest.raises(ValueError, match="MEMORY_EMBEDDED_SHARED_BUFFERS"):
        shared_buffers_mb()
