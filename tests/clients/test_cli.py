"""memoryctl run as a user runs it: a child process against a live platform, its key and URL
from the environment or from flags, tables by default, JSON with --json, and a non-zero exit
with a message on stderr when something is wrong."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.clients.conftest import TIMEOUT
from tests.conftest import Tenant

pytestmark = pytest.mark.slow


def memoryctl(
    *args: str, key: str | None = None, url: str | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMORY_")}
    if key:
        env["MEMORY_API_KEY"] = key
    if url:
        env["MEMORY_URL"] = url
    return subprocess.run(
        [sys.executable, "-m", "memory_platform_client.cli", "--timeout", str(TIMEOUT), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT + 30,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_memoryctl_adds_lists_searches_shows_and_deletes_memories(live: str, alice: Tenant) -> None:
    run = {"key": alice.key, "url": live}
    stored = ok(
        memoryctl("add", "Alice prefers dark mode", "--user-id", "alice", "--tag", "ui", **run)
    )
    assert stored.startswith("stored ")
    memory_id = stored.split()[-1]
    created = json.loads(
        ok(
            memoryctl(
                "add", "-", "--user-id", "alice", "--json", stdin="Alice drinks oolong", **run
            )
        )
    )
    assert created["created"] is True

    table = ok(memoryctl("list", "--user-id", "alice", **run))
    assert table.splitlines()[0].split() == ["ID", "TYPE", "SCOPE", "CREATED", "CONTENT"]
    assert "Alice prefers dark mode" in table and "2 of 2" in table
    listed = json.loads(ok(memoryctl("--json", "list", "--all", **run)))
    assert {m["id"] for m in listed["results"]} == {memory_id, created["id"]}

    found = json.loads(ok(memoryctl("search", "dark mode", "--mode", "keyword", "--json", **run)))
    assert [hit["id"] for hit in found["results"]] == [memory_id]
    assert "Alice prefers dark mode" in ok(
        memoryctl("search", "theme", "--user-id", "alice", **run)
    )
    shown = ok(memoryctl("get", memory_id, **run))
    assert re.search(r"^content +Alice prefers dark mode$", shown, re.MULTILINE)
    assert "ADD" in ok(memoryctl("history", memory_id, **run))
    stats = json.loads(ok(memoryctl("stats", "--json", **run)))
    assert stats

    assert json.loads(ok(memoryctl("delete", memory_id, "--json", **run)))["deleted"] == 1
    assert re.search(r"^deleted +1$", ok(memoryctl("delete", "--user-id", "alice", **run)), re.M)
    assert json.loads(ok(memoryctl("list", "--json", **run)))["count"] == 0


def test_memoryctl_exports_json_lines_that_import_reads_back(
    live: str, alice: Tenant, bob: Tenant, tmp_path: Path
) -> None:
    for text in ("Deploys run on Fridays", "The staging database is PostgreSQL"):
        ok(
            memoryctl(
                "add",
                text,
                "--user-id",
                "ops",
                "--type",
                "procedure",
                key=alice.key,
                url=live,
            )
        )
    dump = tmp_path / "alice.jsonl"
    ok(memoryctl("export", "-o", str(dump), key=alice.key, url=live))
    lines = [json.loads(line) for line in dump.read_text().splitlines()]
    assert {line["content"] for line in lines} == {
        "Deploys run on Fridays",
        "The staging database is PostgreSQL",
    }
    assert all(line["memory_type"] == "procedure" and "id" not in line for line in lines)

    summary = ok(memoryctl("--api-key", bob.key, "--url", live, "import", str(dump), "--json"))
    assert json.loads(summary) == {"imported": 2, "created": 2, "existing": 0}
    again = json.loads(
        ok(memoryctl("import", "-", "--json", key=bob.key, url=live, stdin=dump.read_text()))
    )
    assert again == {"imported": 2, "created": 0, "existing": 2}

    broken = '{"content": "fine", "user_id": "u1"}\nnot json\n'
    refused = memoryctl("import", "-", key=bob.key, url=live, stdin=broken)
    assert refused.returncode == 2
    assert "line 2" in refused.stderr
    invalid = (
        '{"content": "fine", "user_id": "u1"}\n{"content": "x", "user_id": "u1", "confidence": 5}\n'
    )
    rejected = memoryctl("import", "-", key=bob.key, url=live, stdin=invalid)
    assert rejected.returncode == 1
    assert "line 2: confidence" in rejected.stderr
    listed = json.loads(ok(memoryctl("list", "--json", key=bob.key, url=live)))
    assert listed["count"] == 2  # nothing of the refused files was stored


def test_memoryctl_fails_with_a_clear_message_and_exit_status(live: str, alice: Tenant) -> None:
    bad_key = memoryctl("list", key="mp_not_a_key", url=live)
    assert bad_key.returncode == 3
    assert bad_key.stderr.startswith("memoryctl: HTTP 401")
    assert bad_key.stdout == ""

    no_key = memoryctl("list", url=live)
    assert no_key.returncode == 2
    assert "MEMORY_API_KEY" in no_key.stderr

    missing = memoryctl("get", "00000000-0000-0000-0000-000000000000", key=alice.key, url=live)
    assert missing.returncode == 4
    assert "404" in missing.stderr

    invalid = memoryctl("list", "--limit", "500", key=alice.key, url=live)
    assert invalid.returncode == 1
    assert "limit" in invalid.stderr

    unreachable = memoryctl("list", key=alice.key, url="http://127.0.0.1:9")
    assert unreachable.returncode == 5
    assert unreachable.stderr.startswith("memoryctl: ")


def test_the_memoryctl_console_script_is_installed(live: str, alice: Tenant) -> None:
    script = shutil.which("memoryctl") or str(Path(sys.executable).with_name("memoryctl"))
    result = subprocess.run(
        [script, "--url", live, "--api-key", alice.key, "stats", "--json"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT + 30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert isinstance(json.loads(result.stdout), dict)
