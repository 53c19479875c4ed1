"""Worker quality control for the QAPyramid protocol.

Qualification tests (4 HITs per task type by default, with known answers)
are graded by these rules:

- **presence**: accuracy of Present / Not present against the key; the
  worker passes when it is *above* the test's threshold (default 0.90).
- **verification**: a question counts as right when the Valid / Invalid
  verdict matches the key and, for a question valid in the key and marked
  valid, one of the worker's answers overlaps a key answer with token F1 of
  at least 0.5 (over content words: function words like "the" do not count).  Pass when the share of right questions is above the
  threshold (default 0.85).
- **generation** (the paper required all 4 items right): an item is right
  when (a) every key argument is covered by one of the worker's answers with
  token F1 of at least 0.5, (b) every question starts with a wh-word, and
  (c) no question repeats content words of the sentence other than the
  predicate (the "someone / something" rule).  All items right: passed.
  Items that fail only on soft grounds, i.e. rule (c), which a rule cannot
  tell from the protocol's exceptions (phrasal verbs, "be" + noun), or an
  argument covered with overlap between 0.3 and 0.5, send the test to a
  researcher's review queue; anything else fails.

Ongoing cross-checks (recomputed by a Celery task as data arrives):

- writers: share of their resolved QA pairs kept by both verifiers, above
  ``writer_valid_threshold`` (0.85), and questions per predicate on
  average at least ``writer_min_questions_per_predicate`` (2);
- verifiers: agreement with the other verifier on the same questions, above
  ``verifier_agreement_threshold`` (0.85);
- presence judges: accuracy on gold HITs mixed into their stream, above
  ``presence_accuracy_threshold`` (0.90); agreement with the majority is
  reported beside it.

Thresholds are strict (exactly 85% fails).  A check acts only after
``grace_period_items`` judged items; before that the worker is "pending".
A researcher's reinstatement holds until the worker has done another grace
period's worth of items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, F, Q
from django.utils import timezone

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, Verification
from hits import qualifications
from hits.models import HIT, Assignment, QualificationEvent, TaskType, Worker
from hits.qualifications import TestGrade

WH_WORDS = {"who", "what", "when", "where", "why", "how", "which", "whose", "whom"}
PLACEHOLDERS = {"someone", "something", "somewhere", "do", "does", "did", "doing", "done", "somebody", "one"}
FUNCTION_WORDS = {
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "and", "or", "by", "with", "from", "is", "was", "were",
    "are", "be", "been", "being", "has", "have", "had", "it", "its", "that", "this", "as", "into", "about", "up",
    "out", "off", "over", "not", "no", "will", "would", "can", "could", "should", "might", "may", "must", "shall",
    "he", "she", "they", "them", "his", "her", "their", "i", "we", "you", "there", "than", "then", "so", "if",
    "but", "also", "very", "just", "all", "any", "some", "much", "many", "more", "most", "after", "before",
} | WH_WORDS | PLACEHOLDERS
COVERED = 0.5
BORDERLINE = 0.3
_WORD = re.compile(r"[\w']+", re.UNICODE)


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text or "")]


def content_words(text: str) -> list[str]:
    """Lower-cased words without function words (all words when nothing else is left)."""
    all_words = words(text)
    return [w for w in all_words if w not in FUNCTION_WORDS] or all_words


def token_f1(a: str, b: str) -> float:
    """Token-overlap F1 of two strings over their content words: 2|A∩B| / (|A|+|B|).

    Function words are left out so that "the crash" does not half-cover "the driver".
    """
    from collections import Counter

    ca, cb = Counter(content_words(a)), Counter(content_words(b))
    common = sum((ca & cb).values())
    total = sum(ca.values()) + sum(cb.values())
    return 2 * common / total if total else 0.0


def best_overlap(answers: list[str], keys: list[str]) -> float:
    return max((token_f1(a, k) for a in answers for k in keys), default=0.0)


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_word_violations(question: str, sentence: str, predicate: str) -> list[str]:
    """Content words of the sentence, other than the predicate's, that a question repeats."""
    predicate_stems = {_stem(w) for w in words(predicate)}
    sentence_stems = {_stem(w) for w in words(sentence) if w not in FUNCTION_WORDS}
    found = []
    for w in words(question):
        stem = _stem(w)
        if w in FUNCTION_WORDS or stem in predicate_stems:
            continue
        if stem in sentence_stems:
            found.append(w)
    return found


def _pass_above(assignments, default: float) -> float:
    values = [a.hit.payload.get("pass_above") for a in assignments if a.hit.payload.get("pass_above") is not None]
    return float(values[0]) if values else default


def grade_presence_test(assignments: list[Assignment]) -> TestGrade:
    right = total = 0
    for assignment in assignments:
        key = (assignment.hit.answer_key or {}).get("labels", {})
        for label in assignment.answers.get("labels", []):
            expected = key.get(str(label["unit"]))
            if expected is None:
                continue
            total += 1
            right += int(bool(label["present"]) == bool(expected))
    accuracy = right / total if total else 0.0
    return TestGrade(accuracy, accuracy > _pass_above(assignments, 0.90), {"right": right, "total": total})


def grade_verification_test(assignments: list[Assignment]) -> TestGrade:
    right = total = 0
    for assignment in assignments:
        key = (assignment.hit.answer_key or {}).get("verdicts", {})
        for verdict in assignment.answers.get("verdicts", []):
            expected = key.get(str(verdict["unit"]))
            if expected is None:
                continue
            total += 1
            ok = bool(verdict["valid"]) == bool(expected["valid"])
            if ok and expected["valid"]:
                ok = best_overlap(verdict.get("answers", []), expected.get("answers", [])) >= COVERED
            right += int(ok)
    share = right / total if total else 0.0
    return TestGrade(share, share > _pass_above(assignments, 0.85), {"right": right, "total": total})


def grade_generation_item(assignment: Assignment) -> dict:
    """Check one generation item; returns {"right", "soft", "problems"}."""
    inline = assignment.hit.payload["inline"]
    sentence = inline["sentence"]
    predicate = sentence[inline["start"] : inline["end"]]
    written = assignment.answers.get("questions", [])
    all_answers = [a for q in written for a in q["answers"]]
    hard, soft = [], []
    for argument in (assignment.hit.answer_key or {}).get("arguments", []):
        overlap = best_overlap(all_answers, argument)
        if overlap < BORDERLINE:
            hard.append(f"no answer covers '{argument[0]}'")
        elif overlap < COVERED:
            soft.append(f"'{argument[0]}' only partly covered ({overlap:.2f})")
    for q in written:
        first = words(q["question"])[:1]
        if not first or first[0] not in WH_WORDS:
            hard.append(f"'{q['question']}' does not start with a question word")
        repeated = content_word_violations(q["question"], sentence, predicate)
        if repeated:
            soft.append(f"'{q['question']}' repeats words of the sentence: {', '.join(repeated)}")
    return {"right": not hard and not soft, "soft": not hard and bool(soft), "problems": hard + soft}


def grade_generation_test(assignments: list[Assignment]) -> TestGrade:
    items = [grade_generation_item(a) for a in assignments]
    n_right = sum(item["right"] for item in items)
    score = n_right / len(items) if items else 0.0
    details = {"items": [item["problems"] for item in items], "right": n_right, "total": len(items)}
    if n_right == len(items):
        return TestGrade(score, True, details)
    if all(item["right"] or item["soft"] for item in items):
        return TestGrade(score, None, details)
    return TestGrade(score, False, details)


# --- qualification tests from a file ---------------------------------------------------------


class QualificationDefinitionError(ValueError):
    pass


def _span(sentence: str, predicate, where: str) -> tuple[int, int]:
    if isinstance(predicate, dict):
        start, end = predicate.get("start"), predicate.get("end")
        if not (isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(sentence)):
            raise QualificationDefinitionError(f"{where}: predicate offsets must lie inside the sentence")
        return start, end
    if not isinstance(predicate, str) or not predicate:
        raise QualificationDefinitionError(f"{where}: 'predicate' must be the verb as written in the sentence, or {{start, end}}")
    match = re.search(r"\b" + re.escape(predicate) + r"\b", sentence)
    if match is None:
        raise QualificationDefinitionError(f"{where}: predicate '{predicate}' is not in the sentence")
    return match.start(), match.end()


def _require_substrings(answers, sentence: str, where: str) -> list[str]:
    from annotation.hit_handlers import is_substring, normalise

    if not isinstance(answers, list) or not answers or not all(isinstance(a, str) for a in answers):
        raise QualificationDefinitionError(f"{where}: answers must be a non-empty list of strings")
    for answer in answers:
        if not is_substring(answer, sentence):
            raise QualificationDefinitionError(f"{where}: answer '{answer}' is not a substring of the sentence")
    return [normalise(a) for a in answers]


def _text(obj, key, where) -> str:
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, str) or not value.strip():
        raise QualificationDefinitionError(f"{where}: '{key}' must be a non-empty string")
    return value


def build_qualification_hits(campaign: Campaign, definition: dict) -> list[HIT]:
    """Turn a qualification definition (see README) into unsaved HITs; raises on any invalid item."""
    from annotation.services.pipeline import GENERATION, PRESENCE, VERIFICATION, task_type

    if not isinstance(definition, dict):
        raise QualificationDefinitionError("the definition must be a JSON object with generation/verification/presence lists")
    unknown = set(definition) - {"generation", "verification", "presence", "presence_gold"}
    if unknown:
        raise QualificationDefinitionError(f"unknown section(s): {', '.join(sorted(unknown))}")
    hits: list[HIT] = []
    common = dict(max_assignments=32767, reward=0)
    for i, item in enumerate(definition.get("generation", []), start=1):
        where = f"generation item {i}"
        sentence = _text(item, "sentence", where)
        start, end = _span(sentence, item.get("predicate"), where)
        arguments = item.get("arguments")
        if not isinstance(arguments, list) or not arguments:
            raise QualificationDefinitionError(f"{where}: 'arguments' must list the key answers of each argument")
        key = [_require_substrings(a, sentence, f"{where}, argument {j}") for j, a in enumerate(arguments, start=1)]
        hits.append(HIT(task_type=task_type(GENERATION), kind=HIT.Kind.QUALIFICATION, payload={"inline": {"sentence": sentence, "start": start, "end": end}}, answer_key={"arguments": key}, **common))
    for i, item in enumerate(definition.get("verification", []), start=1):
        where = f"verification item {i}"
        sentence = _text(item, "sentence", where)
        start, end = _span(sentence, item.get("predicate"), where)
        questions, verdicts = [], {}
        for j, q in enumerate(item.get("questions") or [], start=1):
            qwhere = f"{where}, question {j}"
            question = _text(q, "question", qwhere)
            if not isinstance(q.get("valid"), bool):
                raise QualificationDefinitionError(f"{qwhere}: 'valid' must be true or false")
            shown = _require_substrings(q.get("answers") or [], sentence, qwhere)
            key_answers = _require_substrings(q.get("key_answers") or shown, sentence, qwhere) if q["valid"] else []
            questions.append({"id": f"k{j}", "question": question, "answers": shown})
            verdicts[f"k{j}"] = {"valid": q["valid"], "answers": key_answers}
        if not questions:
            raise QualificationDefinitionError(f"{where}: 'questions' must not be empty")
        hits.append(HIT(task_type=task_type(VERIFICATION), kind=HIT.Kind.QUALIFICATION, payload={"inline": {"sentence": sentence, "start": start, "end": end, "questions": questions}, "pass_above": campaign.verifier_agreement_threshold}, answer_key={"verdicts": verdicts}, **common))
    for section, kind in (("presence", HIT.Kind.QUALIFICATION), ("presence_gold", HIT.Kind.GOLD)):
        for i, item in enumerate(definition.get(section, []), start=1):
            where = f"{section} item {i}"
            candidate = _text(item, "candidate", where)
            reference = item.get("reference", "")
            inline = {"candidate": candidate, "reference": reference, "pairs": []}
            if item.get("predicate"):
                start, end = _span(reference, item["predicate"], where)
                inline["predicate"] = {"start": start, "end": end}
            labels = {}
            for j, pair in enumerate(item.get("pairs") or [], start=1):
                pwhere = f"{where}, pair {j}"
                if not isinstance(pair.get("present"), bool):
                    raise QualificationDefinitionError(f"{pwhere}: 'present' must be true or false")
                if pair.get("question"):
                    entry = {"id": f"g{j}", "question": _text(pair, "question", pwhere), "answer": _text(pair, "answer", pwhere)}
                else:
                    entry = {"id": f"g{j}", "text": _text(pair, "text", pwhere)}
                inline["pairs"].append(entry)
                labels[f"g{j}"] = pair["present"]
            if not labels:
                raise QualificationDefinitionError(f"{where}: 'pairs' must not be empty")
            payload = {"inline": inline}
            if kind == HIT.Kind.QUALIFICATION:
                payload["pass_above"] = campaign.presence_accuracy_threshold
            hits.append(HIT(task_type=task_type(PRESENCE), kind=kind, payload=payload, answer_key={"labels": labels}, **common))
    return hits


@transaction.atomic
def define_qualifications(campaign: Campaign, definition: dict) -> dict[str, int]:
    """Replace the campaign's qualification tests and gold items with those of ``definition``.

    The task types with a test then require qualification.  Returns the
    number of HITs created per section.
    """
    from annotation.services.pipeline import ensure_batch

    hits = build_qualification_hits(campaign, definition)
    batch = ensure_batch(campaign)
    HIT.objects.filter(batch=batch, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD], n_taken=0).delete()
    HIT.objects.filter(batch=batch, kind__in=[HIT.Kind.QUALIFICATION, HIT.Kind.GOLD]).update(state=HIT.State.CANCELLED)
    for hit in hits:
        hit.batch = batch
    HIT.objects.bulk_create(hits)
    counts: dict[str, int] = {}
    for hit in hits:
        key = f"{hit.task_type.slug}{'_gold' if hit.kind == HIT.Kind.GOLD else ''}"
        counts[key] = counts.get(key, 0) + 1
    tested = {h.task_type_id for h in hits if h.kind == HIT.Kind.QUALIFICATION}
    TaskType.objects.filter(pk__in=tested).update(
        requires_qualification=True,
        qualification_cooldown_hours=campaign.qualification_cooldown_hours,
        qualification_max_attempts=campaign.qualification_max_attempts,
    )
    return counts


# --- ongoing cross-checks --------------------------------------------------------------------


@dataclass
class Check:
    value: float | None
    n: int
    threshold: float
    status: str  # "pending", "ok" or "failing"

    def as_dict(self) -> dict:
        return {"value": self.value, "n": self.n, "threshold": self.threshold, "status": self.status}


def _check(numerator: int, n: int, threshold: float, grace: int) -> Check:
    value = numerator / n if n else None
    if n == 0 or n < grace:
        return Check(value, n, threshold, "pending")
    return Check(value, n, threshold, "ok" if value > threshold else "failing")


def worker_figures(campaign: Campaign, worker: Worker) -> dict[str, dict]:
    """The worker's figures per task type in a campaign, each against its threshold."""
    return workers_figures(campaign, [worker.pk])[worker.pk]


def workers_figures(campaign: Campaign, worker_ids) -> dict[int, dict[str, dict]]:
    """``worker_figures`` of many workers at once: a fixed number of grouped queries, however many workers."""
    worker_ids = list(dict.fromkeys(worker_ids))
    grace = campaign.grace_period_items
    batch_id = campaign.batch_id

    written = {
        row["author_id"]: row
        for row in ContentUnit.objects.filter(example__campaign=campaign, author_id__in=worker_ids, kind=ContentUnit.Kind.QA)
        .values("author_id")
        .annotate(
            written=Count("pk"),
            kept=Count("pk", filter=Q(state=ContentUnit.State.KEPT)),
            resolved=Count("pk", filter=Q(state__in=[ContentUnit.State.KEPT, ContentUnit.State.REJECTED])),
        )
    }
    generation_hits = dict(
        Assignment.objects.filter(
            worker_id__in=worker_ids, hit__batch_id=batch_id, hit__task_type__slug="generation", hit__kind=HIT.Kind.REGULAR,
            state__in=Assignment.DONE_STATES,
        )
        .values("worker_id")
        .annotate(n=Count("pk"))
        .values_list("worker_id", "n")
    )

    # Verification: each verdict against the other verifier's verdict on the same QA pair.
    mine = list(
        Verification.objects.filter(worker_id__in=worker_ids, unit__example__campaign=campaign).values_list("worker_id", "unit_id", "valid")
    )
    verdicts: dict[int, list[tuple[int, bool]]] = {}
    for worker_id, unit_id, is_valid in (
        Verification.objects.filter(unit_id__in={u for _, u, _ in mine}).order_by("pk").values_list("worker_id", "unit_id", "valid")
    ):
        verdicts.setdefault(unit_id, []).append((worker_id, is_valid))
    verification = {w: [0, 0, 0] for w in worker_ids}  # judged, compared, agreed
    for worker_id, unit_id, is_valid in mine:
        tally = verification[worker_id]
        tally[0] += 1
        other = next((v for w, v in verdicts.get(unit_id, []) if w != worker_id), None)
        if other is not None:
            tally[1] += 1
            tally[2] += int(other == is_valid)

    gold = {w: [0, 0] for w in worker_ids}  # right, total
    for worker_id, answers, key in Assignment.objects.filter(
        worker_id__in=worker_ids, hit__batch_id=batch_id, hit__kind=HIT.Kind.GOLD, state__in=Assignment.DONE_STATES
    ).values_list("worker_id", "answers", "hit__answer_key"):
        labels = (key or {}).get("labels", {})
        for label in (answers or {}).get("labels", []):
            expected = labels.get(str(label["unit"]))
            if expected is not None:
                gold[worker_id][1] += 1
                gold[worker_id][0] += int(bool(label["present"]) == bool(expected))
    judged = PresenceJudgment.objects.filter(worker_id__in=worker_ids, summary__system__campaign=campaign)
    n_judged = dict(judged.values("worker_id").annotate(n=Count("pk")).values_list("worker_id", "n"))
    majority = {
        row["worker_id"]: row
        for row in judged.filter(
            unit__gold__summary=F("summary"), unit__gold__origin=GoldPresence.Origin.MAJORITY, unit__gold__present__isnull=False
        )
        .values("worker_id")
        .annotate(n=Count("pk"), agree=Count("pk", filter=Q(present=F("unit__gold__present"))))
    }

    result = {}
    for worker_id in worker_ids:
        counts = written.get(worker_id, {"written": 0, "kept": 0, "resolved": 0})
        n_hits = generation_hits.get(worker_id, 0)
        valid = _check(counts["kept"], counts["resolved"], campaign.writer_valid_threshold, grace)
        per_predicate = counts["written"] / n_hits if n_hits else None
        qpp_status = "pending" if n_hits == 0 or counts["resolved"] < grace else (
            "ok" if per_predicate >= campaign.writer_min_questions_per_predicate else "failing"
        )
        judged_n, compared, agreed = verification[worker_id]
        right, total = gold[worker_id]
        n_majority = majority.get(worker_id, {}).get("n", 0)
        agree_majority = majority.get(worker_id, {}).get("agree", 0)
        result[worker_id] = {
            "generation": {
                "valid_share": valid.as_dict(),
                "questions_per_predicate": {"value": per_predicate, "n": n_hits, "threshold": campaign.writer_min_questions_per_predicate, "status": qpp_status},
                "hits_done": n_hits,
            },
            "verification": {
                "agreement": _check(agreed, compared, campaign.verifier_agreement_threshold, grace).as_dict(),
                "questions_judged": judged_n,
            },
            "presence": {
                "gold_accuracy": _check(right, total, campaign.presence_accuracy_threshold, grace).as_dict(),
                "majority_agreement": {"value": agree_majority / n_majority if n_majority else None, "n": n_majority},
                "judgments": n_judged.get(worker_id, 0),
            },
        }
    return result


FAILING_CHECKS = {
    "generation": ("valid_share", "questions_per_predicate"),
    "verification": ("agreement",),
    "presence": ("gold_accuracy",),
}
CHECK_NAMES = {
    "valid_share": "share of QA pairs kept by verifiers",
    "questions_per_predicate": "questions per predicate",
    "agreement": "agreement with the other verifier",
    "gold_accuracy": "accuracy on gold items",
}


def apply_cross_checks(campaign: Campaign, worker: Worker, figures: dict | None = None, task_types: dict | None = None) -> list[str]:
    """Revoke the qualifications whose checks fail after the grace period; returns the task types revoked.

    ``figures`` (the worker's ``worker_figures``) and ``task_types`` (by slug) may be passed in
    when many workers are checked at once (``apply_cross_checks_many``)."""
    if figures is None:
        figures = worker_figures(campaign, worker)
    if task_types is None:
        task_types = {t.slug: t for t in TaskType.objects.filter(slug__in=FAILING_CHECKS)}
    revoked = []
    for slug, names in FAILING_CHECKS.items():
        task_type = task_types.get(slug)
        if task_type is None:
            continue
        failing = [n for n in names if figures[slug][n]["status"] == "failing"]
        if not failing:
            continue
        qualification = qualifications.qualification_for(worker, task_type)
        if qualification is not None and qualification.state == qualification.State.REVOKED:
            continue
        n_items = figures[slug][names[0]]["n"]
        last_manual = QualificationEvent.objects.filter(
            worker=worker, task_type=task_type, automatic=False, action=QualificationEvent.Action.REINSTATE
        ).first()
        if last_manual is not None and n_items < last_manual.figures.get("n_items", 0) + campaign.grace_period_items:
            continue  # a researcher's reinstatement holds for another grace period
        parts = []
        for name in failing:
            f = figures[slug][name]
            comparison = "at least" if name == "questions_per_predicate" else "above"
            parts.append(f"{CHECK_NAMES[name]} is {f['value']:.2f} (needs to be {comparison} {f['threshold']:.2f}, over {f['n']} items)")
        qualifications.revoke(
            worker, task_type, f"{campaign.name}: " + "; ".join(parts), automatic=True, figures={"n_items": n_items, **figures[slug]}
        )
        revoked.append(slug)
    return revoked


def apply_cross_checks_many(campaign: Campaign, workers) -> dict[int, list[str]]:
    """``apply_cross_checks`` for many workers, their figures computed together (grouped queries)."""
    workers = list(workers)
    figures = workers_figures(campaign, [w.pk for w in workers])
    task_types = {t.slug: t for t in TaskType.objects.filter(slug__in=FAILING_CHECKS)}
    return {w.pk: apply_cross_checks(campaign, w, figures[w.pk], task_types) for w in workers}


def schedule_cross_checks(campaign: Campaign, workers) -> None:
    """Recompute the workers' figures after the current transaction commits (a Celery task).

    With a Redis broker the calls of a short window are coalesced into one task per campaign
    (see ``annotation.services.coalesce``); eager Celery runs them immediately, as before."""
    from annotation.services import coalesce

    coalesce.schedule("cross_checks", campaign.pk, {w.pk if hasattr(w, "pk") else int(w) for w in workers})


def after_gold_submission(assignment: Assignment) -> None:
    campaign = Campaign.objects.get(batch_id=assignment.hit.batch_id)
    schedule_cross_checks(campaign, [assignment.worker])


# --- exclusion and replacement ---------------------------------------------------------------


@transaction.atomic
def exclude_worker(campaign: Campaign, worker: Worker, *, by=None, replace: bool = True) -> dict:
    """Leave a worker's presence judgments out of gold aggregation, optionally re-opening their places.

    Returns {"judgments": n excluded, "hits_reopened": n}.
    """
    from annotation.services.gold import refresh_gold, schedule_score_update

    judgments = PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign, excluded=False)
    pairs = set(judgments.values_list("unit_id", "summary_id"))
    per_hit = dict(
        judgments.exclude(assignment=None).values("assignment__hit_id").annotate(n=Count("assignment_id", distinct=True)).values_list("assignment__hit_id", "n")
    )
    n = judgments.update(excluded=True)
    reopened = 0
    if replace and per_hit:
        for hit in HIT.objects.select_for_update().filter(pk__in=per_hit):
            extra = per_hit[hit.pk]
            hit.max_assignments += extra
            hit.payload = {**hit.payload, "replacements": hit.payload.get("replacements", 0) + extra}
            hit.state = HIT.State.OPEN
            hit.completed_at = None
            hit.save(update_fields=["max_assignments", "payload", "state", "completed_at"])
            reopened += 1
        if campaign.state == Campaign.State.FINISHED:
            from hits.models import Batch

            Campaign.objects.filter(pk=campaign.pk).update(state=Campaign.State.RUNNING)
            Batch.objects.filter(pk=campaign.batch_id).update(state=Batch.State.ACTIVE)
    refresh_gold(campaign, pairs)
    schedule_score_update(campaign, [s for _, s in pairs])
    QualificationEvent.objects.create(
        worker=worker, action=QualificationEvent.Action.EXCLUDE, reason=f"{campaign.name}: {n} judgments excluded from gold; {reopened} HITs re-opened",
        decided_by=by, figures={"campaign": campaign.slug, "judgments": n, "hits_reopened": reopened},
    )
    return {"judgments": n, "hits_reopened": reopened}


@transaction.atomic
def include_worker(campaign: Campaign, worker: Worker, *, by=None) -> dict:
    """Undo an exclusion: the judgments count again; replacement places not yet taken are withdrawn."""
    from annotation.services.gold import refresh_gold, schedule_score_update

    judgments = PresenceJudgment.objects.filter(worker=worker, summary__system__campaign=campaign, excluded=True)
    pairs = set(judgments.values_list("unit_id", "summary_id"))
    hit_ids = set(judgments.exclude(assignment=None).values_list("assignment__hit_id", flat=True))
    n = judgments.update(excluded=False)
    for hit in HIT.objects.select_for_update().filter(pk__in=hit_ids, state__in=HIT.UNFINISHED_STATES):
        spare = min(hit.payload.get("replacements", 0), hit.max_assignments - hit.n_taken)
        if spare > 0:
            hit.max_assignments -= spare
            hit.payload = {**hit.payload, "replacements": hit.payload.get("replacements", 0) - spare}
            if hit.n_submitted >= hit.max_assignments:
                hit.state = HIT.State.COMPLETED
                hit.completed_at = timezone.now()
            hit.save(update_fields=["max_assignments", "payload", "state", "completed_at"])
    refresh_gold(campaign, pairs)
    schedule_score_update(campaign, [s for _, s in pairs])
    QualificationEvent.objects.create(
        worker=worker, action=QualificationEvent.Action.INCLUDE, reason=f"{campaign.name}: {n} judgments count again", decided_by=by,
        figures={"campaign": campaign.slug, "judgments": n},
    )
    from annotation.services.pipeline import finish_campaign_if_done

    finish_campaign_if_done(Campaign.objects.get(pk=campaign.pk))
    return {"judgments": n}
