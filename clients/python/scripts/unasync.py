"""Generate the sync client (`_sync/`) from the async one (`_async/`), so the API is written
once. Run after editing `_async/`:

    python clients/python/scripts/unasync.py          # write _sync/
    python clients/python/scripts/unasync.py --check  # exit 1 if _sync/ is stale

Each rule turns an async construct into its sync twin (`async def` -> `def`, `await x` -> `x`,
`AsyncClient` -> `Client`, `aiter_lines` -> `iter_lines`...); the result is formatted with
ruff like the rest of the code.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "memory_platform_client"
SOURCE, TARGET = PACKAGE / "_async", PACKAGE / "_sync"
HEADER = "# Generated from _async/{name} by clients/python/scripts/unasync.py: do not edit.\n"
YIELD_LOOPS = "# ruff: noqa: UP028\n"  # `for x in it: yield x` mirrors the async source

RULES: list[tuple[str, str]] = [
    (r"\bmemory_platform_client\._async\b", "memory_platform_client._sync"),
    (r"\basync def\b", "def"),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"\bawait ", ""),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"\b__aenter__\b", "__enter__"),
    (r"\b__aexit__\b", "__exit__"),
    (r"\baclose\b", "close"),
    (r"\baread\b", "read"),
    (r"\baiter_lines\b", "iter_lines"),
    (r"^import asyncio$", "import time"),
    (r"\basyncio\.sleep\b", "time.sleep"),
    (r"\bThe async client\b", "The sync client"),
    (r"\bcoroutines\b", "functions"),
]


def unasync(source: str) -> str:
    for pattern, replacement in RULES:
        source = re.sub(pattern, replacement, source, flags=re.MULTILINE)
    return source


def _format(source: str, path: Path) -> str:
    command = [sys.executable, "-m", "ruff"]
    filename = ["--stdin-filename", str(path)]
    fixed = subprocess.run(
        [*command, "check", "--fix", "--select", "I,F401", "--quiet", *filename, "-"],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    result = subprocess.run(
        [*command, "format", *filename, "-"],
        input=fixed or source,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def generated() -> dict[Path, str]:
    """Each sync module's expected text, by path."""
    out = {}
    for path in sorted(SOURCE.glob("*.py")):
        target = TARGET / path.name
        source = unasync(path.read_text())
        header = HEADER.format(name=path.name) + (YIELD_LOOPS if "yield" in source else "")
        out[target] = _format(header + source, target)
    return out


def main(argv: list[str]) -> int:
    expected = generated()
    stale = [p for p, text in expected.items() if not p.exists() or p.read_text() != text]
    if "--check" in argv:
        for path in stale:
            print(f"stale: {path} (run {Path(__file__).name})", file=sys.stderr)
        return 1 if stale else 0
    TARGET.mkdir(exist_ok=True)
    for path in stale:
        path.write_text(expected[path])
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
