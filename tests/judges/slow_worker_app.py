"""The Celery app of the crash test's worker: the project's app, a slow judge, a short visibility timeout.

The judge sleeps on every chunk so the test can kill the worker in the middle of one; the short
visibility timeout makes Redis hand an unacknowledged message to the next worker after seconds,
not the default hour.
"""

from __future__ import annotations

import os
import time

from annotation.automation.judges import registry
from annotation.automation.judges.lexical import ContentWordJudge
from config.celery import app

SLOW_SECONDS = float(os.environ.get("SLOW_JUDGE_SECONDS", "1.5"))
VISIBILITY_TIMEOUT = int(os.environ.get("CRASH_TEST_VISIBILITY_TIMEOUT", "3"))


class SlowJudge(ContentWordJudge):
    name = "slow"

    def __init__(self):
        super().__init__()
        self.version = "slow-lexical-1"

    def predict(self, pairs):
        time.sleep(SLOW_SECONDS)
        return super().predict(pairs)


registry.register("slow")(lambda argument, **options: SlowJudge())
app.conf.broker_transport_options = {**(app.conf.broker_transport_options or {}), "visibility_timeout": VISIBILITY_TIMEOUT}

__all__ = ["app"]
