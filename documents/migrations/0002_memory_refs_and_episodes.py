"""Memories citing document chunks (MemoryRef) and the episode a document was uploaded during."""

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('documents', '0001_documents_and_chunks'),
        ('memories', '0018_episodes_and_layers'),
        ('tenants', '0003_verbose_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='document',
            name='episode',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='documents', to='memories.episode'),
        ),
        migrations.CreateModel(
            name='MemoryRef',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('relation', models.CharField(default='cites', max_length=20)),
                ('quote', models.TextField(blank=True, default='')),
                ('quote_start', models.PositiveIntegerField(blank=True, null=True)),
                ('quote_end', models.PositiveIntegerField(blank=True, null=True)),
                ('score', models.FloatField(blank=True, null=True)),
                ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('chunk', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memory_refs', to='documents.documentchunk')),
                ('document', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memory_refs', to='documents.document')),
                ('memory', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='document_refs', to='memories.memory')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='tenants.project')),
            ],
            options={
                'ordering': ['created_at', 'id'],
                'indexes': [models.Index(fields=['project', 'memory'], name='memoryref_project_memory'), models.Index(fields=['project', 'document'], name='memoryref_project_document')],
                'constraints': [models.UniqueConstraint(fields=('project', 'memory', 'chunk'), name='memoryref_unique_per_chunk'), models.CheckConstraint(condition=models.Q(('relation__in', ['cites', 'learned_from'])), name='memoryref_relation_known'), models.CheckConstraint(condition=models.Q(models.Q(('quote_end__isnull', True), ('quote_start__isnull', True)), ('quote_end__gte', models.F('quote_start')), _connector='OR'), name='memoryref_quote_span_ordered')],
            },
        ),
    ]
