"""mem0's hosted-platform API (what `mem0ai`'s `MemoryClient` and `AsyncMemoryClient` call),
translated onto the platform's services and selectors. docs/compat-mem0.md describes it."""
