from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memories", "0023_ttl_tier"),
    ]

    operations = [
        migrations.AddField(
            model_name="embeddingspace",
            name="options",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="embeddingspace",
            name="stage",
            field=models.CharField(blank=True, default="", max_length=20),
        ),
        migrations.AddField(
            model_name="embeddingspace",
            name="generation",
            field=models.PositiveIntegerField(default=0),
        ),
    ]
