"""The async client and its mem0-style facade."""

from memory_platform_client._async.client import AsyncClient
from memory_platform_client._async.facade import AsyncMemory

__all__ = ["AsyncClient", "AsyncMemory"]
