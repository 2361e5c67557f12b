from django.apps import AppConfig
from django.db.models.signals import post_migrate

from memories.embeddings.tokenizer import embedding_tokenizer
from platformcore.lib import tokens


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Registers the embedding-model system check; records the model on first migrate.
        # Imported here: embedding_space imports models, not loaded yet when Django imports
        # this module.
        from memories.services import embedding_space

        post_migrate.connect(embedding_space.record_if_missing, sender=self)
        # budgets count tokens with the embedding model's tokenizer (MEMORY_TOKENIZER)
        tokens.install("embedding", embedding_tokenizer)
