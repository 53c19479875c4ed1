from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "QAPyramid annotation"

    def ready(self):
        # Tell ``hits`` what the QAPyramid task types mean (``hits`` never imports this app).
        from annotation.hit_handlers import HANDLERS
        from hits.handlers import register_task_handler

        for slug, handler in HANDLERS.items():
            register_task_handler(slug, handler)
