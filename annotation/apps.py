from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "QAPyramid annotation"

    def ready(self):
        # The start-up wiring: the one place that connects the layers (nothing imports this module).
        # Tell ``hits`` what the QAPyramid task types mean (``hits`` never imports this app).
        from annotation.web.hit_pages import HANDLERS
        from hits.handlers import register_task_handler

        for slug, handler in HANDLERS.items():
            register_task_handler(slug, handler)

        # Register the Celery entry points in every process, web included: the core and automation
        # queue them by name (``annotation.services.coalesce.TASKS``, ``RUN_JOB_TASK``, ``CHUNK_TASK``)
        # and, with eager Celery (the embedded default), run them from this process's task registry.
        import annotation.tasks  # noqa: F401

        # The shared file store (issue 50): a bucket that does not exist stops every process at start with
        # ImproperlyConfigured naming it.  One request, only when STORAGE_BUCKET is set (boto3 is not imported
        # otherwise).
        from django.conf import settings

        if settings.STORAGE_BUCKET:
            from annotation.services.filestore import check_bucket

            check_bucket(settings.STORAGE_BUCKET)
