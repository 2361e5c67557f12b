"""Projects and API keys: creation, verification, revocation."""

from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from django.conf import settings
from django.db import IntegrityError, connection, models, transaction
from django.utils import timezone

from platformcore.lib.errors import Conflict, InvalidInput, NotFound
from platformcore.lib.project_scope import all_projects, project_scope
from tenants.models import SCOPES, ApiKey, Project

KEY_PREFIX = "mp_"
T = TypeVar("T", bound=models.Model)


def _hash(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


@transaction.atomic
def project_create(*, slug: str, name: str = "") -> Project:
    project = Project(slug=slug, name=name or slug)
    project.full_clean()
    try:
        with transaction.atomic():
            project.save()
    except IntegrityError as exc:
        raise Conflict(f"project {slug!r} already exists", fields={"slug": ["exists"]}) from exc
    return project


def project_get(*, slug: str) -> Project:
    try:
        return Project.objects.get(slug=slug)
    except Project.DoesNotExist as exc:
        raise NotFound(f"no project {slug!r}") from exc


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str


def parse_scopes(raw: str | list[str]) -> list[str]:
    items = raw.split(",") if isinstance(raw, str) else raw
    given = {item.strip().lower() for item in items if item.strip()}
    unknown = sorted(given - set(SCOPES))
    scopes = [scope for scope in SCOPES if scope in given]
    if unknown or not scopes:
        raise InvalidInput(
            f"scopes must be a non-empty subset of {', '.join(SCOPES)}",
            fields={"scopes": [f"unknown: {', '.join(unknown)}" if unknown else "empty"]},
        )
    return scopes


@transaction.atomic
def api_key_create(
    *,
    project: Project,
    scopes: list[str],
    name: str = "",
    expires_in_days: int | None = None,
) -> IssuedKey:
    prefix = secrets.token_hex(4)
    raw_key = f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"
    expires_at = timezone.now() + timedelta(days=expires_in_days) if expires_in_days else None
    api_key = ApiKey.objects.create(
        project=project,
        name=name,
        prefix=prefix,
        key_hash=_hash(raw_key),
        scopes=parse_scopes(scopes),
        expires_at=expires_at,
    )
    return IssuedKey(api_key=api_key, raw_key=raw_key)


def api_key_verify(raw_key: str) -> ApiKey | None:
    """The usable key matching `raw_key`, or None. Touches last_used_at at most once a minute."""
    parts = raw_key.split("_")
    if len(parts) < 3 or not raw_key.startswith(KEY_PREFIX):
        return None
    with all_projects("api key lookup", routine=True):  # the key is what names the project
        api_key = _key_with_project(parts[1])
    if api_key is None or not hmac.compare_digest(api_key.key_hash, _hash(raw_key)):
        return None
    if not api_key.is_usable:
        return None
    with project_scope(api_key.project_id):
        _touch(api_key)
    return api_key


def _key_with_project(prefix: str) -> ApiKey | None:
    """`ApiKey.objects.select_related("project").get(prefix=prefix)` (or None) from a statement
    written once per process. Every authenticated request makes this lookup, and the ORM
    compiled its query each time, which cost several times what the statement costs."""
    with connection.cursor() as cursor:
        cursor.execute(_key_lookup_sql(), [prefix])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(ApiKey._meta.concrete_fields)
    api_key = _from_row(ApiKey, row[:split])
    ApiKey.project.field.set_cached_value(api_key, _from_row(Project, row[split:]))
    return api_key


@functools.cache
def _key_lookup_sql() -> str:
    quote = connection.ops.quote_name
    columns = [
        f"{alias}.{quote(str(field.column))}"
        for alias, model in (("k", ApiKey), ("p", Project))
        for field in model._meta.concrete_fields
    ]
    return (
        f"SELECT {', '.join(columns)} FROM {quote(ApiKey._meta.db_table)} k "
        f"JOIN {quote(Project._meta.db_table)} p ON p.id = k.project_id WHERE k.prefix = %s"
    )


def _from_row(model: type[T], values: tuple) -> T:
    """A model instance from its concrete fields' column values, converted as the ORM does."""
    fields = model._meta.concrete_fields
    converted = [
        field.from_db_value(value, None, connection) if hasattr(field, "from_db_value") else value
        for field, value in zip(fields, values, strict=True)
    ]
    return model.from_db(connection.alias, [field.attname for field in fields], converted)


def _touch(api_key: ApiKey) -> None:
    now = timezone.now()
    every = timedelta(seconds=settings.MEMORY_API_KEY_TOUCH_SECONDS)
    if api_key.last_used_at is None or now - api_key.last_used_at >= every:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
        api_key.last_used_at = now


def api_key_revoke(*, prefix: str, at: datetime | None = None) -> ApiKey:
    api_key = ApiKey.objects.filter(prefix=prefix.removeprefix(KEY_PREFIX).split("_")[0]).first()
    if api_key is None:
        raise NotFound(f"no API key with prefix {prefix!r}")
    if api_key.revoked_at is None:
        api_key.revoked_at = at or timezone.now()
        api_key.save(update_fields=["revoked_at"])
    return api_key


def api_key_still_usable(api_key_id: int) -> bool:
    """Whether a key checked earlier is still neither revoked nor expired: long-lived
    connections (websocket, SSE, an MCP stdio process) ask again every
    MEMORY_KEY_RECHECK_SECONDS and end when the answer is no."""
    with all_projects("api key recheck", routine=True):
        return ApiKey.objects.usable().filter(pk=api_key_id).exists()
