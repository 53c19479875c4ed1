# Automated scoring (issue 7): judge cache, autoscore runs, chunks, generated units and results.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0006_scores'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AutoscoreRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('judge_name', models.CharField(max_length=100)),
                ('judge_version', models.CharField(blank=True, max_length=200)),
                ('systems', models.JSONField(blank=True, default=list, help_text='Ids of the systems scored; empty means all.')),
                ('generate_qas', models.BooleanField(default=False, help_text='AutoQAPyramid: units generated from the reference.')),
                ('state', models.CharField(choices=[('pending', 'Waiting for a worker'), ('running', 'Running'), ('finished', 'Finished'), ('failed', 'Failed')], default='pending', max_length=10)),
                ('n_chunks', models.PositiveIntegerField(default=0)),
                ('n_done', models.PositiveIntegerField(default=0)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('timings', models.JSONField(blank=True, default=dict)),
                ('results', models.JSONField(blank=True, default=dict)),
                ('error', models.TextField(blank=True)),
                ('campaign', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='autoscore_runs', to='annotation.campaign')),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='autoscore_runs', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='AutoscoreChunk',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('summary_ids', models.JSONField(default=list)),
                ('done', models.BooleanField(default=False)),
                ('attempts', models.PositiveIntegerField(default=0)),
                ('seconds', models.FloatField(blank=True, null=True)),
                ('n_pairs', models.PositiveIntegerField(default=0)),
                ('n_cached', models.PositiveIntegerField(default=0)),
                ('done_at', models.DateTimeField(blank=True, null=True)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='annotation.autoscorerun')),
            ],
            options={
                'ordering': ['run', 'index'],
            },
        ),
        migrations.CreateModel(
            name='AutoSummaryScore',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('n_units', models.PositiveIntegerField(default=0)),
                ('n_present', models.PositiveIntegerField(default=0)),
                ('score', models.FloatField(null=True)),
                ('mean_probability', models.FloatField(null=True)),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='summary_scores', to='annotation.autoscorerun')),
                ('summary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='auto_scores', to='annotation.systemsummary')),
            ],
        ),
        migrations.CreateModel(
            name='GeneratedUnit',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('index', models.PositiveIntegerField()),
                ('predicate', models.CharField(max_length=200)),
                ('question', models.CharField(max_length=300)),
                ('answer', models.TextField()),
                ('text', models.TextField()),
                ('example', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='generated_units', to='annotation.example')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='generated_units', to='annotation.autoscorerun')),
            ],
            options={
                'ordering': ['run', 'example', 'index'],
            },
        ),
        migrations.CreateModel(
            name='AutoPresence',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('probability', models.FloatField()),
                ('present', models.BooleanField()),
                ('summary', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='auto_presences', to='annotation.systemsummary')),
                ('unit', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='auto_presences', to='annotation.contentunit')),
                ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='presences', to='annotation.autoscorerun')),
                ('generated', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='presences', to='annotation.generatedunit')),
            ],
        ),
        migrations.CreateModel(
            name='JudgeCacheEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('judge_version', models.CharField(max_length=200)),
                ('pair_hash', models.CharField(max_length=64)),
                ('probability', models.FloatField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('judge_version', 'pair_hash'), name='judge_cache_unique_pair'), models.CheckConstraint(condition=models.Q(('probability__gte', 0), ('probability__lte', 1)), name='judge_cache_probability_range')],
            },
        ),
        migrations.AddConstraint(
            model_name='autoscorerun',
            constraint=models.CheckConstraint(condition=models.Q(('n_done__lte', models.F('n_chunks'))), name='autoscore_done_le_chunks'),
        ),
        migrations.AddConstraint(
            model_name='autoscorechunk',
            constraint=models.UniqueConstraint(fields=('run', 'index'), name='autoscore_chunk_unique_index'),
        ),
        migrations.AddConstraint(
            model_name='autosummaryscore',
            constraint=models.UniqueConstraint(fields=('run', 'summary'), name='auto_summary_score_unique'),
        ),
        migrations.AddConstraint(
            model_name='generatedunit',
            constraint=models.UniqueConstraint(fields=('run', 'example', 'index'), name='generated_unit_unique_index'),
        ),
        migrations.AddConstraint(
            model_name='autopresence',
            constraint=models.UniqueConstraint(condition=models.Q(('unit__isnull', False)), fields=('run', 'summary', 'unit'), name='auto_presence_unique_unit'),
        ),
        migrations.AddConstraint(
            model_name='autopresence',
            constraint=models.UniqueConstraint(condition=models.Q(('generated__isnull', False)), fields=('run', 'summary', 'generated'), name='auto_presence_unique_generated'),
        ),
        migrations.AddConstraint(
            model_name='autopresence',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('generated__isnull', True), ('unit__isnull', False)), models.Q(('generated__isnull', False), ('unit__isnull', True)), _connector='OR'), name='auto_presence_one_unit'),
        ),
    ]
