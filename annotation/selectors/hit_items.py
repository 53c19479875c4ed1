"""What a HIT shows a worker: the sentence and predicate of a generation or verification HIT, the
questions to verify, the pairs kept so far, and a presence HIT's summary, reference and units.

Qualification and gold HITs carry their whole item in ``payload["inline"]``; regular HITs name rows of
the campaign.  The presence reads run on every presence page (the bulk of a campaign's HITs), so they
are hand-written SQL (``hits.sql``), composed once per process.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.models import Campaign, ContentUnit, Predicate, ReferenceSentence, SystemSummary
from hits import sql


@dataclass
class ShownUnit:
    """A question or unit as a HIT page shows it (a database row or an inline item)."""

    pk: object
    question: str
    answers: list
    text: str


@dataclass
class SentenceItem:
    sentence: str
    start: int
    end: int
    predicate_text: str
    max_questions: int
    max_answers: int
    predicate: Predicate | None = None
    lemma: str = ""


def sentence_item(hit) -> SentenceItem:
    """The sentence and predicate a generation or verification HIT is about."""
    inline = hit.payload.get("inline")
    if inline:
        sentence, start, end = inline["sentence"], inline["start"], inline["end"]
        return SentenceItem(
            sentence, start, end, sentence[start:end], inline.get("max_questions", 5), inline.get("max_answers", 3),
            lemma=inline.get("lemma", ""),
        )
    predicate = Predicate.objects.select_related("sentence__example__campaign").get(pk=hit.payload["predicate"])
    campaign: Campaign = predicate.sentence.example.campaign
    return SentenceItem(
        predicate.sentence.text,
        predicate.start,
        predicate.end,
        predicate.text,
        campaign.max_questions_per_predicate,
        campaign.max_answers_per_question,
        predicate,
        predicate.lemma,
    )


def shown_units(hit) -> list[ShownUnit]:
    """The questions a verification HIT shows, in the HIT's order (database rows, or the inline items of a test)."""
    inline = hit.payload.get("inline")
    if inline:
        return [
            ShownUnit(str(q["id"]), q.get("question", ""), list(q.get("answers", [])), q.get("text") or f"{q.get('question', '')} {' / '.join(q.get('answers', []))}")
            for q in inline.get("questions", [])
        ]
    rows = {u.pk: u for u in ContentUnit.objects.filter(pk__in=hit.payload["units"])}
    return [ShownUnit(pk, rows[pk].question, rows[pk].answers, rows[pk].text) for pk in hit.payload["units"] if pk in rows]


def kept_pairs(predicate: Predicate | None):
    """The QA pairs of a predicate kept in earlier rounds (a redo writer sees them); none for a test item."""
    if predicate is None:
        return ContentUnit.objects.none()
    return ContentUnit.objects.filter(predicate=predicate, state=ContentUnit.State.KEPT).order_by("index")


@dataclass
class ReferenceLine:
    """One sentence of the reference, with the predicate's span when the HIT is about a predicate in it."""

    text: str
    highlight: tuple[int, int] | None = None


@dataclass
class PresenceItem:
    candidate: str
    reference: list[ReferenceLine]
    predicate_text: str | None
    units: list[ShownUnit] = field(default_factory=list)


def presence_item(hit) -> PresenceItem:
    """The system summary, the reference (predicate highlighted) and the units a presence HIT asks about."""
    inline = hit.payload.get("inline")
    if inline:
        reference = inline.get("reference", "")
        span = inline.get("predicate")
        pairs = [
            ShownUnit(str(p["id"]), p.get("question", ""), [p["answer"]] if p.get("answer") else [], p.get("text") or f"{p.get('question', '')} {p.get('answer', '')}")
            for p in inline["pairs"]
        ]
        predicate_text = reference[span["start"] : span["end"]] if span else None
        return PresenceItem(inline["candidate"], [ReferenceLine(reference, (span["start"], span["end"]) if span else None)], predicate_text, pairs)
    rows = sql.fetchall(_presence_sql("reference"), [hit.payload["summary"]])
    if not rows:
        raise SystemSummary.DoesNotExist(f"no system summary {hit.payload['summary']}")
    predicate = None
    if hit.payload.get("predicate"):
        row = sql.fetchone(_presence_sql("predicate"), [hit.payload["predicate"]])
        if row is None:
            raise Predicate.DoesNotExist(f"no predicate {hit.payload['predicate']}")
        predicate = sql.instance(Predicate, row)
    reference = []
    for _, sentence_id, sentence_text in rows:
        if sentence_id is None:  # a reference without sentences (the LEFT JOIN's empty row)
            continue
        highlight = (predicate.start, predicate.end) if predicate is not None and sentence_id == predicate.sentence_id else None
        reference.append(ReferenceLine(sentence_text, highlight))
    wanted = list(hit.payload["units"])
    found = {}
    if wanted:
        statement = _presence_sql("units").replace("%s", ", ".join(["%s"] * len(wanted)))
        found = {u.pk: u for u in (sql.instance(ContentUnit, r) for r in sql.fetchall(statement, wanted))}
    units = [ShownUnit(pk, found[pk].question, found[pk].answers, found[pk].text) for pk in wanted if pk in found]
    return PresenceItem(rows[0][0], reference, predicate.text if predicate else None, units)


def _presence_sql(name: str) -> str:
    """The presence page's statements (composed once per process, see ``hits.sql.statement``)."""

    def build():
        if name == "reference":
            return (
                f"SELECT s.{sql.quote('text')}, r.id, r.{sql.quote('text')} FROM {sql.table(SystemSummary)} s "
                f"LEFT JOIN {sql.table(ReferenceSentence)} r ON r.example_id = s.example_id "
                f"WHERE s.id = %s ORDER BY r.{sql.quote('index')}"
            )
        if name == "predicate":
            return f"SELECT {sql.columns(Predicate, 'p')} FROM {sql.table(Predicate)} p WHERE p.id = %s"
        return f"SELECT {sql.columns(ContentUnit, 'u')} FROM {sql.table(ContentUnit)} u WHERE u.id IN (%s)"

    return sql.statement(("presence", name), build)
