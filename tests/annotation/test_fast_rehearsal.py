"""``simulate_crowd --mode fast``: the worker pages' services without HTTP or HTML, and the rehearsal's money."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import Count

from annotation.models import Campaign, ContentUnit, GoldPresence, PresenceJudgment, Verification
from hits import services as hits_services
from hits.models import Assignment, LedgerEntry

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]


def _run(capsys, mode: str, seed: int, approve: bool = True) -> str:
    # The hand-out's expiry pass runs at most every 20 s of wall time per process (``hits.services.expire_due``)
    # and may let go of expired draws: every run starts with it due, as a fresh process does.
    hits_services._last_expiry = float("-inf")
    call_command("load_demo", password="demo-pass-123")
    options = {"campaign": "demo-news", "workers": 8, "seed": seed, "mode": mode}
    if approve:
        options["approve"] = True
    call_command("simulate_crowd", **options)
    return capsys.readouterr().out


def _final_state() -> dict:
    """What a campaign's run leaves, named by texts and usernames (never database ids)."""
    campaign = Campaign.objects.get(slug="demo-news")
    batch = campaign.batch
    units = ContentUnit.objects.filter(example__campaign=campaign)
    return {
        "campaign": campaign.state,
        "assignments": sorted(
            Assignment.objects.filter(hit__batch=batch).values_list("hit__task_type__slug", "hit__kind", "state")
            .annotate(n=Count("pk")).values_list("hit__task_type__slug", "hit__kind", "state", "n")
        ),
        "units": sorted(units.values_list("example__external_id", "question", "state", "author__external_id")),
        "verifications": sorted(
            Verification.objects.filter(unit__example__campaign=campaign).values_list(
                "unit__example__external_id", "unit__question", "worker__external_id", "valid"
            )
        ),
        "judgments": sorted(
            PresenceJudgment.objects.filter(summary__system__campaign=campaign).values_list(
                "unit__example__external_id", "unit__question", "summary__system__name", "worker__external_id", "present"
            )
        ),
        "gold": sorted(
            GoldPresence.objects.filter(summary__system__campaign=campaign).values_list(
                "unit__example__external_id", "unit__question", "summary__system__name", "present", "origin"
            )
        ),
        "ledger": sorted(
            LedgerEntry.objects.filter(batch=batch).values_list("worker__external_id", "kind", "amount", "state")
        ),
    }


def test_fast_mode_finishes_the_demo_campaign_says_so_and_reconciles_its_money(capsys, eager_celery):
    out = _run(capsys, "fast", seed=3)
    assert "mode: fast (the pages' services in-process, no HTML)" in out
    assert "campaign finished" in out
    assert "the ledger reconciles with the work" in out and "does NOT reconcile" not in out
    campaign = Campaign.objects.get(slug="demo-news")
    # The same protocol as the pages: kept units, two or three judgments per unit and system, majority labels.
    assert ContentUnit.objects.filter(example__campaign=campaign, state="kept").count() >= 20
    per_pair = PresenceJudgment.objects.filter(summary__system__campaign=campaign).values("unit", "summary").annotate(n=Count("pk"))
    assert per_pair and {row["n"] for row in per_pair} <= {2, 3}
    # The simulated review approved every submission through the payments code: one reward each, at its HIT's reward.
    work = Assignment.objects.filter(hit__batch=campaign.batch, state__in=Assignment.DONE_STATES)
    assert not work.filter(state=Assignment.State.SUBMITTED).exists()
    approved = list(work.filter(state=Assignment.State.APPROVED).select_related("hit"))
    rewards = LedgerEntry.objects.filter(batch=campaign.batch, kind="reward")
    assert rewards.count() == len(approved) > 300
    assert {e.assignment_id: e.amount for e in rewards} == {a.pk: a.hit.reward for a in approved}
    total = sum(a.hit.reward for a in approved)
    assert f"ledger rewards ${total}" in out


def test_a_ledger_that_disagrees_with_the_work_fails_the_rehearsal(capsys, eager_celery, monkeypatch):
    """The reconciliation is a check, not a report: work approved without its reward is named and the command fails."""
    from django.core.management.base import CommandError

    from annotation.management.simulation import money
    from hits import payments

    approve = payments.approve_assignment
    state = {"n": 0}

    def approve_one_without_booking(assignment, *args, **kwargs):
        state["n"] += 1
        if state["n"] == 1:  # approved behind the payments code's back: no reward in the ledger
            Assignment.objects.filter(pk=assignment.pk).update(state=Assignment.State.APPROVED)
            return assignment
        return approve(assignment, *args, **kwargs)

    monkeypatch.setattr(money.payments, "approve_assignment", approve_one_without_booking)
    with pytest.raises(CommandError, match="money does not reconcile: .* approved but .* rewarded in the ledger"):
        _run(capsys, "fast", seed=3)


def _fresh_process_run(tmp_path, mode: str) -> tuple[list[str], str]:
    """The demo campaign rehearsed in ``mode`` by a new process on a new database: (report lines, final state)."""
    env = {"PATH": "/usr/bin:/bin", "DEBUG": "1", "DATA_DIR": str(tmp_path / mode), "PYTHONPATH": str(REPO)}

    def manage(*args):
        result = subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    manage("migrate", "--noinput")
    manage("load_demo", "--password", "demo-pass-123")
    out = manage("simulate_crowd", "--campaign", "demo-news", "--workers", "8", "--seed", "4", "--mode", mode, "--approve")
    state = manage("shell", "-c", "import json; from tests.annotation.test_fast_rehearsal import _final_state; "
                   "print(json.dumps(_final_state(), default=str))")
    return out.splitlines(), state.strip().splitlines()[-1]


@pytest.mark.django_db(transaction=False)
def test_fast_and_html_modes_reach_the_same_final_state_with_the_same_seed(tmp_path):
    """Each mode in a fresh process on a fresh database (as a researcher runs the command): the same units, verdicts,
    judgments by worker, gold labels and ledger.  (Exactly the same while no time-based expiry, a held place or a
    kept draw, falls inside either run: the demo's runs take well under the 90 s an unopened place is held.  In one
    process after other rehearsals the counts can differ by a HIT or a few: some state outlives a test's database.)"""
    html_lines, html = _fresh_process_run(tmp_path, "html")
    fast_lines, fast = _fresh_process_run(tmp_path, "fast")
    assert "mode: html (the worker pages over HTTP)" in html_lines
    assert "mode: fast (the pages' services in-process, no HTML)" in fast_lines
    stages = ("generation:", "verification:", "presence:", "money:", "duplicate review:")
    assert [x for x in fast_lines if x.startswith(stages)] == [x for x in html_lines if x.startswith(stages)]
    assert "campaign finished" in html_lines[-1] and "campaign finished" in fast_lines[-1]
    assert json.loads(fast) == json.loads(html)


def test_a_stuck_run_names_the_hits_left_and_why_no_one_could_do_them(capsys, eager_celery, monkeypatch):
    """Writers whose every question the generation page refuses: the run ends stuck, and its report says which HITs
    are left and the page's reason, not only "stuck"."""
    from annotation.management.simulation.answers import Answerer

    careful = Answerer.generation

    def refused_writer(self, hit, worker, careless):
        if hit.payload.get("inline"):
            return careful(self, hit, worker, careless)  # the qualification test still passes
        return {"q1": "Someone did it?", "q1_a1": "someone"}

    monkeypatch.setattr(Answerer, "generation", refused_writer)
    out = _run(capsys, "fast", seed=3)
    assert "(stuck: no worker can take the remaining HITs)" in out
    open_hits = Campaign.objects.get(slug="demo-news").batch.hits.filter(state="open", kind="regular", task_type__slug="generation")
    n = open_hits.count()
    assert n > 0 and f"left: {n} open regular generation HITs, " in out
    refused = [line for line in out.splitlines() if line.startswith("left: HIT ")]
    assert refused and all(" (generation) refused " in line for line in refused)
    assert all("Start the question with a question word" in line for line in refused)
    assert int(refused[0].split()[2]) in set(open_hits.values_list("pk", flat=True))


def test_threads_finish_the_demo_campaign_concurrently_and_reconcile(capsys, eager_celery):
    """``--threads 2`` on PostgreSQL: the crowd works in two threads with their own connections; the campaign finishes
    with the protocol's numbers (no HIT over-filled, two or three judgments per pair, no worker twice on a HIT) and the
    money reconciles."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("threads need PostgreSQL")
    hits_services._last_expiry = float("-inf")
    call_command("load_demo", password="demo-pass-123")
    call_command("simulate_crowd", campaign="demo-news", workers=8, seed=3, mode="fast", approve=True, threads=2)
    out = capsys.readouterr().out
    assert "mode: fast (the pages' services in-process, no HTML, 2 threads at once)" in out
    assert "campaign finished" in out and "the ledger reconciles with the work" in out
    campaign = Campaign.objects.get(slug="demo-news")
    per_pair = PresenceJudgment.objects.filter(summary__system__campaign=campaign).values("unit", "summary").annotate(n=Count("pk"))
    assert per_pair and {row["n"] for row in per_pair} <= {2, 3}
    taken = Assignment.objects.filter(hit__batch=campaign.batch).exclude(state__in=["returned", "expired"])
    assert not taken.values("hit", "worker").annotate(n=Count("pk")).filter(n__gt=1).exists()
    from hits.models import HIT
    from django.db.models import F

    assert not HIT.objects.filter(batch=campaign.batch, n_taken__gt=F("max_assignments")).exists()
    # Each thread's connection is closed at the end: only this test's own connection is left to the database.
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")
        assert cursor.fetchone()[0] == 0


@pytest.mark.parametrize("options, error", [
    ({"threads": 0}, "--threads must be at least 1"),
    ({"threads": 2, "mode": "html"}, "--threads is for --mode fast"),
])
def test_bad_thread_options_are_refused(options, error):
    from django.core.management.base import CommandError

    call_command("load_demo", password="demo-pass-123")
    with pytest.raises(CommandError, match=error):
        call_command("simulate_crowd", campaign="demo-news", workers=2, **{"mode": "fast", **options})


def test_threads_on_sqlite_are_refused_clearly():
    from django.core.management.base import CommandError
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("the embedded default's refusal")
    call_command("load_demo", password="demo-pass-123")
    with pytest.raises(CommandError, match="--threads needs PostgreSQL"):
        call_command("simulate_crowd", campaign="demo-news", workers=2, mode="fast", threads=2)
