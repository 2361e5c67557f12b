"""The platform's foundation: helpers, the database backend, live-feed events, the LLM client
and metrics. Every app builds on it; it imports none of them (docs/architecture.md)."""
