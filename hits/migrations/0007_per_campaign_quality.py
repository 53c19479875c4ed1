"""Qualifications belong to a batch (a campaign); researchers' blocks to a batch; invitations to a batch.

A qualification recorded before this change was for a task type on the whole platform: it is copied to
every batch whose qualification test the worker took (the test they passed or failed), and dropped when
there is none (the worker then takes the campaign's own test).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def assign_batches(apps, schema_editor):
    Qualification = apps.get_model("hits", "Qualification")
    Assignment = apps.get_model("hits", "Assignment")
    for qualification in Qualification.objects.filter(batch__isnull=True):
        batch_ids = set(
            Assignment.objects.filter(
                worker_id=qualification.worker_id, hit__task_type_id=qualification.task_type_id, hit__kind="qualification"
            ).values_list("hit__batch_id", flat=True)
        )
        for batch_id in sorted(batch_ids):
            Qualification.objects.create(
                worker_id=qualification.worker_id, task_type_id=qualification.task_type_id, batch_id=batch_id,
                state=qualification.state, attempts=qualification.attempts, score=qualification.score,
                reason=qualification.reason, last_attempt_at=qualification.last_attempt_at,
            )
        qualification.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('hits', '0006_mturk_money_paths'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='BatchBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.CharField(blank=True, max_length=500)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
        ),
        migrations.AlterModelOptions(
            name='invitation',
            options={'ordering': ['-created_at']},
        ),
        migrations.RemoveConstraint(
            model_name='assignment',
            name='assignment_one_per_worker_and_hit',
        ),
        migrations.RemoveConstraint(
            model_name='qualification',
            name='qualification_unique',
        ),
        migrations.AddField(
            model_name='batch',
            name='accepts_group_qualifications',
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name='batch',
            name='qualification_cooldown_hours',
            field=models.FloatField(default=24.0),
        ),
        migrations.AddField(
            model_name='batch',
            name='qualification_max_attempts',
            field=models.PositiveSmallIntegerField(default=2),
        ),
        migrations.AddField(
            model_name='batch',
            name='qualification_group',
            field=models.CharField(blank=True, max_length=100),
        ),
        migrations.AddField(
            model_name='invitation',
            name='batch',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='hits.batch'),
        ),
        migrations.AddField(
            model_name='invitation',
            name='revoked_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='qualification',
            name='batch',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='qualifications', to='hits.batch'),
        ),
        migrations.RunPython(assign_batches, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='qualification',
            name='batch',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='qualifications', to='hits.batch'),
        ),
        migrations.AddField(
            model_name='qualificationevent',
            name='batch',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='hits.batch'),
        ),
        migrations.AddIndex(
            model_name='hit',
            index=models.Index(fields=['task_type', 'kind', 'state', 'batch'], name='hit_kind_batch'),
        ),
        migrations.AddConstraint(
            model_name='assignment',
            constraint=models.UniqueConstraint(condition=models.Q(('state__in', ['assigned', 'pending', 'submitted', 'approved', 'rejected'])), fields=('hit', 'worker', 'attempt'), name='assignment_one_per_worker_and_hit'),
        ),
        migrations.AddConstraint(
            model_name='invitation',
            constraint=models.CheckConstraint(condition=models.Q(('uses__lte', models.F('max_uses'))), name='invitation_uses_within_limit'),
        ),
        migrations.AddConstraint(
            model_name='qualification',
            constraint=models.UniqueConstraint(fields=('worker', 'task_type', 'batch'), name='qualification_unique'),
        ),
        migrations.AddField(
            model_name='batchblock',
            name='batch',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='blocks', to='hits.batch'),
        ),
        migrations.AddField(
            model_name='batchblock',
            name='decided_by',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL),
        ),
        migrations.AddField(
            model_name='batchblock',
            name='worker',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='batch_blocks', to='hits.worker'),
        ),
        migrations.AddConstraint(
            model_name='batchblock',
            constraint=models.UniqueConstraint(fields=('batch', 'worker'), name='batch_block_unique'),
        ),
    ]
