from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("hits", "0020_pb_batch_prolific_settings"),
    ]

    operations = [
        migrations.AddField(
            model_name="prolificsession",
            name="rejection_category",
            field=models.CharField(blank=True, max_length=24),
        ),
    ]
