"""OpenAI-compatible chat completions through the `openai` SDK.

The SDK retries connection errors, timeouts, 429 and 5xx with exponential backoff and jitter
(`max_retries`); `timeout` is the hard limit per attempt. Everything else it raises, and any
answer we cannot parse, becomes ProviderError.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from platformcore.lib.errors import ProviderError
from platformcore.llm import ToolCall

logger = logging.getLogger(__name__)


def _parse_json(text: str) -> Any:
    text = text.strip()
    if text.startswith("```"):  # some local models wrap JSON in a code fence
        text = text.strip("`")
        text = text.removeprefix("json").strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProviderError(f"LLM answered with invalid JSON: {text[:200]!r}") from exc


class OpenAIChat:
    def __init__(
        self, *, base_url: str | None, api_key: str, model: str, timeout: float, max_retries: int
    ) -> None:
        # imported here: the openai SDK is slow to import, and only a process that calls
        # the LLM needs it
        import openai

        self.model_name = model
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )

    def _create(self, **kwargs: Any) -> Any:
        try:
            return self._client.chat.completions.create(
                model=self.model_name, temperature=0, **kwargs
            )
        except self._openai.OpenAIError as exc:
            logger.warning("LLM request failed: %s", exc)
            raise ProviderError(f"LLM request failed: {exc}") from exc

    def complete_json(self, *, system: str, user: str) -> Any:
        response = self._create(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            response_format={"type": "json_object"},
        )
        return _parse_json(response.choices[0].message.content or "")

    def call_tools(
        self, *, system: str, user: str, tools: list[dict[str, Any]], tool_choice: str = "auto"
    ) -> list[ToolCall]:
        response = self._create(
            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
            tools=tools,
            tool_choice=tool_choice,
        )
        calls = response.choices[0].message.tool_calls or []
        return [
            ToolCall(
                name=call.function.name, arguments=_parse_json(call.function.arguments or "{}")
            )
            for call in calls
        ]
