# Issue 29: how each crowd gold label was reached (majority, tie rule, or the majority of fewer judges than planned).

from django.db import migrations, models
from django.db.models import F


def mark_existing(apps, schema_editor):
    """Existing crowd labels are marked from their counts against their campaign's judges per HIT."""
    Campaign = apps.get_model("annotation", "Campaign")
    GoldPresence = apps.get_model("annotation", "GoldPresence")
    for campaign_id, n in Campaign.objects.values_list("pk", "assignments_presence"):
        rows = GoldPresence.objects.filter(summary__system__campaign_id=campaign_id, origin="majority")
        rows.filter(n_present__gt=n / 2).update(decided_by="majority")
        rows.filter(n_judgments__gt=F("n_present") + n / 2).update(decided_by="majority")
        rows.filter(decided_by="", n_judgments__gt=0, n_judgments=F("n_present") * 2).update(decided_by="tie_rule")
        rows.filter(decided_by="", n_judgments__gte=n).update(decided_by="majority")
        rows.filter(decided_by="", n_judgments__gt=0).update(decided_by="partial")


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0019_hybrid_scores'),
    ]

    operations = [
        migrations.AddField(
            model_name='goldpresence',
            name='decided_by',
            field=models.CharField(blank=True, choices=[('majority', 'Majority (decided)'), ('tie_rule', 'Tie rule'), ('partial', 'Majority of fewer judges than planned')], default='', max_length=10),
        ),
        migrations.RunPython(mark_existing, migrations.RunPython.noop),
    ]
