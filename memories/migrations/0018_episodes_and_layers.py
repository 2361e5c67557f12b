"""Episodes (a conversation or task grouping memories) and memory layers; existing memories
are long-term (the column's default, no table rewrite)."""

import django.db.models.deletion
import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0017_verbose_names'),
        ('tenants', '0003_verbose_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='memory',
            name='layer',
            field=models.CharField(choices=[('short_term', 'Short Term'), ('long_term', 'Long Term'), ('episodic', 'Episodic'), ('semantic', 'Semantic'), ('documentary', 'Documentary')], db_default='long_term', default='long_term', max_length=20),
        ),
        migrations.CreateModel(
            name='Episode',
            fields=[
                ('id', models.UUIDField(default=uuid.uuid4, editable=False, primary_key=True, serialize=False)),
                ('user_id', models.CharField(blank=True, max_length=255, null=True)),
                ('agent_id', models.CharField(blank=True, max_length=255, null=True)),
                ('run_id', models.CharField(blank=True, max_length=255, null=True)),
                ('name', models.CharField(blank=True, default='', max_length=200)),
                ('metadata', models.JSONField(blank=True, default=dict)),
                ('started_at', models.DateTimeField(default=django.utils.timezone.now)),
                ('ended_at', models.DateTimeField(blank=True, null=True)),
                ('summary', models.TextField(blank=True, default='')),
                ('summary_method', models.CharField(blank=True, default='', max_length=20)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='episodes', to='tenants.project')),
            ],
            options={
                'ordering': ['-started_at', '-id'],
            },
        ),
        migrations.AddField(
            model_name='memory',
            name='episode',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='memories', to='memories.episode'),
        ),
        migrations.AddIndex(
            model_name='memory',
            index=models.Index(condition=models.Q(('episode__isnull', False)), fields=['project', 'episode', 'created_at'], name='memory_project_episode'),
        ),
        migrations.AddIndex(
            model_name='memory',
            index=models.Index(condition=models.Q(('deleted_at__isnull', True), ('layer', 'short_term')), fields=['project', 'created_at'], name='memory_short_term'),
        ),
        migrations.AddConstraint(
            model_name='memory',
            constraint=models.CheckConstraint(condition=models.Q(('layer__in', ['short_term', 'long_term', 'episodic', 'semantic', 'documentary'])), name='memory_layer_known'),
        ),
        migrations.AddIndex(
            model_name='episode',
            index=models.Index(fields=['project', '-started_at', '-id'], name='episode_project_started'),
        ),
        migrations.AddConstraint(
            model_name='episode',
            constraint=models.UniqueConstraint(condition=models.Q(('ended_at__isnull', True), ('run_id__isnull', False)), fields=('project', 'run_id'), name='episode_one_open_per_run'),
        ),
        migrations.AddConstraint(
            model_name='episode',
            constraint=models.CheckConstraint(condition=models.Q(('user_id__isnull', False), ('agent_id__isnull', False), ('run_id__isnull', False), _connector='OR'), name='episode_has_scope'),
        ),
        migrations.AddConstraint(
            model_name='episode',
            constraint=models.CheckConstraint(condition=models.Q(('ended_at__isnull', True), ('ended_at__gte', models.F('started_at')), _connector='OR'), name='episode_ends_after_start'),
        ),
    ]
