"""The optional LLM, behind one small interface.

`get_llm()` returns the configured OpenAI-compatible chat model (OpenAI, Ollama, vLLM...) or
None when no LLM is configured: every caller must have an offline path for None, and must treat
`ProviderError` (server down, timeout, bad JSON) as "no answer" rather than crash.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Protocol

from django.conf import settings


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]


class ChatLLM(Protocol):
    model_name: str

    def complete_json(self, *, system: str, user: str) -> Any:
        """One chat completion in JSON mode; returns the parsed JSON value."""
        ...

    def call_tools(
        self, *, system: str, user: str, tools: list[dict[str, Any]], tool_choice: str = "auto"
    ) -> list[ToolCall]:
        """One chat completion offering `tools` (OpenAI function schemas); returns the calls."""
        ...


def get_llm() -> ChatLLM | None:
    if not settings.MEMORY_LLM_BASE_URL and not settings.MEMORY_LLM_API_KEY:
        return None
    return _build(
        settings.MEMORY_LLM_BASE_URL or None,
        settings.MEMORY_LLM_API_KEY or "not-needed",
        settings.MEMORY_LLM_MODEL,
        settings.MEMORY_LLM_TIMEOUT,
        settings.MEMORY_LLM_MAX_RETRIES,
    )


@functools.lru_cache(maxsize=8)
def _build(
    base_url: str | None, api_key: str, model: str, timeout: float, max_retries: int
) -> ChatLLM:
    from memoryplatform.llm.openai_chat import OpenAIChat

    return OpenAIChat(
        base_url=base_url, api_key=api_key, model=model, timeout=timeout, max_retries=max_retries
    )
