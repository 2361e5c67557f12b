from django.apps import AppConfig

from platformcore.lib import hooks


class EntitiesConfig(AppConfig):
    name = "entities"
    verbose_name = "Knowledge graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # the memory store tells the graph what it stored, merged and wiped, and asks it which
        # memories name an entity (platformcore/lib/hooks.py); imported here: these modules
        # import models, not loaded yet when Django imports this module
        from entities.admin import memory_entity_context
        from entities.selectors.memory_filters import linked_to_entities
        from entities.selectors.search import graph_boost, graph_search
        from entities.services.graph import graph_reset
        from entities.services.memory_graph import memories_merged, memories_stored
        from memories.selectors.search import register_boost, register_mode

        hooks.register("memories_stored", memories_stored)
        hooks.register("memories_merged", memories_merged)
        hooks.register("project_reset", graph_reset)
        hooks.register("entity_filter", linked_to_entities)
        hooks.register("admin_memory_entities", memory_entity_context)
        # `mode=graph`, and hybrid hits gain from the entities the query names
        register_mode("graph", graph_search)
        register_boost(graph_boost)
