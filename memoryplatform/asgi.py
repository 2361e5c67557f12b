"""ASGI entry point: Django for HTTP (one hop per request to a long-lived thread, see
platformcore/lib/asgi_http.py), Channels for websockets, MCP routed ahead of both."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
os.environ.setdefault("MEMORY_DB_POOL", "true")  # a request a thread: pooled connections
django.setup(set_prefix=False)

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.conf import settings  # noqa: E402

from mcpserver.asgi import with_mcp  # noqa: E402
from memories.embeddings import warm_up  # noqa: E402
from memoryplatform.routing import browser_origin_validator, websocket_urlpatterns  # noqa: E402
from platformcore.lib.asgi_http import ThreadedHTTPHandler  # noqa: E402
from platformcore.lib.asgi_limits import RequestBodyLimit  # noqa: E402
from platformcore.lib.work_budget import WorkBudget  # noqa: E402

# MCP (/mcp Streamable HTTP, /sse + /messages/ legacy SSE) is routed by path before Django;
# every HTTP request's body is capped first (platformcore/lib/asgi_limits.py).
django_and_channels = ProtocolTypeRouter(
    {
        "http": ThreadedHTTPHandler(
            threads=settings.MEMORY_HTTP_THREADS,
            queue_limit=settings.MEMORY_HTTP_QUEUE_LIMIT,
            queue_timeout=settings.MEMORY_HTTP_QUEUE_TIMEOUT,
            budget=WorkBudget(
                slots=settings.MEMORY_PROJECT_HEAVY_REQUESTS,
                queue=settings.MEMORY_PROJECT_HEAVY_QUEUE,
                wait=settings.MEMORY_PROJECT_HEAVY_WAIT,
            ),
            heavy_routes=frozenset(settings.MEMORY_HEAVY_ROUTES),
            heavy_threads=settings.MEMORY_HEAVY_THREADS,
        ),
        "websocket": browser_origin_validator(URLRouter(websocket_urlpatterns)),
    }
)
application = RequestBodyLimit(
    with_mcp(django_and_channels), max_bytes=settings.MEMORY_MAX_REQUEST_BYTES
)
warm_up()  # the model loads in the background, not on the first search
