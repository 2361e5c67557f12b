"""Whose memories: the user, agent and run a memory belongs to, and the rule that a write
names at least one of them. A value selectors and services share (no database)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from platformcore.lib.errors import InvalidInput

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
SCOPE_RULE = "At least one of user_id, agent_id, or run_id must be provided"


@dataclass(frozen=True)
class Scope:
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None

    @classmethod
    def of(cls, values: Any, *, required: bool = True) -> Scope:
        get = values.get if isinstance(values, dict) else lambda name: getattr(values, name, None)
        scope = cls(**{name: (get(name) or None) for name in SCOPE_FIELDS})
        if required and scope.is_empty:
            raise InvalidInput(SCOPE_RULE, fields={name: [SCOPE_RULE] for name in SCOPE_FIELDS})
        return scope

    @property
    def is_empty(self) -> bool:
        return not (self.user_id or self.agent_id or self.run_id)

    def as_filter(self) -> dict[str, str]:
        """Every given field must match; absent fields are not constrained."""
        return {name: value for name in SCOPE_FIELDS if (value := getattr(self, name))}

    def as_dict(self) -> dict[str, str | None]:
        return {name: getattr(self, name) for name in SCOPE_FIELDS}

    def exact_sql(self, alias: str) -> tuple[str, list[str]]:
        """SQL for "exactly this scope" on the table `alias` (an absent field must be NULL,
        as `filter(**as_dict())` reads), with its parameters."""
        values = self.as_dict()
        conditions = [
            f"{alias}.{name} IS NULL" if value is None else f"{alias}.{name} = %s"
            for name, value in values.items()
        ]
        return " AND ".join(conditions), [value for value in values.values() if value is not None]
