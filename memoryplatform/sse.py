"""Server-Sent Events: `GET /api/v1/events/` streams the caller's project events.

The same events as the websocket feed, for clients that only speak HTTP. A comment line is sent
every `KEEPALIVE_SECONDS` so proxies keep the connection open. Each event carries its `id:`,
so a client that reconnects with `Last-Event-ID` (browsers' EventSource do it by themselves)
first gets the buffered events it missed. Filters as query parameters: `types=a,b`,
`user_id=`, `agent_id=`, `run_id=`.

`event_stream` serves any feed of the project's events: a `Feed` says how an event is
written (compatibility layers give their clients other names and payloads, compat/), what the
first frame is and what follows the replay of missed events.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass

from channels.layers import get_channel_layer
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse

from platformcore import metrics
from platformcore.events import (
    Event,
    InvalidSubscription,
    Subscription,
    event_json_schema,
    events_since,
    project_group,
    sse_frame,
)
from platformcore.lib.db_threads import database_call
from platformcore.lib.event_feeds import feed_parts
from tenants import streams
from tenants.auth import stream_credential
from tenants.streams import StreamSlot

KEEPALIVE_SECONDS = 15.0
REVOKED = "the API key or access token was revoked or has expired"


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message, "fields": {}}}, status=status)


def _frame(event: Event) -> str:
    return sse_frame(event["type"], event, event.get("id"))


def _subscribed(slug: str, subscription: Subscription) -> str | None:
    return sse_frame("subscribed", {"project": slug, "filters": subscription.as_dict()})


def no_greeting(slug: str, subscription: Subscription) -> str | None:
    return None


@dataclass(frozen=True)
class Feed:
    """How a stream writes the project's events: `render` gives an event's frames (none: the
    client does not hear of it), `greeting` the first frame, `caught_up` the frame that
    follows the replay of what a reconnecting client missed (sent on every connect)."""

    render: Callable[[Event], Iterable[str]] = lambda event: [_frame(event)]
    greeting: Callable[[str, Subscription], str | None] = _subscribed
    caught_up: Callable[[], str | None] = lambda: None


PLATFORM_FEED = Feed()


def feed_view(name: str) -> Callable[[HttpRequest], Awaitable[HttpResponse]]:
    """An SSE endpoint writing the project's events as the feed registered as `name`
    does (a compatibility layer's event names and payloads)."""

    async def view(request: HttpRequest) -> HttpResponse:
        return await event_stream(request, _feed(name))

    return view


@functools.cache
def _feed(name: str) -> Feed:
    """The feed a compatibility layer registered as `name` (platformcore/lib/event_feeds.py)."""
    parts = feed_parts(name)
    return Feed(
        render=parts.render,
        greeting=parts.greeting or no_greeting,
        caught_up=parts.caught_up or _nothing,
    )


def _nothing() -> None:
    return None


async def _stream(
    group: str,
    slug: str,
    still_usable: Callable[[], bool],
    subscription: Subscription,
    resume_after: int | None,
    feed: Feed = PLATFORM_FEED,
) -> AsyncIterator[str]:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(group, channel)  # before the replay: nothing falls between the two
    checked = time.monotonic()
    last_sent = 0
    try:
        if (greeting := feed.greeting(slug, subscription)) is not None:
            yield greeting
        if resume_after is not None:
            project_id = int(group.removeprefix("project-"))
            for event in await database_call(events_since, project_id, resume_after):
                last_sent = max(last_sent, event.get("id") or 0)
                if subscription.wants(event):
                    for text in feed.render(event):
                        yield text
        if (caught_up := feed.caught_up()) is not None:
            yield caught_up
        while True:
            if time.monotonic() - checked >= settings.MEMORY_KEY_RECHECK_SECONDS:
                if not await database_call(still_usable):
                    yield f"event: revoked\ndata: {json.dumps({'reason': REVOKED})}\n\n"
                    return
                checked = time.monotonic()
            wait = min(KEEPALIVE_SECONDS, settings.MEMORY_KEY_RECHECK_SECONDS)
            try:
                message = await asyncio.wait_for(layer.receive(channel), wait)
            except TimeoutError:
                yield ": keepalive\n\n"
                continue
            event = message.get("event")
            event_id = (event or {}).get("id") or 0
            if not event or (event_id and event_id <= last_sent):
                continue
            last_sent = max(last_sent, event_id)
            if subscription.wants(event):
                for text in feed.render(event):
                    yield text
    finally:
        await layer.group_discard(group, channel)


async def events(request: HttpRequest) -> HttpResponse:
    return await event_stream(request, PLATFORM_FEED)


async def event_stream(request: HttpRequest, feed: Feed) -> HttpResponse:
    """The caller's project's events as Server-Sent Events, written as `feed` writes them."""
    if request.method != "GET":
        return _error(405, "method_not_allowed", "Use GET.")
    credential = stream_credential(
        authorization=request.headers.get("Authorization"),
        x_api_key=request.headers.get("X-API-Key"),
        query_key=request.GET.get("api_key"),
        resource=request.build_absolute_uri(request.path),
    )
    api_key = await database_call(credential.verify) if credential else None
    if api_key is None:
        return _error(
            401, "not_authenticated", "A valid API key or OAuth access token is required."
        )
    if not api_key.has_scope("read"):
        return _error(
            403, "permission_denied", "This API key or access token lacks the 'read' scope."
        )
    try:
        subscription, resume_after = _subscription(request)
    except InvalidSubscription as exc:
        return _error(400, "invalid", str(exc))
    slot = await StreamSlot.acquire(api_key)
    if slot is None:  # the key holds its cap of open streams (tenants/streams.py)
        refused = _error(429, "too_many_streams", streams.refusal_message(api_key))
        refused["Retry-After"] = str(streams.RETRY_AFTER_SECONDS)
        return refused
    stream = slot.holding(
        _stream(
            project_group(api_key.project_id),
            api_key.project.slug,
            functools.partial(credential.still_usable, api_key),
            subscription,
            resume_after,
            feed,
        )
    )
    response = StreamingHttpResponse(
        metrics.counted_stream("sse", stream),
        content_type="text/event-stream",
    )
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def _subscription(request: HttpRequest) -> tuple[Subscription, int | None]:
    filters = {k: v for k, v in request.GET.items() if k not in ("api_key", "last_event_id")}
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    try:
        resume_after = int(last) if last else None
    except ValueError:
        raise InvalidSubscription("Last-Event-ID must be an event id (an integer)") from None
    return Subscription.of(**filters), resume_after


def events_schema(request: HttpRequest) -> HttpResponse:
    """`GET /api/v1/events/schema/`: the JSON Schema of a live-feed event (public: it is the
    same for every project and holds no data)."""
    return JsonResponse(event_json_schema())
