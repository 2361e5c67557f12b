"""Memory Platform in-process: mem0's open-source `Memory` API over the platform's services,
with no server and no key (docs/compat-mem0.md, "In-process").

    from memory_platform import Memory
    m = Memory()
    m.add("My name is Bob", user_id="bob")
"""

from memory_platform.errors import (
    ConfigurationError,
    ConflictError,
    EmbeddingError,
    LLMError,
    MemoryError,
    NotFoundError,
    ProviderError,
    ScopeError,
    ValidationError,
    VectorStoreError,
)
from memory_platform.memory import AsyncMemory, Memory

__all__ = [
    "AsyncMemory",
    "ConfigurationError",
    "ConflictError",
    "EmbeddingError",
    "LLMError",
    "Memory",
    "MemoryError",
    "NotFoundError",
    "ProviderError",
    "ScopeError",
    "ValidationError",
    "VectorStoreError",
]
