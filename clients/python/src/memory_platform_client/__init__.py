"""Python SDK for the Memory Platform REST API.

```python
from memory_platform_client import Client

with Client(api_key="mp_...", url="http://127.0.0.1:8000") as client:
    client.memories.create("User prefers dark mode", user_id="alice", tags=["ui"])
    hits = client.memories.search("what theme does alice like?", user_id="alice")
```

`AsyncClient` has the same methods as coroutines; `Memory` / `AsyncMemory` offer mem0's
interface. Errors are `MemoryPlatformError` subclasses (`NotFound`, `ValidationError`, ...).
"""

from memory_platform_client._async import AsyncClient, AsyncMemory
from memory_platform_client._sync import Client, Memory
from memory_platform_client.errors import (
    APIConnectionError,
    AuthenticationError,
    ConfigurationError,
    Conflict,
    MemoryPlatformError,
    NotFound,
    PermissionDenied,
    RateLimited,
    ServerError,
    ValidationError,
)
from memory_platform_client.operations import OPERATIONS

__version__ = "0.1.0"

__all__ = [
    "OPERATIONS",
    "APIConnectionError",
    "AsyncClient",
    "AsyncMemory",
    "AuthenticationError",
    "Client",
    "ConfigurationError",
    "Conflict",
    "Memory",
    "MemoryPlatformError",
    "NotFound",
    "PermissionDenied",
    "RateLimited",
    "ServerError",
    "ValidationError",
    "__version__",
]
