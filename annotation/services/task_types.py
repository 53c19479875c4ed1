"""The protocol's stages as ``hits`` task types, created with their defaults (``annotation.models.stages``) on
first use."""

from __future__ import annotations

from annotation.models.stages import TASK_TYPES
from hits.models import TaskType


def task_type(slug: str) -> TaskType:
    """The task type, created with its defaults on first use."""
    obj, _ = TaskType.objects.get_or_create(slug=slug, defaults=TASK_TYPES[slug])
    return obj


def task_type_as_is(slug: str) -> TaskType:
    """The task type, or an unsaved one with its defaults before its first use: a read that writes nothing."""
    return TaskType.objects.filter(slug=slug).first() or TaskType(slug=slug, **TASK_TYPES[slug])
