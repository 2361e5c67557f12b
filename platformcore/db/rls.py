"""Row-level security in PostgreSQL: the runtime role, the tenant tables' policies, and the
session settings that carry the calling code's scope (platformcore/lib/project_scope.py).

- **The runtime role** (`memory_app`, MEMORY_DB_APP_ROLE): NOLOGIN, NOSUPERUSER, NOBYPASSRLS,
  owning nothing, with DML on every table and sequence. Runtime connections log in as the
  configured user (`postgres` on the embedded default, DATABASE_URL's user) and act as the
  role from their first statement: `-c role=memory_app` in the connection's startup options,
  a session default that outlives rollbacks and that `RESET ROLE` returns to. `migrate` and
  `flush` connect as the owner (memoryplatform/management/commands). A separate login for
  the role would need a second set of credentials on every deployment, for no gain against
  the threat this guards: a query that forgot its project filter. Code able to run arbitrary
  SQL could as well set `app.all_projects` itself; row-level security here backs the
  application's scoping, it does not replace it.
- **Policies**: every table with a `project_id` column gets `ENABLE` and `FORCE ROW LEVEL
  SECURITY` (forced: the owner is held to it too, unless it is a superuser) and one policy,
  for reads and writes alike, `tenant_isolation`: the row's project is `app.project_id`, or
  `app.all_projects` is `on`. Each setting is read once per statement (a sub-select, an
  InitPlan), not once per row. `install` runs after every `migrate` (post_migrate): a new
  tenant table gets its policy without anyone remembering to write one.
- **Settings**: `scope_statement` gives the `set_config` call that puts a scope on a session;
  the backend sends it when the scope of the code using a connection changes.
- **Leakproof search operators**: a policy's condition is a security barrier, and PostgreSQL
  checks a condition whose function is not marked LEAKPROOF only after it, never as an index
  condition. The text-search match `@@`, array overlap and containment, jsonb containment and
  pg_trgm's `%` are not marked so by PostgreSQL: under the policy a keyword search read every
  row of its project through the project's index and tested each (docs/security.md, "Row-level
  security", has the cost). `install` marks their functions
  LEAKPROOF (`LEAKPROOF_FUNCTIONS`): they raise no error that depends on a row's values, and
  only the platform's own queries run against these tables (the threat above). Marking needs
  a superuser: the embedded default's owner is one; with an owner that is not, `migrate` logs
  the statements (`leakproof_statements`) for an administrator to run once, and `manage.py
  check --deploy` warns until they have been.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

import psycopg
from django.apps import apps
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from psycopg import errors
from psycopg.pq import TransactionStatus

from platformcore.lib.project_scope import ALL_PROJECTS, Scope, all_projects

logger = logging.getLogger("memoryplatform.rls")

POLICY = "tenant_isolation"
PROJECT_SETTING = "app.project_id"
ALL_SETTING = "app.all_projects"
_CONDITION = (
    f"project_id = (SELECT nullif(current_setting('{PROJECT_SETTING}', true), '')::bigint) "
    f"OR (SELECT current_setting('{ALL_SETTING}', true) = 'on')"
)

_FAILED = TransactionStatus.INERROR
_TENANT_TABLES_SQL = """
SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
       EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = %s)
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'project_id' AND NOT a.attisdropped
WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
ORDER BY c.relname
"""


class RuntimeRoleUnusable(psycopg.OperationalError):
    """A connection could not act as the runtime role: it does not exist yet (a database no
    `migrate` has run on) or the login may not take it. Django raises it as its own
    OperationalError, with this message, so health checks and job retries treat it as any
    unreachable database."""


def explain_connect_failure(exc: psycopg.OperationalError, role: str) -> Exception:
    """The error to raise for a failed connection that was to act as `role`: a clear one
    naming what to run when the role is the cause, else `exc` itself."""
    text = str(exc)
    if f'role "{role}" does not exist' in text:
        return RuntimeRoleUnusable(
            f"The database has not been set up for this platform yet (its runtime role "
            f"{role!r} does not exist): run `python manage.py migrate` first. A login user "
            f"that may not create roles needs an administrator to run, once: CREATE ROLE "
            f'"{role}" NOLOGIN NOSUPERUSER NOBYPASSRLS; GRANT "{role}" TO <login user>; '
            "(docs/security.md, Row-level security)."
        )
    if f'permission denied to set role "{role}"' in text:
        return RuntimeRoleUnusable(
            f"The database user may not act as the runtime role {role!r}: run "
            f"`python manage.py migrate` (it grants it when it may), or as an administrator "
            f'GRANT "{role}" TO <login user>; (docs/security.md, Row-level security).'
        )
    return exc


def first_start_message(exc: BaseException) -> str | None:
    """What to tell an operator whose command failed because the database was never
    migrated (its runtime role or its tables missing), or None for any other failure."""
    for cause in (exc, exc.__cause__):
        if isinstance(cause, RuntimeRoleUnusable):
            return str(cause)
        if isinstance(cause, errors.UndefinedTable):
            return (
                f"{str(cause).splitlines()[0]}: has `python manage.py migrate` run on this "
                "database?"
            )
    return None


def scope_values(scope: Scope) -> tuple[str, str]:
    """The values of PROJECT_SETTING and ALL_SETTING for `scope`."""
    project = "" if scope is None or scope is ALL_PROJECTS else str(scope)
    every = "on" if scope is ALL_PROJECTS else ""
    return project, every


def scope_statement(scope: Scope) -> tuple[str, list[str]]:
    """The statement that puts `scope` on a session (session-level: it holds across
    transactions in autocommit, and the backend re-sends it after a rollback). On a Citus
    coordinator the scope goes with each transaction instead (platformcore/db/citus.py)."""
    project, every = scope_values(scope)
    return (
        "SELECT set_config(%s, %s, false), set_config(%s, %s, false)",
        [PROJECT_SETTING, project, ALL_SETTING, every],
    )


RESET_STATEMENT = (
    f"SELECT set_config('{PROJECT_SETTING}', '', false), set_config('{ALL_SETTING}', '', false)"
)


# The functions behind the operators searches filter with (see the module docstring).
LEAKPROOF_FUNCTIONS = (
    "ts_match_vq(tsvector, tsquery)",  # @@: keyword search
    "arrayoverlap(anyarray, anyarray)",  # &&: entity names and aliases, tags
    "arraycontains(anyarray, anyarray)",  # @>: tag filters
    "jsonb_contains(jsonb, jsonb)",  # @>: metadata filters
    "similarity_op(text, text)",  # pg_trgm's %: an entity name spelled nearly
)


def leaky_functions(cursor: Any) -> list[str]:
    """Those of LEAKPROOF_FUNCTIONS present in the database and not marked LEAKPROOF."""
    cursor.execute(
        "SELECT f FROM unnest(%s::text[]) AS f"
        " JOIN pg_proc p ON p.oid = to_regprocedure(f) WHERE NOT p.proleakproof",
        [list(LEAKPROOF_FUNCTIONS)],
    )
    return [row[0] for row in cursor.fetchall()]


def leakproof_statements(functions: list[str]) -> list[str]:
    return [f"ALTER FUNCTION {function} LEAKPROOF;" for function in functions]


def _mark_leakproof(cursor: Any) -> None:
    leaky = leaky_functions(cursor)
    if not leaky:
        return
    cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    row = cursor.fetchone()
    if not (row and row[0]):
        logger.warning(
            "row-level security: searches filter rows after the policy, not through their "
            "indexes, until a superuser runs: %s",
            " ".join(leakproof_statements(leaky)),
        )
        return
    for statement in leakproof_statements(leaky):
        cursor.execute(statement)
    logger.info("row-level security: %s marked leakproof", ", ".join(leaky))


def tenant_tables(cursor: Any) -> list[tuple[str, bool, bool, bool]]:
    """(table, row security on, forced, has our policy) for every table with a project_id."""
    cursor.execute(_TENANT_TABLES_SQL, [POLICY])
    return [tuple(row) for row in cursor.fetchall()]


def install(connection: BaseDatabaseWrapper, role: str) -> list[str]:
    """Create the runtime role if absent, grant it DML, and put forced row-level security
    with the tenant policy on every tenant table that lacks it. Idempotent (runs after every
    migrate); returns the tables it changed. Runs as the owner."""
    quote = connection.ops.quote_name
    changed = []
    with connection.cursor() as cursor:
        _ensure_role(cursor, role)
        _mark_leakproof(cursor)
        for table, enabled, forced, has_policy in tenant_tables(cursor):
            if enabled and forced and has_policy:
                continue
            name = quote(table)
            if not has_policy:
                cursor.execute(f"CREATE POLICY {POLICY} ON {name} USING ({_CONDITION})")
            cursor.execute(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
            cursor.execute(f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY")
            changed.append(table)
        _grant(cursor, role)
    if changed:
        logger.info("row-level security on %s", ", ".join(changed))
    return changed


def uninstall(connection: BaseDatabaseWrapper) -> list[str]:
    """Take the policies off (MEMORY_ROW_LEVEL_SECURITY off): the owner, no longer acting as
    the runtime role, must not be held to policies nothing would satisfy."""
    quote = connection.ops.quote_name
    changed = []
    with connection.cursor() as cursor:
        for table, enabled, forced, has_policy in tenant_tables(cursor):
            if not (enabled or forced or has_policy):
                continue
            name = quote(table)
            cursor.execute(f"DROP POLICY IF EXISTS {POLICY} ON {name}")
            cursor.execute(f"ALTER TABLE {name} NO FORCE ROW LEVEL SECURITY")
            cursor.execute(f"ALTER TABLE {name} DISABLE ROW LEVEL SECURITY")
            changed.append(table)
    return changed


def _ensure_role(cursor: Any, role: str) -> None:
    """The role, and the login user's right to act as it (several processes may race here:
    roles belong to the whole server). A login user that may not create roles needs an
    administrator to run the two statements below once."""
    cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = %s", [role])
    row = cursor.fetchone()
    if row is not None and (row[0] or row[1]):
        message = f"the runtime role {role!r} is a superuser or bypasses row-level security"
        raise ImproperlyConfigured(message)
    cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    superuser = cursor.fetchone()[0]
    try:
        if row is None:
            try:
                with _savepoint(cursor):
                    cursor.execute(
                        f'CREATE ROLE "{role}" NOLOGIN NOSUPERUSER NOBYPASSRLS NOINHERIT'
                    )
            except DatabaseError as exc:  # another process created it first
                if not isinstance(exc.__cause__, errors.DuplicateObject):
                    raise
        if not superuser and not _member(cursor, role):  # a superuser may act as any role
            cursor.execute(f'GRANT "{role}" TO CURRENT_USER')
    except DatabaseError as exc:
        if not isinstance(exc.__cause__, errors.InsufficientPrivilege):
            raise
        raise ImproperlyConfigured(
            f"the database user may not create or take the role {role!r}: as an administrator "
            f'run CREATE ROLE "{role}" NOLOGIN NOSUPERUSER NOBYPASSRLS; '
            f'GRANT "{role}" TO <this user>; or set MEMORY_ROW_LEVEL_SECURITY=false'
        ) from exc


def _member(cursor: Any, role: str) -> bool:
    """Whether the login may already act as `role` (an administrator granted it once: a login
    without CREATEROLE could not grant it again)."""
    # PostgreSQL 16+: a CREATEROLE login holds the roles it creates with ADMIN but not SET
    right = "SET" if cursor.connection.info.server_version >= 160000 else "MEMBER"
    cursor.execute(f"SELECT pg_has_role(current_user, %s, '{right}')", [role])
    return bool(cursor.fetchone()[0])


@contextlib.contextmanager
def _savepoint(cursor: Any) -> Iterator[None]:
    """A failed CREATE ROLE inside a transaction (a test database's setup) leaves it usable."""
    if cursor.connection.autocommit:
        yield
        return
    cursor.execute("SAVEPOINT memory_rls_role")
    try:
        yield
    except Exception:
        cursor.execute("ROLLBACK TO SAVEPOINT memory_rls_role")
        raise
    cursor.execute("RELEASE SAVEPOINT memory_rls_role")


def _grant(cursor: Any, role: str) -> None:
    """DML on what exists now, and on what the owner creates later (a table made by a later
    migration is usable before post_migrate runs again)."""
    quote = f'"{role}"'
    cursor.execute(f"GRANT USAGE ON SCHEMA public TO {quote}")
    cursor.execute(
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {quote}"
    )
    cursor.execute(f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {quote}")
    cursor.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {quote}"
    )
    cursor.execute(
        "ALTER DEFAULT PRIVILEGES IN SCHEMA public "
        f"GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {quote}"
    )


@contextlib.contextmanager
def as_owner(connection: BaseDatabaseWrapper) -> Iterator[None]:
    """Run the block as the login user instead of the runtime role: DDL at run time (the
    vector index rebuilt concurrently) needs the tables' owner, and PostgreSQL shows the
    planner's statistics of a table under row-level security (pg_stats) only to a user that
    bypasses it (a superuser login). Inside a transaction that the block breaks, the role
    comes back with the rollback."""
    if not connection.settings_dict.get("APP_ROLE") or getattr(connection, "as_owner", False):
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET ROLE NONE")
    try:
        yield
    finally:
        raw = connection.connection
        if raw is not None and raw.info.transaction_status != _FAILED:
            with connection.cursor() as cursor:
                cursor.execute("RESET ROLE")  # back to the startup default: the runtime role


@contextlib.contextmanager
def owner_connection(using: str, reason: str) -> Iterator[None]:
    """The block's connection is the login user's, not the runtime role's (schema changes,
    truncation), and sees every project (data migrations on a non-superuser owner, whom the
    forced policies hold too). Inside a transaction the connection is kept as it is."""
    connection = connections[using]
    switch = connection.settings_dict.get("APP_ROLE") and not (
        getattr(connection, "as_owner", True) or connection.in_atomic_block
    )
    if switch:
        connection.close()
        connection.as_owner = True  # type: ignore[attr-defined]
    try:
        with all_projects(reason):
            yield
    finally:
        if switch:
            connection.close()  # the next connection acts as the runtime role again
            connection.as_owner = False  # type: ignore[attr-defined]


def after_migrate(sender: Any, using: str = "default", **kwargs: Any) -> None:
    """post_migrate: (re)install the role and the policies once every app has migrated (the
    signal is sent per app; the last app with models is the cue)."""
    last = [config for config in apps.get_app_configs() if config.models_module is not None][-1]
    if sender is not last:
        return
    connection = connections[using]
    role = connection.settings_dict.get("APP_ROLE")
    with owner_connection(using, "migrate: row-level security policies"):
        if role:
            install(connection, role)
        else:
            uninstall(connection)
