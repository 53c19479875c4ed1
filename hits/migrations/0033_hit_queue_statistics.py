"""PostgreSQL's statistics on the combinations of a HIT's task type, state and batch (extended statistics, MCV).

The hand-out's window reads one campaign's open HITs of a type (index ``hit_campaign_queue``).  Planned with
single-column statistics, "open" and "this campaign" were taken as independent: a campaign of 1,000 open HITs
beside a paused one of 50,000 was estimated at 6 rows, and the planner hashed the worker's whole history (1,000
assignments) and every open HIT of the campaign instead of walking the queue until 20 HITs were found (2.2 ms
instead of 0.4 ms per hand-out).  The most common (type, state, batch) combinations, gathered by ANALYZE (or
autovacuum), give it the real counts.  Other databases: nothing to do.
"""

from django.db import migrations

CREATE = "CREATE STATISTICS IF NOT EXISTS hit_queue_combinations (mcv) ON task_type_id, state, batch_id FROM hits_hit"
DROP = "DROP STATISTICS IF EXISTS hit_queue_combinations"


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    dependencies = [("hits", "0032_last_served")]
    operations = [migrations.RunPython(create, drop)]
