from __future__ import annotations

from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "documents"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # documents and chunks are nodes of the one knowledge graph (entities.graph_kinds)
        from documents import graph_kinds

        graph_kinds.register()
