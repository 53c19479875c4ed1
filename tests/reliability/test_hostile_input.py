"""Random and adversarial text in imports and HIT forms: a clear message or a clean record, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.web.hit_pages import GenerationHandler, PresenceHandler, VerificationHandler
from annotation.importing.readers import Problem, ProblemList, decode_lines, read_references, read_summaries
from hits.handlers import AnswerErrors

NASTY = st.sampled_from(
    ["\u202e", "\u200f", "\u0000", "\x1b[31m", "\ud7ff", "👩‍🔬", "Ω", "سلام", "日本語", "\t", "\r\n", "=SUM(A1)", "<script>", "\"", "'", "\\"]
)
TEXT = st.lists(st.one_of(st.text(max_size=30), NASTY), max_size=8).map("".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(TEXT, st.binary(max_size=40).map(lambda b: b.decode("latin-1"))), max_size=12))
def test_reference_reader_never_crashes(tmp_path, lines):
    path = tmp_path / "refs.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogatepass"))
    problems = ProblemList()
    records = read_references(path, problems)
    for problem in problems:
        assert isinstance(problem, Problem) and problem.file == "refs.jsonl" and str(problem)
    for record in records:
        assert record.id.strip() and record.reference.strip()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({"id": TEXT, "system": TEXT, "summary": TEXT}), max_size=6))
def test_summary_reader_accepts_or_names_every_bad_line(tmp_path, rows):
    path = tmp_path / "sums.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    problems = ProblemList()
    records = read_summaries(path, problems)
    if not rows:
        assert [str(p) for p in problems] == ["sums.jsonl: contains no summaries"]
        return
    accounted = {r.line for r in records} | {p.line for p in problems}
    assert accounted == set(range(1, len(rows) + 1))  # every line became a summary or a named problem


@given(st.binary(max_size=200))
def test_decoding_reports_the_line_of_invalid_utf8(raw):
    problems = ProblemList()
    lines = decode_lines(raw, "f.txt", problems)
    if lines is None:
        assert problems and all(p.line is not None for p in problems)
    else:
        assert not problems


class _Hit:
    def __init__(self, payload, kind="qualification"):
        self.payload = payload
        self.kind = kind


SENTENCE = "Police blamed the driver for the crash."
GENERATION = _Hit({"inline": {"sentence": SENTENCE, "start": 7, "end": 13}})
VERIFICATION = _Hit({"inline": {"sentence": SENTENCE, "start": 7, "end": 13, "questions": [{"id": "k1", "question": "Who blamed someone?", "answers": ["Police"]}]}})
PRESENCE = _Hit({"inline": {"candidate": "x", "reference": "y", "pairs": [{"id": "g1", "question": "Who?", "answer": "x"}]}})


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["q1", "q1_a1", "q1_a2", "q2", "q2_a1", "q5_a3", "feedback", "other"]), TEXT, max_size=8))
def test_generation_form_validation_only_ever_answers_with_field_errors(data):
    try:
        answers = GenerationHandler().clean(GENERATION, data)
    except AnswerErrors as exc:
        assert exc.errors and all(isinstance(m, str) and m for ms in exc.errors.values() for m in ms)
        return
    for q in answers["questions"]:
        assert q["question"].endswith("?") and q["answers"]
        assert all(a in " ".join(SENTENCE.split()) for a in q["answers"])
        assert "\x00" not in q["question"] and "\u202e" not in q["question"]


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["v_k1", "v_k1_a1", "p_1", "feedback"]), TEXT, max_size=4))
def test_verification_and_presence_forms_never_crash(data):
    for handler, hit in ((VerificationHandler(), VERIFICATION), (PresenceHandler(), PRESENCE)):
        try:
            handler.clean(hit, data)
        except AnswerErrors as exc:
            assert exc.errors


def test_huge_answers_are_refused_with_a_message():
    with pytest.raises(AnswerErrors) as info:
        GenerationHandler().clean(GENERATION, {"q1": "Who blamed someone?" * 50, "q1_a1": "Police" * 1000})
    assert "under 200 characters" in " ".join(info.value.errors["q1"])
    assert "under 300 characters" in " ".join(info.value.errors["q1_a1"])


@pytest.mark.django_db
def test_import_size_and_line_limits_are_clear_and_write_nothing(tmp_path, settings):
    from annotation.importing.readers import CampaignImportError
    from annotation.models import Campaign
    from annotation.services.campaign_import import import_campaign

    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"id": str(i), "reference": "Dogs bark."}) + "\n" for i in range(50)))
    sums = tmp_path / "sums.jsonl"
    sums.write_text(json.dumps({"id": "0", "system": "s", "summary": "x"}) + "\n")
    settings.IMPORT_MAX_LINES = 10
    with pytest.raises(CampaignImportError, match="refs.jsonl: file has 50 lines; the limit is 10"):
        import_campaign(name="Big", references=refs, summaries=sums)
    settings.IMPORT_MAX_LINES = 1000
    settings.IMPORT_MAX_BYTES = 100
    with pytest.raises(CampaignImportError, match=r"refs.jsonl: file is [\d,]+ bytes; the limit is 100"):
        import_campaign(name="Big", references=refs, summaries=sums)
    assert not Campaign.objects.exists()
