"""Make the database refuse a predicate span that reaches past the end of its sentence (see annotation.db_triggers)."""

from django.db import migrations

from annotation import db_triggers


class Migration(migrations.Migration):
    dependencies = [("annotation", "0001_initial")]

    operations = [migrations.RunPython(db_triggers.install, db_triggers.remove)]
