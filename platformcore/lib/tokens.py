"""Token counts for budgets, from a real tokenizer.

A count is taken once, when a memory, a summary or a chunk is written, and stored with it:
every budget (search `token_budget`, session context, MCP results) adds up stored integers
and never tokenises at read time. MEMORY_TOKENIZER chooses the tokenizer:

- `embedding` (the default): the configured embedding model's own tokenizer, which the
  memories app installs (`install`) since it knows the model; a provider without a
  tokenizer of its own falls back to `chars`;
- `tiktoken:<encoding>` (`tiktoken:cl100k_base`): one of tiktoken's encodings, from its
  cache (TIKTOKEN_CACHE_DIR; offline, a missing file is a configuration error);
- `chars`: about four characters a token, the estimate for English prose.

Characters / 4 counted CJK text at a quarter of its tokens and code at two thirds
(docs/search.md, "Token budgets").
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
# texts -> their token counts
Counter = Callable[[list[str]], list[int]]
_installed: dict[str, Callable[[], Counter | None]] = {}


def estimate_tokens(text: str) -> int:
    """The `chars` estimate: ~4 characters a token."""
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN)) if text else 0


def install(name: str, loader: Callable[[], Counter | None]) -> None:
    """Offer a tokenizer under MEMORY_TOKENIZER `name` (an app's `ready()`); `loader` is
    called on first use and may return None when it has none (then `chars` counts)."""
    _installed[name] = loader
    _counter.cache_clear()


def count_tokens(text: str) -> int:
    return count_tokens_batch([text])[0] if text else 0


def count_tokens_batch(texts: list[str]) -> list[int]:
    """The token count of each text (0 for an empty one)."""
    if not texts:
        return []
    counts = _counter(settings.MEMORY_TOKENIZER)(texts)
    return [count if text else 0 for text, count in zip(texts, counts, strict=True)]


def tokenizer_name() -> str:
    return str(settings.MEMORY_TOKENIZER)


@functools.cache
def _counter(name: str) -> Counter:
    match name.split(":", 1):
        case ["chars"]:
            return _estimate_all
        case ["tiktoken", encoding]:
            return tiktoken_counter(encoding)
        case [installed] if installed in _installed:
            counter = _installed[installed]()
            if counter is None:
                logger.warning("no %s tokenizer: counting ~4 characters a token", installed)
                return _estimate_all
            return counter
        case _:
            raise ImproperlyConfigured(
                f"MEMORY_TOKENIZER must be embedding, tiktoken:<encoding> or chars, got {name!r}"
            )


def _estimate_all(texts: list[str]) -> list[int]:
    return [estimate_tokens(text) for text in texts]


def tiktoken_counter(encoding: str) -> Counter:
    """A tiktoken encoding, read from its cache (TIKTOKEN_CACHE_DIR): ImproperlyConfigured
    when tiktoken is missing or cannot load the encoding (offline, without the file)."""
    try:
        import tiktoken  # imported here: optional, for MEMORY_TOKENIZER=tiktoken:… only
    except ImportError as exc:
        raise ImproperlyConfigured("MEMORY_TOKENIZER=tiktoken:… needs tiktoken installed") from exc
    try:
        encoder = tiktoken.get_encoding(encoding)
    except Exception as exc:
        raise ImproperlyConfigured(f"tiktoken encoding {encoding!r}: {exc}") from exc
    return lambda texts: [len(ids) for ids in encoder.encode_ordinary_batch(texts)]
