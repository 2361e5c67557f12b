"""Settings for Memory Platform, read from the environment (see README, Configuration), one
module per concern; this module puts them together. Tests run with memoryplatform.settings.test."""

from __future__ import annotations

from memoryplatform.settings.background import *  # noqa: F403
from memoryplatform.settings.behaviour import *  # noqa: F403
from memoryplatform.settings.database import *  # noqa: F403
from memoryplatform.settings.framework import *  # noqa: F403
from memoryplatform.settings.integrations import *  # noqa: F403
from memoryplatform.settings.retrieval import *  # noqa: F403
from memoryplatform.settings.security import *  # noqa: F403

# Where the concerns meet: with replicas, each request's routing (may it read a replica, who is
# writing) is decided before the request's project is set on its connection.
if MEMORY_REPLICA_ALIASES:  # noqa: F405
    MIDDLEWARE.insert(  # noqa: F405
        MIDDLEWARE.index("platformcore.lib.project_scope.RowLevelSecurityMiddleware"),  # noqa: F405
        "platformcore.db.router.ReplicaReadsMiddleware",
    )
