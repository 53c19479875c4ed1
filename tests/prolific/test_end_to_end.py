"""A whole campaign on the Prolific stand-in (issue 31, "How it is checked"): ``simulate_crowd --backend prolific``
publishes it, simulated participants pass or fail its screening test, work in sessions on the platform's pages,
one returns mid-session, one is timed out, one opens the study URL with forged ids; the sync, the researcher's
review (one session rejected with a category) and the bonuses follow.  Then ``prolific_reconcile`` finds no
difference, the ledger's total is what the stand-in paid to the cent, and the forged work counts nowhere."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from annotation.services.campaign_import import import_campaign
from annotation.services.qualification_tests import define_qualifications
from hits.models import LedgerEntry, Worker
from hits.prolific.models import ProlificBonus, ProlificSession, ProlificStudy
from tests.conftest import DEMO_DIR

ROWS = [
    ("e1", "The mayor opened a new park on Monday .", "A park opened .", ["The mayor opened a park", "on Monday"]),
    ("e2", "Storms closed the airport for two days .", "The airport closed .", ["Storms closed the airport", "for two days"]),
    ("e3", "The team won the final after extra time .", "The team won .", ["The team won the final", "after extra time"]),
]


def _campaign(folder) -> Campaign:
    """Three examples of one system, presence only, a two-item screening test; sessions of 2 HITs."""
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("".join(f"{r[0]}\n" for r in ROWS))
    (folder / "references.txt").write_text("".join(f"{r[1]}\n" for r in ROWS))
    (folder / "summaries" / "s1.summary").write_text("".join(f"{r[2]}\n" for r in ROWS))
    (folder / "SCUs.txt").write_text("".join("\t".join(r[3]) + "\n" for r in ROWS))
    campaign = import_campaign(name="Rehearsal on Prolific", slug="pro-e2e", folder=folder,
                               campaign_settings={"backend": "prolific"}).campaign
    definition = json.loads((DEMO_DIR / "qualifications.json").read_text(encoding="utf-8"))
    define_qualifications(campaign, {"presence": definition["presence"][:2]})
    Campaign.objects.filter(pk=campaign.pk).update(
        reward_presence=Decimal("0.30"), gold_share=0.0, prolific_hits_per_submission=2,
    )
    campaign.refresh_from_db()
    return campaign


@pytest.fixture
def rehearsal(prolific_standin, tmp_path, settings, eager_celery, capsys):
    settings.SUBMIT_RATE_LIMIT = "100000/60"
    campaign = _campaign(tmp_path / "campaign")
    call_command("simulate_crowd", campaign=campaign.slug, backend="prolific", workers=10, careless=1, accuracy=1.0)
    return campaign, prolific_standin, capsys.readouterr().out


@pytest.mark.django_db(transaction=True)
def test_a_campaign_runs_on_the_prolific_standin_and_its_money_reconciles(rehearsal, capsys):
    campaign, standin, out = rehearsal
    campaign.refresh_from_db()
    batch = campaign.batch
    assert campaign.state == Campaign.State.FINISHED, out
    state = standin.state()
    studies = {s.kind: s for s in ProlificStudy.objects.filter(batch=batch)}
    assert set(studies) == {"main", "screening"}

    # Screening: the careless participant failed the test and Prolific kept them out of the main study.
    screened = ProlificSession.objects.filter(study=studies["screening"]).exclude(state=ProlificSession.State.DISCARDED)
    main = ProlificSession.objects.filter(study=studies["main"]).exclude(state=ProlificSession.State.DISCARDED)
    assert screened.count() == 10
    assert main.count() >= 5 and set(main.values_list("participant_id", flat=True)) < set(screened.values_list("participant_id", flat=True))
    statuses = {s["id"]: s["status"] for s in state["submissions"]}
    # One returned mid-session (after a HIT), one timed out, one rejected with its category, the rest approved;
    # those who arrived when no HIT was left for them returned the study having done nothing, as the page asks.
    by_status: dict[str, list[int]] = {}
    for session_id, done in main.values_list("session_id", "hits_done"):
        by_status.setdefault(statuses[session_id], []).append(done)
    assert set(by_status) == {"APPROVED", "REJECTED", "RETURNED", "TIMED-OUT"}, out
    assert sorted(by_status["RETURNED"])[-1] == 1 and sorted(by_status["RETURNED"])[:-1] == [0] * (len(by_status["RETURNED"]) - 1)
    assert by_status["TIMED-OUT"] == [1] and len(by_status["REJECTED"]) == 1
    assert ProlificSession.objects.get(decision="REJECT").rejection_category == "LOW_EFFORT"
    for line in ("HITs:", "Prolific submissions:", "money, ledger (paid):", "money, Prolific stand-in (paid):"):
        assert line in out

    # Bonuses were created and paid (the HITs beyond each session's first, and returned / timed-out work).
    assert ProlificBonus.objects.filter(batch=batch).exists()
    assert set(ProlificBonus.objects.filter(batch=batch).values_list("state", flat=True)) == {"paid"}
    assert state["totals"]["bonuses"] > 0

    # The forged session (a well-formed PROLIFIC_PID and SESSION_ID Prolific never issued): refused at arrival
    # (Prolific has no such submission), so nothing of it exists here; nothing counted, nothing paid.
    assert re.search(r"forged: [1-9]\d* sessions, 0 HITs", out), out
    real = {s["participant_id"] for s in state["submissions"]}
    assert set(ProlificSession.objects.values_list("participant_id", flat=True)) <= real
    assert not Worker.objects.filter(prolific_pid__isnull=False).exclude(prolific_pid__in=real).exists()
    assert not LedgerEntry.objects.filter(batch=batch).exclude(worker__prolific_pid__in=real).exists()

    # prolific_reconcile: no difference; the ledger's total is what the stand-in paid, rewards + bonuses + fees.
    with pytest.raises(SystemExit) as ended:
        call_command("prolific_reconcile", "--campaign", campaign.slug, "--format", "json")
        raise SystemExit(0)
    result = json.loads(capsys.readouterr().out)
    assert ended.value.code == 0 and result["differences"] == []
    spent = Decimal(state["totals"]["spent"]) / 100
    paid = sum(e.amount for e in LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PAID))
    assert Decimal(result["ledger_total"]) == Decimal(result["market_total"]) == paid == spent
    assert not LedgerEntry.objects.filter(batch=batch, state=LedgerEntry.State.PENDING).exists()
    assert f"money, ledger (paid): rewards ${sum(e.amount for e in LedgerEntry.objects.filter(batch=batch, kind='reward', state='paid')):.2f}" in out


@pytest.mark.django_db
def test_simulating_prolific_needs_the_standin_and_a_prolific_campaign(tmp_path, settings):
    campaign = _campaign(tmp_path / "c")
    settings.PROLIFIC_API_TOKEN = "some-token"
    settings.PROLIFIC_API_URL = "http://127.0.0.1:9"  # nothing listens: not a stand-in (never Prolific itself)
    with pytest.raises(CommandError, match="runs against the Prolific stand-in only"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="prolific")
    Campaign.objects.filter(pk=campaign.pk).update(backend=Campaign.Backend.LOCAL)
    with pytest.raises(CommandError, match="runs on Local workers, not Prolific"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="prolific")


@pytest.mark.django_db(transaction=True)
def test_the_in_process_platform_answers_plain_http_with_debug_off_and_a_redirecting_one_is_named(settings):
    """DEBUG off turns SECURE_SSL_REDIRECT on: the rehearsal's own loopback server still answers over plain HTTP
    (issue 40: the README's commands run without DEBUG=1); a platform given with --url that redirects the study URL
    to HTTPS is named, not simulated as a crowd without work."""
    from annotation.management.simulation.browser import http_request, serve_in_background
    from annotation.management.simulation.prolific import refuse_https_redirect

    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = []
    server, base_url = serve_in_background()
    try:
        status, body = http_request("GET", base_url + "/accounts/login/")
    finally:
        server.shutdown()
        server.server_close()
    assert status == 200 and "csrfmiddlewaretoken" in body
    with pytest.raises(ValueError, match="redirects the study URL to HTTPS"):
        refuse_https_redirect(301, "https://platform.example/prolific/start/")
