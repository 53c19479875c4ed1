"""The protocol's stages as ``hits`` task types, created with their defaults (``annotation.models.stages``) on
first use."""

from __future__ import annotations

from annotation.models.stages import TASK_TYPES
from hits.models import TaskType


def task_type(slug: str) -> TaskType:
    """The task type, created with its defaults on first use."""
    obj, _ = TaskType.objects.get_or_create(slug=slug, defaults=TASK_TYPES[slug])
    return obj
