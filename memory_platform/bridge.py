"""The one bridge from `Memory`'s methods into Django, imported once the platform is open
(memory_platform/setup.py): arguments validated by the REST wrappers' serializers, the call
run for one project (row-level security), service errors raised as the library's errors.
Every operation is one function of compat/mem0/oss.py, as the REST wrappers call them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import DatabaseError, InterfaceError, OperationalError, close_old_connections
from django.db import connection as default_connection
from rest_framework import serializers

from compat.mem0 import oss
from compat.mem0 import serializers as s
from memories.memory_scope import SCOPE_RULE
from memory_platform import errors
from platformcore.lib import errors as service
from platformcore.lib.actor import Actor
from platformcore.lib.project_scope import project_scope
from tenants.models import Project

T = TypeVar("T")
ACTOR = Actor("library", "Memory")  # who made a change, in history


def run(project_id: int, work: Callable[[Project], T]) -> T:
    """`work(project)` for one project; service and database errors become the library's."""
    if not default_connection.in_atomic_block:
        close_old_connections()  # one the server dropped, or past its age, is replaced
    try:
        with project_scope(project_id):
            return work(Project.objects.get(pk=project_id))
    except service.ServiceError as exc:
        raise _translated(exc) from exc
    except (OperationalError, InterfaceError) as exc:
        raise errors.VectorStoreError(f"the database failed: {exc}") from exc
    except DatabaseError as exc:
        raise errors.VectorStoreError(f"the database refused the statement: {exc}") from exc


def validated(serializer_class: type[serializers.Serializer], data: dict[str, Any]) -> dict:
    """The REST wrappers' validation of the same input: a ValidationError naming the fields."""
    serializer = serializer_class(data=data)
    if serializer.is_valid():
        return dict(serializer.validated_data)
    fields = {name: [str(m) for m in _messages(value)] for name, value in serializer.errors.items()}
    message = "; ".join(f"{name}: {' '.join(messages)}" for name, messages in fields.items())
    raise errors.ValidationError(message, fields=fields)


def _messages(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [f"{key}: {' '.join(map(str, _messages(v)))}" for key, v in value.items()]
    return list(value) if isinstance(value, list) else [value]


def _translated(exc: service.ServiceError) -> errors.MemoryError:
    kind: type[errors.MemoryError] = errors.ValidationError
    if isinstance(exc, service.NotFound):
        kind = errors.NotFoundError
    elif isinstance(exc, service.Conflict):
        kind = errors.ConflictError
    elif isinstance(exc, service.ProviderError):
        kind = errors.ProviderError
    elif exc.message == SCOPE_RULE:
        kind = errors.ScopeError
    return kind(exc.message, fields=exc.fields)


# --- the operations ---------------------------------------------------------------------------


def add(project_id: int, data: dict[str, Any], *, graph: bool) -> dict[str, Any]:
    data = validated(s.OssAddSerializer, data)
    return run(project_id, lambda p: oss.oss_add(project=p, actor=ACTOR, data=data, graph=graph))


def search(project_id: int, data: dict[str, Any], *, graph: bool) -> dict[str, Any]:
    data = validated(s.OssSearchSerializer, data)
    return run(project_id, lambda p: oss.oss_search(project=p, data=data, graph=graph))


def get(project_id: int, memory_id: str) -> dict[str, Any] | None:
    return run(project_id, lambda p: oss.oss_get(project=p, memory_id=memory_id))


def get_all(project_id: int, data: dict[str, Any]) -> dict[str, Any]:
    data = validated(s.OssListSerializer, data)
    return run(project_id, lambda p: oss.oss_get_all(project=p, data=data))


def update(project_id: int, memory_id: str, data: dict[str, Any]) -> dict[str, str]:
    data = validated(s.OssUpdateSerializer, data)
    return run(
        project_id,
        lambda p: oss.oss_update(project=p, actor=ACTOR, memory_id=memory_id, data=data),
    )


def delete(project_id: int, memory_id: str) -> dict[str, str]:
    return run(project_id, lambda p: oss.oss_delete(project=p, actor=ACTOR, memory_id=memory_id))


def delete_all(project_id: int, data: dict[str, Any]) -> dict[str, Any]:
    data = validated(s.OssScopeSerializer, data)
    return run(project_id, lambda p: oss.oss_delete_all(project=p, actor=ACTOR, data=data))


def history(project_id: int, memory_id: str) -> list[dict[str, Any]]:
    return run(project_id, lambda p: oss.oss_history(project=p, memory_id=memory_id))


def reset(project_id: int) -> dict[str, Any]:
    return run(project_id, lambda p: oss.oss_reset(project=p))


def entities(project_id: int, data: dict[str, Any]) -> dict[str, Any]:
    data = validated(s.OssListSerializer, data)
    return run(project_id, lambda p: oss.oss_entities(project=p, data=data))


def relations(project_id: int, name: str, data: dict[str, Any]) -> dict[str, Any]:
    data = validated(s.OssScopeSerializer, data)
    return run(project_id, lambda p: oss.oss_entity_relations(project=p, name=name, data=data))
