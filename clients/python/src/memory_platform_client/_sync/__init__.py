# Generated from _async/__init__.py by clients/python/scripts/unasync.py: do not edit.
"""The sync client and its mem0-style facade."""

from memory_platform_client._sync.client import Client
from memory_platform_client._sync.facade import Memory

__all__ = ["Client", "Memory"]
