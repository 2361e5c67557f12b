import django.utils.timezone
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("memories", "0002_intelligence"),
    ]

    operations = [
        migrations.CreateModel(
            name="EmbeddingSpace",
            fields=[
                ("key", models.CharField(default="default", max_length=20, primary_key=True, serialize=False)),
                ("provider", models.CharField(max_length=50)),
                ("model_name", models.CharField(max_length=255)),
                ("dimensions", models.PositiveIntegerField()),
                ("recorded_at", models.DateTimeField(default=django.utils.timezone.now)),
            ],
        ),
    ]
