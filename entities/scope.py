"""Whose graph an entity or relation belongs to: a user, an agent, a run, or the whole project.

The three fields are those of a memory (`user_id`, `agent_id`, `run_id`). All three empty is
the project-wide graph, shared by every scope. Two rules (docs/graph.md, "Scoped graphs"):

- **visible to a scope**: a read given a scope sees the project-wide graph and what matches
  every field the scope gives (a scope of `user_id=alice` sees Alice's entities of any agent
  or run), as memory filters match memories;
- **owned by a scope**: writes match and create entities in exactly one scope (the memory's,
  or the request's) and reuse project-wide entities, never another scope's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Q

from platformcore.lib.errors import InvalidInput
from tenants.models import Project

GRAPH_SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
MAX_SCOPE_LENGTH = 255


@dataclass(frozen=True)
class GraphScope:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @classmethod
    def of(cls, values: Any) -> GraphScope:
        """The scope of a memory, a request's validated data or any object with the fields;
        blank values mean "not given"."""
        get = values.get if isinstance(values, dict) else lambda name: getattr(values, name, None)
        return cls(**{name: _checked(name, get(name)) for name in GRAPH_SCOPE_FIELDS})

    @property
    def is_shared(self) -> bool:
        """The project-wide graph (no field given)."""
        return not (self.user_id or self.agent_id or self.run_id)

    def as_dict(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in GRAPH_SCOPE_FIELDS}

    def owned_q(self, prefix: str = "") -> Q:
        """Rows of exactly this scope (the project-wide graph for the empty scope)."""
        return Q(**{f"{prefix}{name}": value for name, value in self.as_dict().items()})

    def visible_q(self, prefix: str = "") -> Q:
        """Rows a read in this scope sees: everything for the empty scope, else the
        project-wide graph and the rows matching every given field."""
        given = {name: value for name, value in self.as_dict().items() if value}
        if not given:
            return Q()
        shared = Q(**{f"{prefix}{name}__isnull": True for name in GRAPH_SCOPE_FIELDS})
        return shared | Q(**{f"{prefix}{name}": value for name, value in given.items()})

    def visible_sql(self, alias: str) -> tuple[str, dict[str, Any]]:
        """`visible_q` as SQL on table alias `alias` (named parameters `scope_<field>`)."""
        given = {name: value for name, value in self.as_dict().items() if value}
        if not given:
            return "TRUE", {}
        shared = " AND ".join(f"{alias}.{name} IS NULL" for name in GRAPH_SCOPE_FIELDS)
        mine = " AND ".join(f"{alias}.{name} = %(scope_{name})s" for name in given)
        return f"(({shared}) OR ({mine}))", {f"scope_{name}": v for name, v in given.items()}

    def owned_sql(self, alias: str) -> tuple[str, dict[str, Any]]:
        """`owned_q` as SQL: each field equal, or null when not given."""
        parts = [
            f"{alias}.{name} IS NOT DISTINCT FROM %(own_{name})s::varchar"
            for name in GRAPH_SCOPE_FIELDS
        ]
        return " AND ".join(parts), {f"own_{name}": v for name, v in self.as_dict().items()}


SHARED = GraphScope()
GRAPH_SCOPE_MODES = ("user", "memory", "project")


def memory_graph_scope(project: Project, memory: Any) -> GraphScope:
    """The graph a memory's entities and relations go to, by the project's `graph_scope`
    setting, else MEMORY_GRAPH_SCOPE: `user` (the default) its user's graph, the project-wide
    one for a memory without a user; `memory` its whole scope (user, agent and run); `project`
    always the project-wide graph."""
    overrides = project.settings if isinstance(project.settings, dict) else {}
    mode = overrides.get("graph_scope") or settings.MEMORY_GRAPH_SCOPE
    if mode not in GRAPH_SCOPE_MODES:
        mode = settings.MEMORY_GRAPH_SCOPE
    match mode:
        case "user":
            return GraphScope.of({"user_id": getattr(memory, "user_id", None)})
        case "memory":
            return GraphScope.of(memory)
        case _:
            return SHARED


def _checked(name: str, value: Any) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string", fields={name: ["must be a string"]})
    if len(value) > MAX_SCOPE_LENGTH:
        message = f"at most {MAX_SCOPE_LENGTH} characters"
        raise InvalidInput(f"{name}: {message}", fields={name: [message]})
    return value
