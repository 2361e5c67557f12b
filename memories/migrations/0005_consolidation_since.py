from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('memories', '0004_hot_updates'),
    ]

    # Incremental consolidation probes only the live memories of a project changed since its
    # last run. `updated_at` changes only with content, merges, deletes and restores (never in
    # decay or reinforcement), so this index does not cost lifecycle updates their HOT path.
    operations = [
        migrations.AddIndex(
            model_name='memory',
            index=models.Index(
                condition=models.Q(('deleted_at__isnull', True)),
                fields=['project', 'updated_at'],
                name='memory_project_updated',
            ),
        ),
    ]
