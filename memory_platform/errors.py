"""What `Memory` raises: the fact-memory specification's error types, each also the builtin
exception mem0's open-source `Memory` raises for the same case (a `ValueError` for a missing
scope, an unknown id or bad input), so code written for either catches them."""

from __future__ import annotations


class MemoryError(Exception):  # the specification's name (not the builtin): import it qualified
    """Base class; `code` is the platform's error code, `fields` names the bad arguments."""

    code = "error"

    def __init__(self, message: str, *, fields: dict[str, list[str]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields or {}


class ValidationError(MemoryError, ValueError):
    code = "invalid"


class ScopeError(ValidationError):
    """None of user_id, agent_id, run_id was given."""

    code = "scope_required"


class NotFoundError(MemoryError, ValueError):
    code = "not_found"


class ConflictError(MemoryError, ValueError):
    """Another memory of the scope already has this text (an update would duplicate it)."""

    code = "conflict"


class ProviderError(MemoryError):
    """The embedding model or the LLM failed (network, timeout, a bad answer)."""

    code = "provider_error"


class LLMError(ProviderError):
    code = "llm_error"


class EmbeddingError(ProviderError):
    code = "embedding_error"


class VectorStoreError(MemoryError):
    """The database could not be reached or refused the statement."""

    code = "vector_store_error"


class ConfigurationError(MemoryError, ValueError):
    """`Memory.from_config` was given something the platform does not support; the message
    names what to use instead."""

    code = "configuration"
