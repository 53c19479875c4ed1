from django.apps import AppConfig


class HitsConfig(AppConfig):
    name = "hits"
    verbose_name = "Crowdsourcing (HITs, workers, assignments)"

    def ready(self):
        from hits.handlers import register_eligibility_rule
        from hits.qualifications import qualification_rule

        register_eligibility_rule(qualification_rule)
        # The engine's own Celery tasks, registered in every process: ``hits.outbox`` sends them by name, and under
        # eager Celery (the embedded default) runs them from the registry in-process.
        import hits.tasks  # noqa: F401
        # The crowd markets (through their seam): their Celery tasks sent by name, their admin pages, and the
        # qualification and block signals they mirror (MTurk's qualification types, Prolific's groups).
        from hits.markets import registry

        registry.ready()
