"""Random and adversarial text in imports and HIT forms: a clear message or a clean record, never a crash."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.web.hit_pages import GenerationHandler, PresenceHandler, VerificationHandler
from annotation.importing.readers import Problem, ProblemList, decode_lines, read_references, read_summaries
from hits.handlers import AnswerErrors
from tests.api.conftest import api_world  # noqa: F401 - fixture
from tests.api.test_schemathesis import keep_test_connection  # noqa: F401 - fixture

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


# --- whole requests: every HTML form and the API's JSON bodies (issue 19) ------------------------
#
# Hypothesis sends hostile values (numbers of other scripts, ids that are not ids, off-site and
# javascript: addresses, very long and deeply nested text, NUL, right-to-left marks) to every form a
# researcher or worker can post, and hostile JSON to the API.  Each request runs in a rolled-back
# savepoint, so every example meets the same campaigns.  The property: never a server error.

HOSTILE_VALUE = st.one_of(
    st.sampled_from(
        [
            "", "0", "-1", "1e5", "²", "١٢", "99999999999999999999999", "abc", "NaN", "Infinity", "on", "1",
            "javascript:alert(1)", "https://evil.example/", "//evil.example/x", "/work/history/", "\x00",
            "\u202e", "<script>x</script>", "approve", "reject", "bonus", "launch", "pause", "resume", "cancel",
            "submit", "skip", "return", "exclude", "include", "revoke", "reinstate", "block", "preview", "save",
            "autoscore", "auto", "none", "file", "generation", "presence", "5", "3", "0.01", "1000000",
            "[" * 3000, '{"presence": 5}', '{"presence": [{"candidate": "\\ud800"}]}',
        ]
    ),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.integers(-(2**70), 2**70).map(str),
    st.sampled_from(["x", "Who? ", "é"]).map(lambda text: text * 3000),
)
JSON_VALUE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=False), HOSTILE_VALUE),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["username", "sentence", "start", "end", "worker", "amount", "message", "reason", "question", "answers", "max_questions_per_predicate", "name", "slug", "description", "judge", "systems"]), inner, max_size=4)),
    max_leaves=8,
)
RAW_JSON = st.sampled_from(["[" * 100_000 + "]" * 100_000, '{"a": ' * 30_000 + "1" + "}" * 30_000, '{"username": "\\ud800"}', "{", "", "\x00"])


@pytest.fixture
def hostile_world(api_world, tmp_path, settings):
    """The API world, a running campaign with a live assignment (crowd1) and a submitted one (crowd2)."""
    from django.utils import timezone

    from annotation.services.campaign_import import import_campaign
    from annotation.services.pipeline import launch_campaign
    from hits.models import Assignment, TaskType, Worker
    from hits.services import accept_next
    from tests.conftest import write_jsonl

    settings.DATA_DIR = tmp_path / "data"
    owner = api_world["users"]["owner"]
    refs = write_jsonl(tmp_path / "rr.jsonl", [{"id": "r", "reference": "The team won the final on Sunday."}, {"id": "q", "reference": "Fans cheered loudly."}])
    sums = write_jsonl(tmp_path / "rs.jsonl", [{"id": "r", "system": "delta", "summary": "The team won."}, {"id": "q", "system": "delta", "summary": "Fans cheered."}])
    running = import_campaign(name="Running", owner=owner, references=refs, summaries=sums).campaign
    launch_campaign(running)
    generation = TaskType.objects.get(slug="generation")
    live = accept_next(Worker.objects.get(external_id="crowd1"), generation)
    done = accept_next(Worker.objects.create(external_id="crowd2"), generation)
    Assignment.objects.filter(pk=done.pk).update(state=Assignment.State.SUBMITTED, submitted_at=timezone.now())
    draft = api_world["campaign"]
    return {
        **api_world,
        "draft": draft.slug,
        "running": running.slug,
        "live": live.pk,
        "done": done.pk,
        "sentence": draft.examples.first().sentences.first().pk,
        "predicate": draft.examples.first().sentences.first().predicates.first().pk,
        "unit": None,
    }


def _html_endpoints(w):
    """(role, path, fields) of every form a person can post."""
    d, r = w["draft"], w["running"]
    settings_fields = ["backend", "assignments_presence", "reward_presence", "max_questions_per_predicate", "max_answers_per_question",
                       "min_kept_qas_per_predicate", "writer_min_questions_per_predicate", "grace_period_items", "length_penalty_alpha",
                       "gold_share", "tie_rule", "action"]
    return [
        ("anonymous", "/accounts/login/", ["username", "password", "next"]),
        ("anonymous", "/admin/login/", ["username", "password", "next"]),
        ("anonymous", "/join/not-a-token/", ["username", "password1", "password2"]),
        ("worker", "/work/settings/", ["auto_accept_next", "next"]),
        ("worker", "/work/generation/start/", ["hit"]),
        ("worker", "/work/presence/start/", ["hit"]),
        ("worker", f"/work/assignments/{w['live']}/", ["action", "q1", "q1_a1", "q1_a2", "q2", "q2_a1", "feedback"]),
        ("owner", "/campaigns/new/", ["name", "slug", "description", "predicates", "upload", "references", "summaries"]),
        ("owner", "/campaigns/new/confirm/", ["upload"]),
        ("owner", f"/campaigns/{d}/settings/", settings_fields),
        ("owner", f"/campaigns/{d}/predicates/add/", ["sentence", "span", "start", "lemma", "page"]),
        ("owner", f"/campaigns/{d}/predicates/remove/", ["predicate", "page"]),
        ("owner", f"/campaigns/{d}/qualifications/", ["definition"]),
        ("owner", f"/campaigns/{r}/control/", ["action"]),
        ("owner", f"/campaigns/{r}/workers/action/", ["worker", "action", "task_type", "reason", "replace"]),
        ("owner", f"/campaigns/{r}/review/assignments/{w['done']}/", ["action", "message", "amount", "next"]),
        ("owner", f"/campaigns/{r}/systems/add/", ["action", "judge", "systems", "summaries"]),
        ("owner", f"/campaigns/{r}/judges/", ["judge", "generate_qas"]),
        ("owner", f"/campaigns/{r}/export/", ["pseudonymise"]),
        ("owner", f"/campaigns/{r}/payouts/mark-paid/", ["only", "worker", "all", "upto", "note"]),
        ("owner", f"/campaigns/{d}/qualifications/items/new/?kind=verification",
         ["sentence", "predicate", "predicate_start", "q1_question", "q1_answers", "q1_valid", "q1_key_answers", "q40_question"]),
        ("owner", f"/campaigns/{d}/qualifications/items/new/?kind=presence",
         ["candidate", "reference", "predicate", "predicate_start", "p1_question", "p1_answer", "p1_present"]),
    ]


def _pages(w):
    """Pages read with hostile query strings."""
    d, r = w["draft"], w["running"]
    return [
        ("owner", f"/campaigns/{r}/workers/", ["status", "sort", "order"]),
        ("owner", f"/campaigns/{d}/predicates/", ["page"]),
        ("owner", f"/campaigns/{r}/review/", ["page", "system", "example"]),
        ("owner", "/campaigns/new/", ["upload"]),
        ("owner", f"/campaigns/{r}/leaderboard/", ["n_boot", "system"]),
        ("worker", "/work/history/", ["page"]),
        ("worker", "/work/mturk/hit/", ["assignmentId", "hitId", "workerId", "turkSubmitTo"]),
        ("anonymous", "/accounts/login/", ["next"]),
    ]


def _api_endpoints(w):
    d, r = w["draft"], w["running"]
    return [
        ("anonymous", "post", "/api/token/"),
        ("owner", "patch", f"/api/campaigns/{d}/"),
        ("owner", "post", f"/api/campaigns/{d}/share/"),
        ("owner", "post", f"/api/campaigns/{d}/unshare/"),
        ("owner", "post", f"/api/campaigns/{d}/predicates/"),
        ("owner", "post", f"/api/campaigns/{r}/workers/exclude/"),
        ("owner", "post", f"/api/campaigns/{r}/autoscore/"),
        ("owner", "post", f"/api/campaigns/{r}/assignments/{w['done']}/bonus/"),
        ("owner", "post", f"/api/campaigns/{r}/assignments/{w['done']}/reject/"),
        ("owner", "post", f"/api/campaigns/{r}/mark-paid/"),
    ]


def _client(world, role, clients):
    from django.test import Client

    if role not in clients:
        client = Client(raise_request_exception=False)
        if role != "anonymous":
            client.force_login(world["users"][role])
        clients[role] = client
    return clients[role]


def _rolled_back(call):
    from django.db import transaction

    with transaction.atomic():
        response = call()
        transaction.set_rollback(True)
    return response


HTML_EXAMPLES = int(os.environ.get("FORM_FUZZ_EXAMPLES", "400"))


@pytest.mark.django_db
def test_no_html_form_or_page_answers_hostile_input_with_a_server_error(hostile_world, keep_test_connection):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from annotation.models import Campaign

    world, clients, failures, calls = hostile_world, {}, [], []
    forms, pages = _html_endpoints(world), _pages(world)

    @settings(max_examples=HTML_EXAMPLES, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        post = data.draw(st.booleans())
        role, path, fields = data.draw(st.sampled_from(forms if post else pages))
        values = data.draw(st.dictionaries(st.sampled_from(fields), HOSTILE_VALUE, max_size=len(fields)))
        if post:
            for name in ("references", "summaries") if "/new/" in path else ("summaries",) if "systems" in path else ():
                if name in values:
                    raw = data.draw(st.one_of(st.binary(max_size=200), st.just(values[name].encode("utf-8", "surrogatepass"))))
                    values[name] = SimpleUploadedFile(f"{name}.jsonl", raw)
        client = _client(world, role, clients)
        response = _rolled_back(lambda: client.post(path, values) if post else client.get(path, values))
        calls.append(path)
        if response.status_code >= 500:
            failures.append(f"{'POST' if post else 'GET'} {path} {values!r:.300} -> {response.status_code}")
        assert response.status_code < 500

    try:
        run()
    finally:
        assert not failures, "\n".join(failures[:10])
    assert len(calls) >= HTML_EXAMPLES and len(set(calls)) >= len(forms)  # every form was tried
    assert Campaign.objects.get(slug=world["draft"]).state == "draft"  # every request was rolled back


@pytest.mark.django_db
def test_no_api_call_answers_hostile_json_with_a_server_error(hostile_world, keep_test_connection):
    from tests.api.conftest import client_for

    world, failures, calls = hostile_world, [], []
    clients = {role: client_for(world, role) for role in ("anonymous", "owner")}
    for client in clients.values():
        client.raise_request_exception = False
    endpoints = _api_endpoints(world)

    @settings(max_examples=HTML_EXAMPLES // 2, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
    @given(endpoint=st.sampled_from(endpoints), body=st.one_of(JSON_VALUE.map(lambda v: json.dumps(v)), RAW_JSON))
    def run(endpoint, body):
        role, method, path = endpoint
        client = clients[role]
        response = _rolled_back(lambda: getattr(client, method)(path, body, content_type="application/json"))
        calls.append(path)
        if response.status_code >= 500:
            failures.append(f"{method.upper()} {path} {body[:200]!r} -> {response.status_code}")
        assert response.status_code < 500

    try:
        run()
    finally:
        assert not failures, "\n".join(failures[:10])
    assert len(calls) >= HTML_EXAMPLES // 2 and set(calls) == {path for _, _, path in endpoints}
