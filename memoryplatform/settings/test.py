"""Settings of the test suite (pyproject.toml names this module for pytest): the platform's
own, with TESTING on unless MEMORY_TESTING says otherwise. Jobs then run inline, in the test's
transaction, and requests without a key are not limited per address (the suite's clients all
come from one address); MEMORY_JOBS_SYNC and MEMORY_RATE_LIMIT_ADDRESS still override."""

from __future__ import annotations

from memoryplatform.settings import *  # noqa: F403
from memoryplatform.settings.background import q_cluster
from memoryplatform.settings.env import env_bool
from memoryplatform.settings.security import rate_limits

TESTING = env_bool("MEMORY_TESTING", default=True)
Q_CLUSTER = q_cluster(testing=TESTING)
MEMORY_RATE_LIMITS = rate_limits(testing=TESTING)
