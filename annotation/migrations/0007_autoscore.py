# Placeholder: the automated-scoring models (issue 7) fill in this migration's operations.
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("annotation", "0006_scores")]
    operations: list = []
