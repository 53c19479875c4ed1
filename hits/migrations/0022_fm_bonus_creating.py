from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("hits", "0021_pd_rejection_category"),
    ]

    operations = [
        migrations.AddField(
            model_name="prolificbonus",
            name="create_claimed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="prolificbonus",
            name="state",
            field=models.CharField(
                choices=[
                    ("recorded", "Recorded (create call to send)"),
                    ("creating", "Create call claimed by one sync (in flight)"),
                    ("created", "Created on Prolific (pay call to send)"),
                    ("paying", "Pay call recorded before sending"),
                    ("unknown", "Pay reply lost (Prolific's records to read)"),
                    ("paid", "Paid"),
                    ("failed", "Failed"),
                ],
                default="recorded",
                max_length=10,
            ),
        ),
    ]
