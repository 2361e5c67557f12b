"""ASGI entry point: Django for HTTP, Channels for websockets."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryplatform.settings")
os.environ.setdefault("MEMORY_DB_POOL", "true")  # a request a thread: pooled connections
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from mcpserver.asgi import with_mcp  # noqa: E402
from memoryplatform.routing import websocket_urlpatterns  # noqa: E402

# MCP (/mcp Streamable HTTP, /sse + /messages/ legacy SSE) is routed by path before Django.
application = with_mcp(
    ProtocolTypeRouter(
        {
            "http": django_asgi_app,
            "websocket": AllowedHostsOriginValidator(URLRouter(websocket_urlpatterns)),
        }
    )
)
