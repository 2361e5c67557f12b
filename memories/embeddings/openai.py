"""Any OpenAI-compatible /embeddings endpoint (OpenAI, Ollama, vLLM, LM Studio...)."""

from __future__ import annotations

from typing import Any

from memoryplatform.lib.errors import ProviderError


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
    ) -> None:
        import openai

        self.model_name = model_name
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._openai = openai
        self._client: Any = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=2
        )

    def embed(self, text: str) -> list[float]:
        return self.embed_batch([text])[0]

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(self._request(texts[start : start + self.batch_size]))
        return vectors

    def _request(self, texts: list[str]) -> list[list[float]]:
        try:
            response = self._client.embeddings.create(
                model=self.model_name, input=texts, dimensions=self.dimensions
            )
        except self._openai.OpenAIError as exc:
            raise ProviderError(f"embedding server failed: {exc}") from exc
        vectors = [item.embedding for item in sorted(response.data, key=lambda item: item.index)]
        if len(vectors) != len(texts) or any(len(v) != self.dimensions for v in vectors):
            raise ProviderError(
                f"embedding server returned {len(vectors)} vectors of the wrong size; "
                f"expected {len(texts)} of {self.dimensions}"
            )
        return vectors
