"""Make the database refuse a predicate span that reaches past the end of its sentence (see annotation.models.triggers)."""

from django.db import migrations

from annotation.models import triggers as db_triggers


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]

    operations = [migrations.RunPython(db_triggers.install, db_triggers.remove)]
