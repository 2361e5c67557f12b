"""Websocket routes."""

from __future__ import annotations

from django.urls import path

from memoryplatform.consumers import EventsConsumer

websocket_urlpatterns = [
    path("ws/events/", EventsConsumer.as_asgi()),
]
