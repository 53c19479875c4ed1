"""The registry through which an app tells ``hits`` what its task types mean.

``hits`` never imports the apps that use it.  An app registers, for each task
type slug, a handler that renders the HIT page, validates the answers and
reacts to a submission (inside the submission's transaction).  It may also
register eligibility rules (qualifications) that decide which kinds of HIT
a worker may be given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Protocol

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


@dataclass(frozen=True)
class Eligibility:
    """Which HITs of one task type a worker may be given, batch by batch.

    ``default``: the kinds allowed in every batch not named in ``batches``;
    ``batches``: batch id -> (kinds, attempt) where that batch decides for itself
    (an empty set: nothing there).  ``attempt`` numbers the worker's attempts at
    that batch's qualification test (1 for other kinds).
    """

    default: frozenset = frozenset()
    batches: Mapping[int, tuple[frozenset, int]] = field(default_factory=dict)
    # Batches whose qualification test the worker could take once they choose the batch (start work from it).
    choosable: frozenset = frozenset()

    def __bool__(self) -> bool:
        return bool(self.default) or any(kinds for kinds, _ in self.batches.values())

    def kinds(self) -> set[str]:
        """Every kind the worker may get somewhere."""
        result = set(self.default)
        for kinds, _ in self.batches.values():
            result |= kinds
        return result

    def attempt(self, batch_id: int, kind: str) -> int:
        from hits.models import HIT

        if kind == HIT.Kind.QUALIFICATION and batch_id in self.batches:
            return self.batches[batch_id][1]
        return 1

    def only(self, batch_id: int) -> "Eligibility":
        """The same, within one batch: nothing anywhere else."""
        return Eligibility(frozenset(), {batch_id: self.batches.get(batch_id, (self.default, 1))})

    def within(self, batch_id: int, kinds) -> "Eligibility":
        """The same, within one batch and only for these kinds of HIT (a Prolific study's): nothing elsewhere."""
        allowed, attempt = self.batches.get(batch_id, (self.default, 1))
        return Eligibility(frozenset(), {batch_id: (frozenset(allowed) & frozenset(kinds), attempt)})

    def groups(self) -> list[tuple[tuple[str, ...], int, tuple[int, ...]]]:
        """The batches named here grouped by what they allow: [(kinds, attempt, batch ids)], empty groups left out."""
        grouped: dict[tuple, list[int]] = {}
        for batch_id, (kinds, attempt) in self.batches.items():
            if kinds:
                grouped.setdefault((tuple(sorted(kinds)), attempt), []).append(batch_id)
        return [(kinds, attempt, tuple(sorted(ids))) for (kinds, attempt), ids in sorted(grouped.items())]


_handlers: dict[str, TaskHandler] = {}
# Each rule returns the HIT kinds a worker may get for a task type (an ``Eligibility`` when it depends on the
# batch), or None to leave the decision to others.
EligibilityRule = Callable[["Worker", "TaskType"], "Eligibility | Iterable[str] | None"]
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


def eligibility(worker: "Worker", task_type: "TaskType") -> Eligibility:
    """Which HITs of this type the worker may be given, batch by batch (falsy: none at all).

    Blocked workers get nothing.  Without rules, a worker may do regular and
    gold HITs everywhere.  Rules (e.g. qualifications) narrow this down: the
    first rule with an opinion decides.  A worker kept to one batch
    (``only_batch``, the simulated crowd) gets what the rules allow there only.
    """
    from hits.models import HIT

    if worker.blocked:
        return Eligibility()
    allowed = Eligibility(frozenset({HIT.Kind.REGULAR, HIT.Kind.GOLD}))
    for rule in _eligibility_rules:
        decision = rule(worker, task_type)
        if decision is not None:
            allowed = decision if isinstance(decision, Eligibility) else Eligibility(frozenset(decision))
            break
    return allowed.only(worker.only_batch_id) if worker.only_batch_id is not None else allowed
