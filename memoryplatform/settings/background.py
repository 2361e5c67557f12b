"""Redis, the channel layer, caches and background jobs (django-q2)."""

from __future__ import annotations

from memoryplatform.settings.env import env_bool, env_int, env_str
from memoryplatform.settings.framework import TESTING

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
    # a few hundred bytes an entry; Django's default of 300 entries held the graph boost's
    # weights (one per entity: a name in fifty users' graphs is fifty) for three names
    "default": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 50_000},
    },
    "limits": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {
            "BACKEND": "platformcore.db.cache.PostgresCache",
            "LOCATION": "memoryplatform_limits_cache",
            # culled only past this many rows (expired ones first): live counters stay
            "OPTIONS": {"MAX_ENTRIES": 20_000},
        }
    ),
}


def q_cluster(*, testing: bool) -> dict[str, object]:
    """django-q2's cluster: under tests (`testing`) jobs run inline unless MEMORY_JOBS_SYNC
    says otherwise."""
    job_timeout = env_int("MEMORY_JOB_TIMEOUT", 1800, minimum=10)
    cluster: dict[str, object] = {
        "name": "memoryplatform",
        "workers": env_int("MEMORY_WORKERS", 2, minimum=1),
        "timeout": job_timeout,
        "retry": job_timeout + 60,
        "max_attempts": 3,
        "catch_up": False,
        "sync": env_bool("MEMORY_JOBS_SYNC", default=testing),
        "label": "Background jobs",
    }
    if REDIS_URL:
        cluster["redis"] = REDIS_URL
        # django-q2's Redis broker pops a job for good: one taken by a worker that is killed is
        # lost. This one keeps it until the worker's result is saved and hands it out again
        # after `retry` seconds otherwise, as the PostgreSQL queue does (docs/scaling.md).
        cluster["broker_class"] = "platformcore.lib.redis_jobs.AcknowledgedRedis"
    else:
        cluster["orm"] = "default"
    return cluster


Q_CLUSTER = q_cluster(testing=TESTING)
# A job that fails because PostgreSQL went away waits for it (back-off) and runs again, for at
# most this long after the first failure; then it fails as before (platformcore.lib.db_outage).
MEMORY_JOB_DB_RETRY_SECONDS = env_int("MEMORY_JOB_DB_RETRY_SECONDS", 120, minimum=0)
