from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import migrations, models


class Migration(migrations.Migration):
    """Issue 29's presence-judge rule and issue 32's judge scoring.  Campaigns that exist already keep what they
    did (3 judges always, judge units by their label); new campaigns default to the adaptive rule and the
    calibrated probability."""

    dependencies = [("annotation", "0016_plural_names")]

    operations = [
        migrations.AddField(
            model_name="campaign", name="presence_judges",
            field=models.CharField(choices=[("fixed", "3 always (the paper)"), ("adaptive", "2, and a third where they disagree")], default="fixed", max_length=8),
        ),
        migrations.AlterField(
            model_name="campaign", name="presence_judges",
            field=models.CharField(choices=[("fixed", "3 always (the paper)"), ("adaptive", "2, and a third where they disagree")], default="adaptive", max_length=8),
        ),
        migrations.AddField(
            model_name="campaign", name="third_judge_rate",
            field=models.FloatField(default=0.278, help_text="Expected share of presence HITs whose first two judges disagree (for cost previews).", validators=[MinValueValidator(0.0), MaxValueValidator(1.0)]),
        ),
        migrations.AddField(
            model_name="campaign", name="judge_scoring",
            field=models.CharField(choices=[("label", "Its label"), ("probability", "Its calibrated probability")], default="label", max_length=12),
        ),
        migrations.AlterField(
            model_name="campaign", name="judge_scoring",
            field=models.CharField(choices=[("label", "Its label"), ("probability", "Its calibrated probability")], default="probability", max_length=12),
        ),
    ]
