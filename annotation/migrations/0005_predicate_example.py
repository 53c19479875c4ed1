"""Predicates know their example directly; a predicate imported by id only has no sentence."""

import django.db.models.deletion
from django.db import migrations, models

from annotation.models import triggers as db_triggers


def fill_example(apps, schema_editor):
    Predicate = apps.get_model("annotation", "Predicate")
    ReferenceSentence = apps.get_model("annotation", "ReferenceSentence")
    example_of = dict(ReferenceSentence.objects.values_list("pk", "example_id"))
    for predicate in Predicate.objects.all().only("pk", "sentence_id"):
        Predicate.objects.filter(pk=predicate.pk).update(example_id=example_of[predicate.sentence_id])


class Migration(migrations.Migration):
    dependencies = [("annotation", "0004_gold_origin_unique")]

    operations = [
        migrations.RemoveConstraint(model_name="predicate", name="predicate_span_not_empty"),
        migrations.AddField(
            model_name="predicate",
            name="example",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.CASCADE, related_name="predicates", to="annotation.example"
            ),
        ),
        migrations.RunPython(fill_example, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="predicate",
            name="example",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="predicates", to="annotation.example"
            ),
        ),
        migrations.AlterField(
            model_name="predicate",
            name="sentence",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="predicates",
                to="annotation.referencesentence",
            ),
        ),
        migrations.AddConstraint(
            model_name="predicate",
            constraint=models.CheckConstraint(
                condition=models.Q(("end__gt", models.F("start")), ("sentence__isnull", True), _connector="OR"),
                name="predicate_span_not_empty",
            ),
        ),
        # SQLite rebuilt the table above, which dropped its triggers.
        migrations.RunPython(db_triggers.install, migrations.RunPython.noop),
    ]
