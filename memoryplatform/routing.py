"""Websocket routes, and who may open them."""

from __future__ import annotations

from typing import Any
from urllib.parse import ParseResult

from channels.security.websocket import OriginValidator
from django.conf import settings
from django.urls import path

from memoryplatform.consumers import EventsConsumer

websocket_urlpatterns = [
    path("ws/events/", EventsConsumer.as_asgi()),
]


class BrowserOriginValidator(OriginValidator):
    """A browser sends `Origin`: it must be one of ALLOWED_HOSTS, so a page elsewhere cannot
    open the feed with a visitor's credentials. Agents, command-line tools and servers send
    none: they are let through to the consumer, which accepts them by API key alone."""

    def valid_origin(self, parsed_origin: ParseResult | None) -> bool:
        return parsed_origin is None or bool(super().valid_origin(parsed_origin))


def browser_origin_validator(application: Any) -> BrowserOriginValidator:
    allowed = settings.ALLOWED_HOSTS or (
        ["localhost", "127.0.0.1", "[::1]"] if settings.DEBUG else []
    )
    return BrowserOriginValidator(application, allowed)
