"""Who made a change, as recorded in history: an API key, a user, a job or a command."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    kind: str  # "key", "user", "job", "command", "system"
    name: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.name}"


SYSTEM = Actor("system", "memoryplatform")


def job(name: str) -> Actor:
    return Actor("job", name)


def command(name: str) -> Actor:
    return Actor("command", name)
