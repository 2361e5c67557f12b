"""Backups: a consistent pg_dump with its manifest, retention, and the round trip: backup →
a new empty database → restore → the same search results."""

from __future__ import annotations

import base64
import copy
import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from django.core.management import CommandError, call_command
from django.db import connection, connections, transaction
from django.db.utils import load_backend

from portability.backup import (
    MANIFEST,
    backup_create,
    backup_restore,
    conninfo,
    pg_tool,
)
from tests.conftest import make_tenant
from tests.documents.conftest import pdf_bytes

SEARCH = "/api/v1/memories/search/"
FACTS = [
    "The billing service runs on PostgreSQL 16 in eu-west-1",
    "Dana owns the on-call rotation for the billing service",
    "Invoices are generated nightly at 02:00 UTC",
    "The staging cluster is rebuilt every Monday",
]


@contextmanager
def empty_database(name: str) -> Iterator[str]:
    """A new, empty database on the same server, as the alias `restored`."""
    admin = psycopg.conninfo.make_conninfo(conninfo(), dbname="postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    settings_dict = {**copy.deepcopy(connection.settings_dict), "NAME": name}
    backend = load_backend(settings_dict["ENGINE"])
    connections["restored"] = backend.DatabaseWrapper(settings_dict, alias="restored")
    try:
        yield "restored"
    finally:
        connections["restored"].close()
        del connections["restored"]
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def reading(name: str) -> Iterator[None]:
    """The default connection on database `name` for the block."""
    original = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = name
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original


def results(tenant, query: str, mode: str) -> list[str]:
    with transaction.atomic():  # hybrid search's second side inline, on this connection
        body = tenant.post(SEARCH, {"query": query, "user_id": "u1", "mode": mode}).json()
    return [hit["content"] for hit in body["results"]]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_backup_restored_into_an_empty_database_gives_the_same_search_results(tmp_path, settings):
    settings.MEMORY_DOCUMENT_STORAGE = f"filesystem:{tmp_path / 'originals'}"
    settings.MEMORY_DOCUMENT_INLINE_BYTES = 0  # the PDF goes to the storage, not the database
    tenant = make_tenant("backup-alice")
    for fact in FACTS:
        assert (
            tenant.post("/api/v1/memories/", {"content": fact, "user_id": "u1"}).status_code == 201
        )
    pdf = pdf_bytes(["Invoices are generated nightly.", "Dana owns the on-call rotation."])
    document = tenant.post(
        "/api/v1/documents/",
        {"content_base64": base64.b64encode(pdf).decode(), "user_id": "u1", "title": "ops.pdf"},
    ).json()
    report = backup_create(out=tmp_path / "backups")
    manifest = json.loads((Path(report.path) / MANIFEST).read_text())
    assert manifest["row_counts"]["memories_memory"] == len(FACTS)
    assert [f["size_bytes"] for f in manifest["originals"]["files"]] == [len(pdf)]
    shutil.rmtree(tmp_path / "originals")  # the disk that held the documents is lost
    assert "memories.0001_initial" in manifest["migrations"]
    assert len(manifest["dump"]["sha256"]) == 64
    queries = [
        ("billing service", "keyword"),
        ("who is on call", "semantic"),
        ("invoices", "hybrid"),
    ]
    before = [results(tenant, query, mode) for query, mode in queries]
    assert all(before)
    name = f"{connection.settings_dict['NAME']}_restored"
    with empty_database(name) as alias:
        restored = backup_restore(folder=Path(report.path), using=alias)
        assert restored.mismatched == {} and restored.originals == 1
        with reading(name):
            after = [results(tenant, query, mode) for query, mode in queries]
            original = tenant.get(f"/api/v1/documents/{document['id']}/original/")
    assert after == before
    assert original.status_code == 200 and original.content == pdf  # byte for byte


@pytest.mark.django_db(transaction=True)
def test_restore_refuses_a_database_that_is_not_empty_without_force(tmp_path):
    report = backup_create(out=tmp_path)
    with pytest.raises(CommandError, match="not empty"):
        call_command("restore", report.path, verbosity=0)


@pytest.mark.django_db(transaction=True)
def test_backups_are_timestamped_folders_of_which_the_newest_are_kept(tmp_path):
    for _ in range(3):
        call_command("backup", "--out", str(tmp_path), "--keep", "2", verbosity=0)
    folders = sorted(p.name for p in tmp_path.iterdir())
    assert len(folders) == 2
    assert all((tmp_path / f / "database.dump").is_file() for f in folders)


def test_a_restore_refuses_a_folder_whose_dump_does_not_match_its_manifest(tmp_path):
    (tmp_path / MANIFEST).write_text(
        json.dumps(
            {
                "format": "memory-platform.backup",
                "dump": {"file": "database.dump", "sha256": "0" * 64, "size_bytes": 1},
            }
        )
    )
    (tmp_path / "database.dump").write_bytes(b"x")
    with pytest.raises(CommandError, match="checksum"):
        call_command("restore", str(tmp_path), verbosity=0)


@pytest.mark.django_db
def test_the_dump_tool_is_at_least_as_new_as_the_server():
    server_major = connection.pg_version // 10000
    tool = pg_tool("pg_dump", server_major=server_major)
    assert tool.name == "pg_dump"
