"""A PostgreSQL backend (platformcore.db.postgresql) that starts the embedded server on
first connection."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import psycopg

from platformcore.db.embedded.server import socket_dir
from platformcore.db.postgresql import base

_created_databases: set[tuple[str, str]] = set()


def _ensure_database(host: str, name: str) -> None:
    if (host, name) in _created_databases or name in ("postgres", "template1"):
        return
    with psycopg.connect(host=host, user="postgres", dbname="postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            # another process may create it first
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{name}"')
    _created_databases.add((host, name))


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict[str, Any]:
        host = socket_dir(Path(self.settings_dict["PGDATA"]))
        self.settings_dict["HOST"] = host
        params = super().get_connection_params()
        params["host"] = host
        params.pop("port", None)
        name = params.get("dbname") or "postgres"
        if not name.startswith("test_"):  # Django creates and drops test databases itself
            _ensure_database(host, name)
        return params
