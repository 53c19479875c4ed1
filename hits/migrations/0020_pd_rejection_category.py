from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("hits", "0019_prolific"),
    ]

    operations = [
        migrations.AddField(
            model_name="prolificsession",
            name="rejection_category",
            field=models.CharField(blank=True, max_length=24),
        ),
    ]
