"""Export, import and backup times: a project of `--n` generated memories (random unit
vectors, no encoder) exported with and without vectors, imported under new ids, imported
again (nothing to write), and the database backed up.

    python -m benchmarks.portability --n 10000

Import here does not compute vectors (`embed=False`): the file carries them, or, exported
without, they are the encoder's work, measured by the ingest benchmark.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import Timer, setup_django, table, write_results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=10_000, help="memories stored")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args(argv)
    setup_django("bench_portability")
    from benchmarks.deleted_rows import store
    from platformcore.lib.project_scope import all_projects
    from portability.backup import backup_create
    from portability.exporting import project_export
    from portability.importing import project_import
    from tenants.models import Project
    from tenants.services import project_create

    rows: list[list[Any]] = []
    with all_projects("benchmark: portability"), tempfile.TemporaryDirectory() as tmp:
        run = f"{len(Project.objects.filter(slug__startswith='bench-port-')):03d}"
        project = project_create(slug=f"bench-port-{run}")
        print(f"storing {args.n} memories...")
        store(project, args.n, args.seed)
        for label, name, embeddings in (
            ("export with vectors", "with.jsonl.gz", True),
            ("export without vectors", "without.jsonl.gz", False),
        ):
            with Timer() as timer:
                report = project_export(
                    project=project, out=Path(tmp) / name, embeddings=embeddings
                )
            rows.append([label, round(timer.seconds, 2), report.size_bytes])
        path = Path(tmp) / "with.jsonl.gz"
        for label in ("import --remap (new project)", "import --remap again (no change)"):
            with Timer() as timer:
                project_import(path=path, slug=f"bench-copy-{run}", remap=True, embed=False)
            rows.append([label, round(timer.seconds, 2), ""])
        with Timer() as timer:
            backup = backup_create(out=Path(tmp) / "backups")
        rows.append(["backup (whole database)", round(timer.seconds, 2), backup.size_bytes])
    print(table(["step", "seconds", "bytes"], rows))
    print(write_results("portability", {"n": args.n, "steps": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
