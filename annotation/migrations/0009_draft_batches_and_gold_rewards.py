"""Existing data meets issue 18's rules: a draft campaign's batch waits (nothing of it is handed out before
launch), and gold items pay the campaign's presence reward like the HITs they hide among."""

from django.db import migrations


def forward(apps, schema_editor):
    Campaign = apps.get_model("annotation", "Campaign")
    Batch = apps.get_model("hits", "Batch")
    HIT = apps.get_model("hits", "HIT")
    drafts = Campaign.objects.filter(state="draft", batch__isnull=False).values_list("batch_id", flat=True)
    Batch.objects.filter(pk__in=list(drafts), state="active").update(state="paused")
    for campaign in Campaign.objects.filter(batch__isnull=False).only("batch_id", "reward_presence", "owner_id", "unit_type"):
        HIT.objects.filter(batch_id=campaign.batch_id, kind="gold", reward=0).update(reward=campaign.reward_presence)
        if campaign.owner_id:
            Batch.objects.filter(pk=campaign.batch_id, qualification_group="").update(
                qualification_group=f"owner-{campaign.owner_id}/{campaign.unit_type}"
            )


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0008_jobs"),
        ("hits", "0007_per_campaign_quality"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
