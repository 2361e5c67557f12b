"""Any OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio...).

`dimensions` (MEMORY_EMBEDDING_DIMENSIONS) is sent where given, for models that can shorten
their vectors (text-embedding-3-*); 0 sends nothing and takes the size of the first answer.
Prompts, when given, are put before queries and stored texts (nomic-embed-text's
"search_query: ", e5's "query: ")."""

from __future__ import annotations

import threading
from typing import Any

from platformcore.lib.errors import ProviderError


class OpenAIEmbedder:
    def __init__(
        self,
        *,
        model_name: str,
        dimensions: int,
        base_url: str | None,
        api_key: str,
        timeout: float,
        batch_size: int,
        query_prompt: str = "",
        passage_prompt: str = "",
    ) -> None:
        # imported here: the openai SDK is slow to import, and only a process that embeds
        # with this provider needs it
        import openai

        self.model_name = model_name
        self.requested_dimensions = dimensions
        self.batch_size = batch_size
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt
        self._learnt = dimensions or 0
        self._lock = threading.Lock()
        self._openai = openai
        self._client: Any = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=2
        )

    @property
    def dimensions(self) -> int:
        """The size asked for, else the model's own (one request to learn it)."""
        if not self._learnt:
            self.embed("dimension probe")
        return self._learnt

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_query(self, text: str) -> list[float]:
        return self._request([self.query_prompt + text])[0]

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        texts = [self.passage_prompt + text for text in texts]
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._request(texts[start : start + self.batch_size]))
        return vectors

    def _request(self, texts: list[str]) -> list[list[float]]:
        extra = {"dimensions": self.requested_dimensions} if self.requested_dimensions else {}
        try:
            response = self._client.embeddings.create(model=self.model_name, input=texts, **extra)
        except self._openai.OpenAIError as exc:
            raise ProviderError(f"embedding server failed: {exc}") from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        with self._lock:
            if not self._learnt and vectors:
                self._learnt = len(vectors[0])
        if len(vectors) != len(texts) or any(len(v) != self._learnt for v in vectors):
            raise ProviderError(
                f"embedding server returned {len(vectors)} vectors of the wrong size; "
                f"expected {len(texts)} of {self._learnt}"
            )
        return vectors
