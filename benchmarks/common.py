"""Shared benchmark plumbing: Django setup on a benchmark database, tables, JSON results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def setup_django(default_db: str, model: str | None = None) -> None:
    """Configure Django on its own embedded database (MEMORY_EMBEDDED_DB_NAME) and migrate;
    `model`: an embedding preset (`fast`, `quality`) or model, on a database of its own."""
    from benchmarks.models import use_model

    default_db = use_model(model, default_db)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
    os.environ.setdefault("MEMORY_EMBEDDED_DB_NAME", default_db)
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")
    # Benchmarks load several projects' rows directly and drop indexes, VACUUM and CHECKPOINT:
    # an operator's work, done as the owner without row-level security unless asked for.
    os.environ.setdefault("MEMORY_ROW_LEVEL_SECURITY", "false")
    # Question lists repeat questions (as agents do): a search measured is a search run, not
    # an answer from the result cache. The servers the benchmarks start inherit this; set it
    # (or pass it as a server's setting) to measure the cache itself.
    os.environ.setdefault("MEMORY_SEARCH_CACHE_SECONDS", "0")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", interactive=False, verbosity=0)


def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
    }


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    if not samples_ms:
        return {"p50": 0.0, "p95": 0.0, "p99": 0.0, "n": 0}
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": pick(0.95),
        "p99": pick(0.99),
        "n": len(ordered),
    }


def table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [[str(h) for h in headers], *[[_fmt(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_results(name: str, payload: dict[str, Any]) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path = RESULTS_DIR / f"{name}-{stamp}.json"
    payload = {"benchmark": name, "at": stamp, "machine": machine(), **payload}
    path.write_text(json.dumps(payload, indent=2, default=str))
    return path


class Timer:
    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.start


def add_model_argument(parser: Any) -> None:
    parser.add_argument(
        "--model",
        help="embedding preset (fast: all-MiniLM-L6-v2, quality: all-mpnet-base-v2) or a "
        "model name or directory; each on a database of its own (benchmarks/models.py)",
    )
