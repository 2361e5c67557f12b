"""Documents an agent hands the platform (runbooks, PDFs, web pages), cut into chunks that
search finds beside memories (docs/documents.md)."""
