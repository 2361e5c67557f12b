"""Event feeds: how other systems' clients hear the project's events (memoryplatform/sse.py
`feed_view`). A compatibility layer registers its feed in its `AppConfig.ready()`: `render`
gives an event's frames, `greeting` the first frame, `caught_up` the frame that follows the
replay of what a reconnecting client missed. A deployment may replace a feed with import
strings in settings: `MEMORY_EVENT_FEEDS = {"name": {"render": "package.module.function"}}`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class FeedParts:
    render: Callable[..., Any]
    greeting: Callable[..., Any] | None = None
    caught_up: Callable[..., Any] | None = None


_registered: dict[str, FeedParts] = {}


def register_feed(
    name: str,
    *,
    render: Callable[..., Any],
    greeting: Callable[..., Any] | None = None,
    caught_up: Callable[..., Any] | None = None,
) -> None:
    _registered[name] = FeedParts(render, greeting, caught_up)


def feed_parts(name: str) -> FeedParts:
    """The feed registered as `name` (KeyError when none is)."""
    overridden = getattr(settings, "MEMORY_EVENT_FEEDS", {}).get(name)
    if overridden is None:
        return _registered[name]
    parts = {part: import_string(path) for part, path in overridden.items() if path}
    return FeedParts(**parts)
