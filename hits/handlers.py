"""The registry through which an app tells ``hits`` what its task types mean.

``hits`` never imports the apps that use it.  An app registers, for each task
type slug, a handler that renders the HIT page, validates the answers and
reacts to a submission (inside the submission's transaction).  It may also
register eligibility rules (qualifications) that decide which kinds of HIT
a worker may be given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Protocol

if TYPE_CHECKING:
    from django.http import QueryDict

    from hits.models import HIT, Assignment, TaskType, Worker


class AnswerErrors(Exception):
    """Answers that do not pass validation.

    ``errors`` maps a form field name (or ``"__all__"``) to messages; the page
    is shown again with the worker's values and the messages next to fields.
    """

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


class TaskHandler(Protocol):
    template_name: str

    def page_context(self, hit: "HIT", assignment: "Assignment | None", data: "QueryDict | None") -> dict:
        """Context for the HIT page; ``data`` holds the worker's values after a failed submission."""

    def clean(self, hit: "HIT", data: "QueryDict") -> dict:
        """Validated answers as JSON, or raise ``AnswerErrors``."""

    def on_submitted(self, assignment: "Assignment") -> None:
        """React to a stored submission, inside the same transaction."""


_handlers: dict[str, TaskHandler] = {}
# Each rule returns the HIT kinds a worker may get for a task type, or None to leave the decision to others.
EligibilityRule = Callable[["Worker", "TaskType"], "Iterable[str] | None"]
_eligibility_rules: list[EligibilityRule] = []


def register_task_handler(slug: str, handler: TaskHandler) -> None:
    _handlers[slug] = handler


def task_handler(slug: str) -> TaskHandler:
    try:
        return _handlers[slug]
    except KeyError:
        raise LookupError(f"no handler registered for task type '{slug}'") from None


def register_eligibility_rule(rule: EligibilityRule) -> None:
    if rule not in _eligibility_rules:
        _eligibility_rules.append(rule)


def eligible_kinds(worker: "Worker", task_type: "TaskType") -> set[str]:
    """The kinds of HIT of this type the worker may be given (empty: none).

    Blocked workers get nothing.  Without rules, a worker may do regular and
    gold HITs.  Rules (e.g. qualifications) narrow this down: the first rule
    with an opinion decides.
    """
    from hits.models import HIT

    if worker.blocked:
        return set()
    for rule in _eligibility_rules:
        kinds = rule(worker, task_type)
        if kinds is not None:
            return set(kinds)
    return {HIT.Kind.REGULAR, HIT.Kind.GOLD}
