"""Opening the platform inside this process, once: Django configured with the platform's own
settings, read from an environment the configuration decides (memory_platform/config.py);
the database migrated when it is behind; the project created when it is missing.

Without `DATABASE_URL` the store is the embedded PostgreSQL in the data directory:
`MEMORY_DATA_DIR` if set, else `~/.memory-platform` (a server started with the same
`MEMORY_DATA_DIR` serves the same memories). Background jobs run inside the calls that
enqueue them (`MEMORY_JOBS_SYNC`, unless set): no worker process is needed. Logs go to
stderr from WARNING up (`MEMORY_LOG_LEVEL`, unless set).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import django
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor

from memory_platform.config import Plan
from memory_platform.errors import ConfigurationError
from platformcore.db.rls import owner_connection
from platformcore.lib.errors import Conflict

SETTINGS_MODULE = "memoryplatform.settings"
_lock = threading.Lock()
_migrated = False
# settings a configuration may change while the process runs (the LLM is asked per call)
RUNTIME = ("MEMORY_LLM_BASE_URL", "MEMORY_LLM_API_KEY", "MEMORY_LLM_MODEL")
_EXPECTED_DIMENSIONS = "_MEMORY_EXPECTED_DIMENSIONS"


def default_data_dir() -> Path:
    return Path.home() / ".memory-platform"


def open_store(plan: Plan) -> int:
    """Make the platform usable in this process; the id of the plan's project."""
    global _migrated
    with _lock:
        if not apps.ready:
            _configure(plan.environment)
            _check_dimensions(plan.environment)
        else:
            _check_dimensions(plan.environment)
            _apply_to_running(plan.environment)
        if not _migrated:
            _migrate()
            _migrated = True
        return _project_id(plan.project)


def _configure(environment: dict[str, str]) -> None:
    current = os.environ.get("DJANGO_SETTINGS_MODULE")
    if current and current != SETTINGS_MODULE:
        raise ConfigurationError(
            f"this process's Django settings are {current!r}: Memory runs the platform's own "
            f"({SETTINGS_MODULE}); use it from another process, or its REST API"
        )
    for name, value in environment.items():
        if not name.startswith("_"):
            os.environ[name] = value
    os.environ.setdefault("MEMORY_DATA_DIR", str(default_data_dir()))
    os.environ.setdefault("MEMORY_JOBS_SYNC", "true")
    os.environ.setdefault("MEMORY_LOG_LEVEL", "WARNING")  # a library speaks when it must
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no model-loading bar on stderr
    os.environ["DJANGO_SETTINGS_MODULE"] = SETTINGS_MODULE

    django.setup()


def _apply_to_running(environment: dict[str, str]) -> None:
    """The process has its store already: the LLM may change, the rest must be the same."""
    for name, value in environment.items():
        if name in RUNTIME:
            setattr(settings, name, value)
        elif not name.startswith("_") and not _same(name, value):
            raise ConfigurationError(
                f"this process already opened its store with another {name}: the database, "
                "data directory and embedder are chosen once per process (start another one "
                "for this configuration)"
            )


def _same(name: str, value: str) -> bool:
    if name == "MEMORY_DATA_DIR":
        return Path(value).resolve() == Path(settings.DATA_DIR).resolve()
    running = settings.DATABASE_URL if name == "DATABASE_URL" else getattr(settings, name, "")
    return str(running or "") == value


def _check_dimensions(environment: dict[str, str]) -> None:
    """mem0's `embedding_dims` must match the vectors the store already holds (a fresh store
    takes whatever the embedder gives; another size on a filled one is `reembed --model`)."""
    # imported here: it imports models, loadable only once open_store has set Django up
    from memories.services.embedding_space import recorded_space

    expected = environment.get(_EXPECTED_DIMENSIONS)
    if expected is None:
        return
    try:
        space = recorded_space()
    except DatabaseError:  # not migrated yet: a new data directory
        return
    if space is not None and expected != str(space.dimensions):
        raise ConfigurationError(
            f"embedding dimensions {expected}: the store's vectors have {space.dimensions} "
            "(choose a model of that size, leave the dimensions out, or switch the store "
            "with `manage.py reembed --model`)"
        )


def _migrate() -> None:
    """`migrate` when a migration is not applied yet (a new data directory: the first
    `Memory()` builds the schema), nothing otherwise."""
    with owner_connection("default", "library: are migrations applied"):
        executor = MigrationExecutor(connection)
        behind = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if behind:
        call_command("migrate", interactive=False, verbosity=0)


def _project_id(slug: str) -> int:
    # imported here: models are loadable only once open_store has set Django up
    from tenants.models import Project
    from tenants.services import project_create

    project = Project.objects.filter(slug=slug).first()
    if project is None:
        try:
            project = project_create(slug=slug, name=slug)
        except Conflict:  # another process created it meanwhile
            project = Project.objects.get(slug=slug)
    return project.pk
