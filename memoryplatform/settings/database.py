"""PostgreSQL + pgvector: the embedded server or DATABASE_URL, connection pools, pgvector's
query settings, index upkeep, row-level security, PgBouncer, read replicas."""

from __future__ import annotations

import re

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryplatform.settings.env import env_bool, env_float, env_int, env_list, env_str
from memoryplatform.settings.framework import DATA_DIR

# DATABASE_URL selects an external server; without it the platform runs its own
# embedded PostgreSQL (with pgvector) whose data lives under MEMORY_DATA_DIR/postgres.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("MEMORY_DB_CONN_MAX_AGE", 60))
    if _db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with pgvector)")
    _db["ENGINE"] = "platformcore.db.postgresql"  # Django's, with faster timestamp loading
else:
    _db = {
        "ENGINE": "platformcore.db.embedded",
        "NAME": env_str("MEMORY_EMBEDDED_DB_NAME", "memoryplatform"),
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "",
        "PORT": "",
        "CONN_MAX_AGE": env_int("MEMORY_DB_CONN_MAX_AGE", 60),
        "PGDATA": str(DATA_DIR / "postgres"),
    }
# The ASGI server takes its connections from psycopg pools (Django's "pool" option). Under
# ASGI (daphne, uvicorn) requests run on many threads (MEMORY_HTTP_THREADS, hybrid search's
# second thread, MCP tool calls, Django's thread per request for async views), so persistent
# per-thread connections (CONN_MAX_AGE) would pile up; a pool hands each request a warm
# connection and takes it back when the request ends. Each pool of threads has a pool of
# connections of its own, one per thread (platformcore/lib/db_threads.py), so no thread waits
# for a connection another holds while waiting for it; MEMORY_DB_POOL_SIZE is the pool shared
# by threads of no role (short key checks of streams, the main thread). The server asks for
# pooling (MEMORY_DB_POOL, set by memoryplatform/asgi.py and by `manage.py serve`); other
# processes keep persistent connections: django-q2's cluster forks its workers, and a forked
# child must not share its parent's pooled connections. MEMORY_DB_POOL_SIZE=0 turns it off.
# A server holds at most MEMORY_HTTP_THREADS + MEMORY_HEAVY_THREADS + 4 (hybrid search) + 2
# (the reinforcement and search-statistics writers) + MEMORY_MCP_THREADS + 4 (stream key
# checks) + MEMORY_DB_POOL_SIZE connections: 50 by default (the embedded PostgreSQL allows
# 400: `serve --workers N`).
MEMORY_DB_POOL_SIZE = (
    env_int("MEMORY_DB_POOL_SIZE", 10, minimum=0) if env_bool("MEMORY_DB_POOL", False) else 0
)
if MEMORY_DB_POOL_SIZE:
    _db["CONN_MAX_AGE"] = 0
    _db.setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": MEMORY_DB_POOL_SIZE,
        "timeout": env_int("MEMORY_DB_POOL_TIMEOUT", 10, minimum=1),
    }
_db["CONN_HEALTH_CHECKS"] = True  # a connection the server closed is replaced, not used
# pgvector's query settings for every session, sent with the connection (no SET round trips
# per search): HNSW breadth, and iterative scans so filtered searches still fill `limit`.
# ef_search 400: the breadth that holds semantic recall@10 against exact search above 0.95
# at 100k memories (docs/benchmarks.md, "Design decisions").
MEMORY_HNSW_EF_SEARCH = env_int("MEMORY_HNSW_EF_SEARCH", 400, minimum=1)
# The graph wears as memories are merged, deleted and re-embedded: the hourly job (and
# `manage.py vector_index_health`) rebuilds it concurrently once the row versions lost since
# its build reach this share of the rows in it (0 = never; docs/search.md).
MEMORY_HNSW_REBUILD_CHURN = env_float("MEMORY_HNSW_REBUILD_CHURN", 0.25, minimum=0.0)
# The keyword (GIN) indexes bloat as rows are deleted, merged and rewritten: the hourly job
# (and `manage.py keyword_index_health`) reindexes one concurrently once this share of it
# is estimated to be bloat (0 = never; docs/portability.md, "Maintenance").
MEMORY_KEYWORD_INDEX_MAX_BLOAT = env_float(
    "MEMORY_KEYWORD_INDEX_MAX_BLOAT", 0.3, minimum=0.0, maximum=1.0
)
# Memory a graph rebuild may use (the session's maintenance_work_mem, raised for the build
# only, never lowered): a graph that outgrows it is built on disk, several times slower.
# ~2 KB per 384-dim memory at m=16: 1 GB holds ~500k (0 = the server's own setting).
MEMORY_HNSW_BUILD_MEMORY_MB = env_int("MEMORY_HNSW_BUILD_MEMORY_MB", 1024, minimum=0)
_db.setdefault("OPTIONS", {})["options"] = (
    f"-c hnsw.ef_search={MEMORY_HNSW_EF_SEARCH} -c hnsw.iterative_scan=relaxed_order"
)
# Several test runs may share one server: each can name its own test database.
_db["TEST"] = {"NAME": env_str("MEMORY_TEST_DB_NAME", "test_memoryplatform")}
# Row-level security backs the tenant scoping (docs/security.md): every table with project_id
# shows and accepts only the current project's rows, and the platform acts as the role
# MEMORY_DB_APP_ROLE (created by migrate: no superuser, owns nothing); migrate runs as the owner.
MEMORY_ROW_LEVEL_SECURITY = env_bool("MEMORY_ROW_LEVEL_SECURITY", True)
MEMORY_DB_APP_ROLE = env_str("MEMORY_DB_APP_ROLE", "memory_app")
if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", MEMORY_DB_APP_ROLE):
    raise ImproperlyConfigured("MEMORY_DB_APP_ROLE: lowercase letters, digits and _")
_db["APP_ROLE"] = MEMORY_DB_APP_ROLE if MEMORY_ROW_LEVEL_SECURITY else ""  # type: ignore[typeddict-unknown-key]
# PgBouncer in transaction mode between the platform and PostgreSQL (docs/scaling.md): a
# server connection serves another client after each transaction, so nothing may live on a
# session. Prepared statements are off already (psycopg's prepare_threshold=None, Django's
# default); server-side cursors (QuerySet.iterator outside a transaction) are turned off, and
# the startup options (pgvector's query settings, statement_timeout) are not sent: set them on
# the database instead (ALTER DATABASE ... SET). Row-level security keeps the caller's project
# in a session setting, which another client's transaction would inherit: it must be off here.
MEMORY_PGBOUNCER = env_bool("MEMORY_PGBOUNCER", False)
if MEMORY_PGBOUNCER:
    if MEMORY_ROW_LEVEL_SECURITY:
        raise ImproperlyConfigured(
            "MEMORY_PGBOUNCER (transaction pooling) needs MEMORY_ROW_LEVEL_SECURITY=false: "
            "the project scope is a session setting (docs/scaling.md)"
        )
    _db["DISABLE_SERVER_SIDE_CURSORS"] = True
    _db["OPTIONS"].pop("options", None)
    _db["OPTIONS"]["prepare_threshold"] = None
DATABASES = {"default": _db}
# Read replicas (platformcore/db/router.py, docs/scaling.md): streaming standbys of the
# primary, comma-separated URLs. API searches and reads go to one of them, writes and reads
# inside transactions to the primary; a key that wrote reads the primary for
# MEMORY_REPLICA_STICKY_SECONDS. A replica that cannot be connected to within
# MEMORY_REPLICA_CONNECT_TIMEOUT seconds is left for MEMORY_REPLICA_RETRY_SECONDS, its reads
# served by the primary; readiness warns when one lags more than MEMORY_REPLICA_MAX_LAG_SECONDS.
DATABASE_REPLICA_URLS = [url for url in env_list("DATABASE_REPLICA_URLS", []) if url]
MEMORY_REPLICA_STICKY_SECONDS = env_float("MEMORY_REPLICA_STICKY_SECONDS", 5.0, minimum=0.0)
MEMORY_REPLICA_CONNECT_TIMEOUT = env_int("MEMORY_REPLICA_CONNECT_TIMEOUT", 2, minimum=1)
MEMORY_REPLICA_RETRY_SECONDS = env_float("MEMORY_REPLICA_RETRY_SECONDS", 10.0, minimum=0.0)
MEMORY_REPLICA_MAX_LAG_SECONDS = env_float("MEMORY_REPLICA_MAX_LAG_SECONDS", 30.0, minimum=0.0)
for _index, _url in enumerate(DATABASE_REPLICA_URLS):
    _replica = dj_database_url.parse(_url, conn_max_age=_db["CONN_MAX_AGE"])
    if _replica["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS must point at PostgreSQL servers")
    _options = {**_db.get("OPTIONS", {}), **_replica.get("OPTIONS", {})}
    _options["connect_timeout"] = MEMORY_REPLICA_CONNECT_TIMEOUT
    if isinstance(_options.get("pool"), dict):  # a replica that is down: fail over quickly
        _options["pool"] = {**_options["pool"], "timeout": MEMORY_REPLICA_CONNECT_TIMEOUT}
    _replica.update(
        ENGINE="platformcore.db.postgresql",
        OPTIONS=_options,
        CONN_HEALTH_CHECKS=True,
        APP_ROLE=_db["APP_ROLE"],
        REPLICA_OF="default",
        TEST={"MIRROR": "default"},  # tests read the test database through it
    )
    if MEMORY_PGBOUNCER:
        _replica["DISABLE_SERVER_SIDE_CURSORS"] = True
    DATABASES[f"replica_{_index}"] = _replica
MEMORY_REPLICA_ALIASES = [alias for alias in DATABASES if alias != "default"]
DATABASE_ROUTERS = ["platformcore.db.router.ReplicaRouter"] if MEMORY_REPLICA_ALIASES else []
