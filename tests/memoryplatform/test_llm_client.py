from __future__ import annotations

import pytest

from platformcore.lib.errors import ProviderError
from platformcore.llm import get_llm
from tests.fakes.openai_server import tool_calls


def test_no_llm_configured_means_offline(settings) -> None:
    settings.MEMORY_LLM_BASE_URL = ""
    settings.MEMORY_LLM_API_KEY = ""
    assert get_llm() is None


def test_json_mode_answer_is_parsed(fake_openai) -> None:
    fake_openai.reply({"facts": ["User likes tea"]})
    assert get_llm().complete_json(system="s", user="u") == {"facts": ["User likes tea"]}
    request = fake_openai.chat_requests()[0]["body"]
    assert request["response_format"] == {"type": "json_object"}
    assert request["temperature"] == 0


def test_rate_limit_is_retried_then_succeeds(fake_openai) -> None:
    fake_openai.reply(429, {"ok": True})
    assert get_llm().complete_json(system="s", user="u") == {"ok": True}
    assert len(fake_openai.chat_requests()) == 2


def test_server_down_becomes_provider_error(fake_openai) -> None:
    fake_openai.reply(500, 500, 500)
    with pytest.raises(ProviderError):
        get_llm().complete_json(system="s", user="u")


def test_invalid_json_becomes_provider_error(fake_openai) -> None:
    fake_openai.reply("not json at all")
    with pytest.raises(ProviderError):
        get_llm().complete_json(system="s", user="u")


def test_tool_calls_are_returned(fake_openai) -> None:
    fake_openai.reply(tool_calls([("extract_entities", {"entities": [{"entity": "Alice"}]})]))
    calls = get_llm().call_tools(
        system="s",
        user="u",
        tools=[
            {
                "type": "function",
                "function": {"name": "extract_entities", "parameters": {"type": "object"}},
            }
        ],
    )
    assert calls[0].name == "extract_entities"
    assert calls[0].arguments == {"entities": [{"entity": "Alice"}]}
