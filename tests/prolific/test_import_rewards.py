"""An import onto Prolific is publishable as it stands: ``import_campaign --market prolific`` chooses rewards that
pass Prolific's hourly minimum (and says which, and which flag sets them), refuses a given reward that would not,
and ``--reward-generation`` / ``--reward-verification`` / ``--reward-presence`` set exact rewards on any market."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_token(settings):
    settings.PUBLIC_BASE_URL = "https://studio.example.org"
    settings.PROLIFIC_API_TOKEN = ""


def rewards(slug: str) -> tuple:
    campaign = Campaign.objects.get(slug=slug)
    return campaign.reward_generation, campaign.reward_verification, campaign.reward_presence


def test_an_import_on_prolific_chooses_rewards_that_publish_and_says_so(small_files, capsys):
    refs, sums = small_files
    call_command("import_campaign", name="Pro", references=str(refs), summaries=str(sums), market="prolific")
    out = capsys.readouterr().out
    # The paper's presence reward ($0.20 for 2 minutes, $6.00/h) is raised to the least that passes; the others pass.
    assert rewards("pro") == (Decimal("0.32"), Decimal("0.17"), Decimal("0.27"))
    assert "Rewards on Prolific (a session's reward over its estimated minutes, at least $8.00/h" in out
    assert ("presence: $0.27 per HIT, a session of 6 HITs pays $1.62 for about 12 min = $8.10/h (raised from the "
            "paper's $0.20, $6.00/h, to the least that passes; --reward-presence sets it)") in out
    assert ("generation: $0.32 per HIT, a session of 6 HITs pays $1.92 for about 12 min = $9.60/h (the paper's; "
            "--reward-generation sets it)") in out
    assert ("verification: $0.17 per HIT, a session of 12 HITs pays $2.04 for about 12 min = $10.20/h (the paper's; "
            "--reward-verification sets it)") in out

    # Published as imported: refused by nothing, every study paying at least the minimum per hour.
    call_command("prolific_publish", campaign="pro", dry_run=True, format="json")
    dry = json.loads(capsys.readouterr().out)
    assert [(rate["task_type"], rate["passes"]) for rate in dry["hourly"]] == [
        ("generation", True), ("verification", True), ("presence", True)]
    studies = [r["body"] for r in dry["requests"] if r["path"] == "/api/v1/studies/"]
    assert studies
    for body in studies:
        assert body["reward"] * 60 >= 800 * body["estimated_completion_time"], body["internal_name"]


def test_a_given_reward_below_prolifics_minimum_is_refused_with_the_numbers(small_files, tmp_path):
    refs, sums = small_files
    with pytest.raises(CommandError, match=r"--reward-presence, field 'reward_presence': presence: a session of 6 HIT\(s\) "
                                           r"at \$0.20 pays \$1.20 for 12 min, \$6.00/h, below Prolific's minimum of "
                                           r"\$8.00/h.*at least \$0.27 per HIT"):
        call_command("import_campaign", name="Low", references=str(refs), summaries=str(sums), predicates="none",
                     market="prolific", reward_presence="0.20")
    assert not Campaign.objects.exists()
    # A folder's settings.json: named as the source.
    folder = tmp_path / "folder"
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("a\n")
    (folder / "references.txt").write_text("The mayor opened a park.\n")
    (folder / "summaries" / "s1.summary").write_text("A park opened.\n")
    (folder / "settings.json").write_text('{"backend": "prolific", "reward_verification": 0.1}')
    with pytest.raises(CommandError, match=r"settings.json, field 'reward_verification': verification: a session of 12 "
                                           r"HIT\(s\) at \$0.10 pays \$1.20 for 12 min, \$6.00/h.*at least \$0.14"):
        call_command("import_campaign", name="Folder", folder=str(folder), predicates="none")
    # The flag wins over the file, and a reward that passes is kept as given.
    call_command("import_campaign", name="Folder", folder=str(folder), predicates="none", reward_verification="0.14")
    assert rewards("folder") == (Decimal("0.32"), Decimal("0.14"), Decimal("0.27"))
    assert not Campaign.objects.filter(slug="low").exists()


def test_reward_flags_set_exact_rewards_on_any_market(small_files, tmp_path, capsys):
    refs, sums = small_files
    call_command("import_campaign", name="Local", references=str(refs), summaries=str(sums), predicates="none",
                 reward_generation="1.10", reward_verification="0.05", reward_presence="0.07")
    assert rewards("local") == (Decimal("1.10"), Decimal("0.05"), Decimal("0.07"))
    assert "Rewards on Prolific" not in capsys.readouterr().out  # no minimum off Prolific
    call_command("import_campaign", name="Turk", references=str(refs), summaries=str(sums), predicates="none",
                 market="mturk", reward_presence="0.12")
    assert rewards("turk") == (Decimal("0.32"), Decimal("0.17"), Decimal("0.12"))
    for value, problem in (("0.275", "Ensure that there are no more than 2 decimal places"),
                           ("abc", "value must be a decimal number"),
                           ("0", "greater than or equal to 0.01")):
        with pytest.raises(CommandError, match=f"--reward-presence, field 'reward_presence': '{value}': .*{problem}"):
            call_command("import_campaign", name="Bad", references=str(refs), summaries=str(sums), predicates="none",
                         reward_presence=value)
    assert not Campaign.objects.filter(slug="bad").exists()
    # settings.json: a number is read as the exact decimal it spells.
    folder = tmp_path / "folder"
    (folder / "summaries").mkdir(parents=True)
    (folder / "ids.txt").write_text("a\n")
    (folder / "references.txt").write_text("The mayor opened a park.\n")
    (folder / "summaries" / "s1.summary").write_text("A park opened.\n")
    (folder / "settings.json").write_text('{"reward_presence": 0.35, "reward_generation": "0.40"}')
    call_command("import_campaign", name="Folder", folder=str(folder), predicates="none")
    assert rewards("folder") == (Decimal("0.40"), Decimal("0.17"), Decimal("0.35"))
