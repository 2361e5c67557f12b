"""Hooks: how a lower app tells a higher one what happened, without importing it.

Dependencies point one way (lib ← tenants ← memories ← entities ← analytics / mcpserver). When
the memory store must let the knowledge graph act (memories were stored, merged into others,
a project was reset) or use one of its filters (memories linked to an entity), it calls the
hooks registered under that event. The app above registers its callables in its own
`AppConfig.ready()` (`register`), so they run in the order of INSTALLED_APPS, synchronously,
inside the caller's transaction (a failing hook rolls the whole write back). An event with no
hook does nothing; a provider that is missing (`provider`) is reported by the caller as
unavailable. A deployment may replace an event's hooks with import strings in settings:
`MEMORY_HOOKS = {"event": ["package.module.function", ...]}`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

_registered: dict[str, list[Callable[..., Any]]] = {}


def register(event: str, hook: Callable[..., Any]) -> None:
    """Install `hook` for `event` after those already installed (once)."""
    installed = _registered.setdefault(event, [])
    if hook not in installed:
        installed.append(hook)


def hooks(event: str) -> list[Callable[..., Any]]:
    """The callables installed for `event`, in order."""
    overridden = getattr(settings, "MEMORY_HOOKS", {}).get(event)
    if overridden is not None:
        return _imported(tuple(overridden))
    return list(_registered.get(event, ()))


def run_hooks(event: str, **kwargs: Any) -> list[Any]:
    """Call every hook of `event` with `kwargs`; their results, in order."""
    return [hook(**kwargs) for hook in hooks(event)]


def provider(event: str) -> Callable[..., Any] | None:
    """The one callable installed for `event` (the first), or None."""
    installed = hooks(event)
    return installed[0] if installed else None


@functools.cache
def _imported(paths: tuple[str, ...]) -> list[Callable[..., Any]]:
    return [import_string(path) for path in paths]
