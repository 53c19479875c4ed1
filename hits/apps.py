from django.apps import AppConfig


class HitsConfig(AppConfig):
    name = "hits"
    verbose_name = "Crowdsourcing (HITs, workers, assignments)"

    def ready(self):
        from hits.handlers import register_eligibility_rule
        from hits.qualifications import qualification_rule

        register_eligibility_rule(qualification_rule)
        # The MTurk backend mirrors qualification decisions and blocks to MTurk (signal receivers).
        import hits.mturk.qualifications  # noqa: F401
        # Its Celery tasks are sent by name from web requests (outbox): register them in every process.
        import hits.mturk.tasks  # noqa: F401
        # The Prolific backend: participant groups follow qualifications and blocks; its tasks, by name.
        import hits.prolific.groups  # noqa: F401
        import hits.prolific.tasks  # noqa: F401
        # What each market's published places commit, for the budget cap (``hits.budget``).
        from hits import budget
        from hits.models import Batch
        from hits.mturk.fees import hits_committed
        from hits.prolific.publishing import committed as studies_committed

        budget.register_places((Batch.Backend.MTURK_SANDBOX, Batch.Backend.MTURK_LIVE), hits_committed)
        budget.register_places((Batch.Backend.PROLIFIC,), studies_committed)
