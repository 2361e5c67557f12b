from __future__ import annotations

from django.apps import AppConfig

from platformcore.lib import hooks


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # documents and chunks are nodes of the one knowledge graph (entities.graph_kinds);
        # imported here: these modules import models, not loaded yet when Django imports
        # this module
        from documents import graph_kinds
        from documents.refs import memories_learned, memory_details
        from documents.selectors.search import chunk_source
        from documents.services import documents_reset

        graph_kinds.register()
        # a project's documents are wiped with its memories; memories cite the chunks they were
        # learned from; `sources=documents` searches passages beside memories
        hooks.register("project_reset", documents_reset)
        hooks.register("memory_details", memory_details)
        hooks.register("memories_learned", memories_learned)
        hooks.register("extra_search_sources", chunk_source)
