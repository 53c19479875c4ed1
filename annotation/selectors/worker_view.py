"""One worker of one campaign, everything in one place (issue 40): their HITs with times, answers, review state,
checks against known answers and agreement with the other workers; their quality figures, pay, blocks and
qualifications, and the log of decisions about them.  The researcher's worker page and the API's
``workers/ID/`` and ``workers/ID/hits/`` read it; each part is a fixed number of queries, and the HIT list is
read one page at a time (``hit_rows`` of one page of ``worker_assignments``)."""

from __future__ import annotations

from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, Verification
from annotation.models.stages import GENERATION, PRESENCE, VERIFICATION
from annotation.selectors.campaigns import campaign_workers
from annotation.services.qualification_tests import grade_generation_item, grade_presence_test, grade_verification_test
from hits.activity import worker_activity
from hits.models import HIT, Assignment, BatchBlock, Qualification, QualificationEvent, Worker
from hits.payouts import Payout, payouts

#: Decisions about the worker shown on the page (newest first).
EVENTS_SHOWN = 50


def campaign_member(campaign: Campaign, worker_id: int) -> Worker | None:
    """The worker with id ``worker_id`` if they took a HIT of the campaign or have work in it (a judgment, a
    verdict or a QA pair, e.g. imported with the paper's judgments); None otherwise, the same for an id unknown
    anywhere and one of another campaign, so the page does not tell who else is registered."""
    if not isinstance(worker_id, int) or worker_id <= 0:
        return None
    took = Assignment.objects.filter(worker=OuterRef("pk"), hit__batch_id=campaign.batch_id or -1)
    judged = PresenceJudgment.objects.filter(worker=OuterRef("pk"), summary__system__campaign=campaign)
    verified = Verification.objects.filter(worker=OuterRef("pk"), unit__example__campaign=campaign)
    wrote = ContentUnit.objects.filter(author=OuterRef("pk"), example__campaign=campaign)
    return (
        Worker.objects.filter(pk=worker_id)
        .filter(Exists(took) | Exists(judged) | Exists(verified) | Exists(wrote))
        .first()
    )


def worker_summary(campaign: Campaign, worker: Worker) -> dict:
    """Everything about the worker in the campaign except the HIT list: status and figures (as on the workers
    page), time and hourly pay (as on the worker status page), money (as on the payout report), this campaign's
    block, qualifications and the log of decisions, and how many of their judgments are excluded."""
    batch = campaign.batch
    row = next(iter(campaign_workers(campaign, [worker.pk])), None) if batch is not None else None
    activity = next(iter(worker_activity(batch, worker=worker)), None) if batch is not None else None
    pay = next(iter(payouts(batch=batch, worker=worker)), None) if batch is not None else None
    block = BatchBlock.objects.filter(batch=batch, worker=worker).select_related("decided_by").first() if batch else None
    qualifications = (
        list(Qualification.objects.filter(batch=batch, worker=worker).select_related("task_type").order_by("task_type__position"))
        if batch is not None else []
    )
    events = (
        list(
            QualificationEvent.objects.filter(worker=worker)
            .filter(Q(batch=batch) | Q(batch__isnull=True))
            .select_related("task_type", "decided_by")
            .order_by("-created_at", "-pk")[:EVENTS_SHOWN]
        )
        if batch is not None else []
    )
    judgments = PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign).aggregate(
        n=Count("pk"), excluded=Count("pk", filter=Q(excluded=True))
    )
    return {
        "worker": worker,
        "row": row,
        "activity": activity,
        "pay": pay or (Payout(worker=worker, batch=batch) if batch is not None else None),
        "campaign_block": block,
        "qualifications": qualifications,
        "tests": {q.task_type.slug: q for q in qualifications},
        "hours_worked": round(activity.seconds_worked / 3600, 2) if activity is not None else 0,
        "events": events,
        "judgments": judgments["n"],
        "excluded": judgments["excluded"],
    }


def worker_assignments(campaign: Campaign, worker: Worker) -> QuerySet[Assignment]:
    """The worker's assignments of the campaign's HITs, newest first (page it: ``hit_rows`` of one page)."""
    return (
        Assignment.objects.filter(worker=worker, hit__batch_id=campaign.batch_id or -1)
        .select_related("hit__task_type", "hit__batch", "worker")
        .order_by("-accepted_at", "-pk")
    )


def hit_rows(campaign: Campaign, assignments) -> list[dict]:
    """One row per assignment (one page of ``worker_assignments``): the assignment, its answers in words, its
    check against known answers (gold and test items) and its agreement with the other workers (a few queries
    for the whole page, none per row)."""
    assignments = list(assignments)
    presence = _presence_agreement([a.pk for a in assignments if a.hit.kind == HIT.Kind.REGULAR and _slug(a) == PRESENCE])
    verification = _verification_agreement([a.pk for a in assignments if a.hit.kind == HIT.Kind.REGULAR and _slug(a) == VERIFICATION])
    kept = _kept_pairs([a for a in assignments if a.hit.kind == HIT.Kind.REGULAR and _slug(a) == GENERATION])
    texts = _unit_texts(assignments)
    rows = []
    for a in assignments:
        agreement = presence.get(a.pk) or verification.get(a.pk)
        rows.append({
            "assignment": a,
            "answers": answer_lines(a, texts),
            "check": answer_check(a),
            "agreement": agreement,
            "kept": kept.get(a.pk),
        })
    return rows


def _slug(assignment: Assignment) -> str:
    return assignment.hit.task_type.slug


def _given(assignment: Assignment) -> dict:
    return assignment.answers if isinstance(assignment.answers, dict) else {}


def _unit_texts(assignments: list[Assignment]) -> dict[int, str]:
    """The text of every QA pair or content unit the page's verdicts and labels are about (one query); test and
    gold items from a file carry their own texts (``_inline_texts``)."""
    ids = set()
    for a in assignments:
        if "inline" in a.hit.payload:
            continue
        given = _given(a)
        for item in (given.get("verdicts") or []) + (given.get("labels") or []):
            if isinstance(item, dict) and isinstance(item.get("unit"), int):
                ids.add(item["unit"])
    return dict(ContentUnit.objects.filter(pk__in=ids).values_list("pk", "text")) if ids else {}


def _inline_texts(hit: HIT) -> dict[str, str]:
    """A test or gold item from a file: its questions' and pairs' texts by their ids."""
    inline = hit.payload.get("inline") or {}
    texts = {}
    for entry in (inline.get("questions") or []) + (inline.get("pairs") or []):
        if isinstance(entry, dict) and "id" in entry:
            text = entry.get("text") or f"{entry.get('question', '')} {entry.get('answer', '')}".strip()
            texts[str(entry["id"])] = text
    return texts


def answer_lines(assignment: Assignment, texts: dict[int, str] | None = None) -> list[str]:
    """The worker's answers in words, one line each (questions written, verdicts, presence labels), each verdict
    and label with the text of the QA pair or unit it is about when known (``texts``: unit id -> text)."""
    answers = _given(assignment)
    inline = _inline_texts(assignment.hit) if "inline" in assignment.hit.payload else None

    def about(unit) -> str:
        text = inline.get(str(unit)) if inline is not None else (texts or {}).get(unit)
        return f"“{text}”" if text else f"unit {unit}"

    lines = []
    for q in answers.get("questions", []) or []:
        lines.append(f"{q.get('question', '')} → {' / '.join(map(str, q.get('answers', []) or []))}")
    for v in answers.get("verdicts", []) or []:
        verdict = "valid" if v.get("valid") else "invalid"
        given = " / ".join(map(str, v.get("answers", []) or []))
        lines.append(f"{about(v.get('unit'))}: {verdict}" + (f" ({given})" if given else ""))
    for label in answers.get("labels", []) or []:
        lines.append(f"{about(label.get('unit'))}: {'present' if label.get('present') else 'not present'}")
    return lines


def answer_check(assignment: Assignment) -> dict | None:
    """A gold or test item's answers against its key: ``right`` of ``total`` (a generation test item: 1 of 1 when
    it passes, with the problems found), or None for regular work and work without answers."""
    if assignment.hit.kind == HIT.Kind.REGULAR or not isinstance(assignment.answers, dict):
        return None
    slug = _slug(assignment)
    try:
        if slug == GENERATION:
            graded = grade_generation_item(assignment)
            return {"right": int(graded["right"]), "total": 1, "problems": graded["problems"]}
        grade = grade_verification_test([assignment]) if slug == VERIFICATION else grade_presence_test([assignment])
    except (KeyError, TypeError, AttributeError):  # a malformed item or answer: no check rather than a broken page
        return None
    if not grade.details["total"]:
        return None
    return {"right": grade.details["right"], "total": grade.details["total"], "problems": []}


def _presence_agreement(assignment_ids: list[int]) -> dict[int, dict]:
    """Per presence assignment: its labels that agree with the crowd's majority label (``agree`` of ``n``)."""
    if not assignment_ids:
        return {}
    rows = (
        PresenceJudgment.objects.filter(
            assignment_id__in=assignment_ids, unit__gold__summary=F("summary"),
            unit__gold__origin=GoldPresence.Origin.MAJORITY, unit__gold__present__isnull=False,
        )
        .values("assignment_id")
        .annotate(n=Count("pk"), agree=Count("pk", filter=Q(present=F("unit__gold__present"))))
    )
    return {r["assignment_id"]: {"agree": r["agree"], "n": r["n"], "with": "the majority"} for r in rows}


def _verification_agreement(assignment_ids: list[int]) -> dict[int, dict]:
    """Per verification assignment: its verdicts equal to the other verifier's on the same QA pair."""
    if not assignment_ids:
        return {}
    mine = list(Verification.objects.filter(assignment_id__in=assignment_ids).values_list("assignment_id", "unit_id", "worker_id", "valid"))
    others: dict[int, list[tuple[int, bool]]] = {}
    for unit_id, worker_id, valid in Verification.objects.filter(unit_id__in={m[1] for m in mine}).values_list("unit_id", "worker_id", "valid"):
        others.setdefault(unit_id, []).append((worker_id, valid))
    result: dict[int, dict] = {}
    for assignment_id, unit_id, worker_id, valid in mine:
        other = next((v for w, v in others.get(unit_id, []) if w != worker_id), None)
        if other is None:
            continue
        tally = result.setdefault(assignment_id, {"agree": 0, "n": 0, "with": "the other verifier"})
        tally["n"] += 1
        tally["agree"] += int(other == valid)
    return result


def _kept_pairs(assignments: list[Assignment]) -> dict[int, dict]:
    """Per generation assignment: of the QA pairs it wrote, how many the verifiers kept and how many are decided."""
    if not assignments:
        return {}
    worker_id = assignments[0].worker_id
    by_hit = {(a.hit.payload.get("predicate"), a.hit.payload.get("round", 1)): a.pk for a in assignments}
    rows = (
        ContentUnit.objects.filter(author_id=worker_id, kind=ContentUnit.Kind.QA, predicate_id__in={p for p, _ in by_hit})
        .values("predicate_id", "round")
        .annotate(
            written=Count("pk"), kept=Count("pk", filter=Q(state=ContentUnit.State.KEPT)),
            decided=Count("pk", filter=Q(state__in=[ContentUnit.State.KEPT, ContentUnit.State.REJECTED])),
        )
    )
    return {
        by_hit[(r["predicate_id"], r["round"])]: {"written": r["written"], "kept": r["kept"], "decided": r["decided"]}
        for r in rows if (r["predicate_id"], r["round"]) in by_hit
    }
