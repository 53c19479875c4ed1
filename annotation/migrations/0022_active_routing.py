# Issue 37: the active routing rule's records (inclusion probabilities, draws, the cross-fitted judge).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0021_prolific_settings'),
    ]

    operations = [
        migrations.AddField(
            model_name='autopresence',
            name='cross_fitted',
            field=models.FloatField(blank=True, null=True),
        ),
        # Campaigns that exist already were routed by the judge's uncertainty: they keep that rule (new ones take
        # the active rule).
        migrations.AddField(
            model_name='campaign',
            name='routing_rule',
            field=models.CharField(choices=[('active', "Random draws with known probabilities, favouring the judge's unsure HITs (unbiased, 95% intervals)"), ('uncertainty', "The HITs the judge is least sure of (scores by the judge's label or probability; no valid interval)")], default='uncertainty', help_text='How a budgeted campaign picks the presence HITs people judge, and so how its scores are estimated.', max_length=12),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name='campaign',
            name='routing_rule',
            field=models.CharField(choices=[('active', "Random draws with known probabilities, favouring the judge's unsure HITs (unbiased, 95% intervals)"), ('uncertainty', "The HITs the judge is least sure of (scores by the judge's label or probability; no valid interval)")], default='active', help_text='How a budgeted campaign picks the presence HITs people judge, and so how its scores are estimated.', max_length=12),
        ),
        migrations.AddField(
            model_name='presencecandidate',
            name='decided_round',
            field=models.PositiveSmallIntegerField(blank=True, help_text='The round whose draw decided it.', null=True),
        ),
        migrations.AddField(
            model_name='presencecandidate',
            name='inclusion_probability',
            field=models.FloatField(blank=True, help_text='Its probability of going to people in that draw (active rule).', null=True),
        ),
        migrations.AddField(
            model_name='presencecandidate',
            name='stratum',
            field=models.PositiveIntegerField(blank=True, help_text='The draw that decided it (active rule).', null=True),
        ),
        migrations.AddField(
            model_name='presenceround',
            name='mix',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='presenceround',
            name='mix_reason',
            field=models.TextField(blank=True, default=''),
        ),
    ]
