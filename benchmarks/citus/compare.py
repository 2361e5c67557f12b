"""One node against the Citus cluster, same machine, same run: the mixed-load benchmark on
each, then what the cluster does with a project's statements.

    python -m benchmarks.citus.cluster start --pg /path/to/postgres-with-citus
    python -m benchmarks.citus.compare                       # 2,000 memories, 1 and 8 clients
    python -m benchmarks.citus.compare --n 5000 --projects 4 --seconds 30

For each target it runs `python -m benchmarks.load` (the embedded server, then
DATABASE_URL at the coordinator after `migrate` and `distribute` on a database of its own,
`--database`, set up by `cluster.py reset`), with `--projects` projects of `--n` memories
each, the load on the first. Then, on the cluster: `EXPLAIN` of a project's statements (a
look-up, a join along a foreign key, a keyword branch, the semantic search's ranked
statement), which must show one
task (one shard), and where the projects' rows are (which worker). Results: JSON under
benchmarks/results/ and a table. The coordinator's cost per request is its CPU (the
`citus coordinator` column of the load's CPU, in cores) divided by the requests per second.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS_DIR, table, write_results

ROOT = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="memories of the loaded project")
    parser.add_argument("--projects", type=int, default=3, help="projects on the cluster")
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--database", default="bench_citus")
    parser.add_argument("--port", type=int, default=9700, help="the coordinator's port")
    parser.add_argument("--skip-single", action="store_true", help="the cluster only")
    parser.add_argument(
        "--row-level-security",
        action="store_true",
        help="with row-level security on (as deployed; the benchmarks' default is off)",
    )
    return parser.parse_args(argv)


def run(command: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, *command], env=env, cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def load(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    before = set(RESULTS_DIR.glob("load-*.json")) if RESULTS_DIR.exists() else set()
    output = run(
        ["-m", "benchmarks.load", "--n", str(args.n), "--clients", args.clients,
         "--seconds", str(args.seconds)],
        env,
    )  # fmt: skip
    print(output)
    written = sorted(set(RESULTS_DIR.glob("load-*.json")) - before)
    return json.loads(written[-1].read_text())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    base = {**os.environ, "PYTHONPATH": str(ROOT), "MEMORY_LOG_LEVEL": "WARNING"}
    base.pop("DATABASE_URL", None)
    base["MEMORY_ROW_LEVEL_SECURITY"] = "true" if args.row_level_security else "false"
    results: dict[str, Any] = {
        "memories": args.n,
        "projects": args.projects,
        "row_level_security": args.row_level_security,
    }
    if not args.skip_single:
        print("== one node (the embedded server)")
        results["single"] = load(args, {**base, "MEMORY_EMBEDDED_DB_NAME": "bench_load"})
    print("== the Citus cluster")
    run(["-m", "benchmarks.citus.cluster", "reset", "--database", args.database], base)
    url = f"postgres://postgres@127.0.0.1:{args.port}/{args.database}"
    cluster = {**base, "DATABASE_URL": url}
    run(["manage.py", "migrate", "-v", "0"], cluster)
    print(run(["manage.py", "distribute"], cluster).splitlines()[-1])
    results["cluster"] = load(args, cluster)
    results["routing"] = routing(args, cluster)
    rows = []
    for name in ("single", "cluster"):
        if name not in results:
            continue
        for level in results[name]["levels"]:
            cpu = level["cpu_cores"]
            rate = level["requests_per_s"] or 1.0
            coordinator = cpu.get("citus coordinator")
            workers = sum(v for k, v in cpu.items() if k.startswith("citus worker"))
            rows.append(
                [
                    name,
                    level["clients"],
                    level["requests_per_s"],
                    level["latency_ms"]["p50"],
                    level["latency_ms"]["p95"],
                    cpu.get("server", 0.0),
                    "-" if coordinator is None else coordinator,
                    "-" if coordinator is None else round(workers, 2),
                    "-" if coordinator is None else round(1000 * coordinator / rate, 2),
                ]
            )
    headers = ["target", "clients", "req/s", "p50 ms", "p95 ms", "web cpu"]
    headers += ["coordinator cpu", "workers cpu", "coordinator ms/request"]
    print(table(headers, rows))
    for line in results["routing"]["summary"]:
        print(line)
    path = write_results("citus-compare", results)
    print(f"\nresults: {path}")
    return 0


_ROUTING = """
import json, os
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
django.setup()
from django.db import connection, transaction
from memories.models import Memory
from platformcore.lib.project_scope import all_projects, project_scope
from tenants.models import Project
from tenants.services import project_create
from memories.services.importing import memories_import
from platformcore.lib.actor import command
from benchmarks.scale import generate
import random

out = {"explain": {}, "placements": {}, "summary": []}
with all_projects("benchmark"):
    projects = list(Project.objects.order_by("id"))
    rng = random.Random(5)
    while len(projects) < PROJECTS:
        project = project_create(slug=f"citus-extra-{len(projects)}")
        with project_scope(project.pk):
            memories_import(project=project, items=generate(200, rng), actor=command("bench"))
        projects.append(project)
with connection.cursor() as cursor:
    for project in projects:
        cursor.execute(
            "SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = "
            "get_shard_id_for_distribution_column('memories_memory', %s)", [project.pk])
        port = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM memories_memory WHERE project_id = %s", [project.pk])
        out["placements"][project.slug] = {"port": port, "memories": cursor.fetchone()[0]}
project = projects[0]
queries = {
    "look-up by project": Memory.objects.filter(project=project, user_id="u1")[:10],
    "join along a foreign key": Memory.objects.filter(project=project, history__event="ADD")[:10],
    "keyword branch": Memory.objects.filter(
        project=project, search_vector="dinner", deleted_at__isnull=True)[:10],
}
from memories.selectors.search import search_queryset
from memories.selectors.search.semantic import _ranked_statement, query_vector
from memories.selectors.search_types import SearchQuery
from platformcore.lib.vectors import vector_literal
with project_scope(project.pk), transaction.atomic(), connection.cursor() as cursor:
    statements = {
        name: queryset.query.sql_with_params() for name, queryset in queries.items()
    }
    base = search_queryset(project=project, query=SearchQuery(text="dinner"))
    vector = vector_literal(query_vector("what did we eat for dinner"))
    statements["semantic search"] = _ranked_statement(base, vector, 10, user_scoped=False)
    for name, (sql, params) in statements.items():
        cursor.execute("EXPLAIN " + sql, params)
        plan = [row[0] for row in cursor.fetchall()]
        tasks = [line.strip() for line in plan if "Task Count" in line]
        out["explain"][name] = plan
        out["summary"].append(f"{name}: {tasks[0] if tasks else plan[0].strip()}")
ports = {p["port"] for p in out["placements"].values()}
out["summary"].append(
    f"{len(projects)} projects' memories on {len(ports)} workers: "
    + ", ".join(f"{slug} -> {p['port']}" for slug, p in out["placements"].items()))
print(json.dumps(out))
"""


def routing(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    code = _ROUTING.replace("PROJECTS", str(args.projects))
    return json.loads(run(["-c", code], env).strip().splitlines()[-1])


if __name__ == "__main__":
    sys.exit(main())
