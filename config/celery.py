"""The Celery application; configured from Django settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

# Every task is a GuardedTask: a run sent by Celery beat claims its period first, so two beats run nothing twice.
app = Celery("qapyramid", task_cls="hits.beat:GuardedTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
