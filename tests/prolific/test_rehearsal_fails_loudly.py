"""Issue 38, item 12: ``simulate_crowd --backend prolific`` with a token the stand-in refuses ends with Prolific's
error and a non-zero exit (it printed "stuck" and exited 0), before anything is launched."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Campaign
from tests.prolific.test_end_to_end import _campaign


@pytest.mark.django_db(transaction=True)
def test_a_token_prolific_refuses_ends_the_command_with_prolifics_error(prolific_standin, tmp_path, settings, eager_celery):
    settings.PROLIFIC_API_TOKEN = "not-the-standins-token"
    campaign = _campaign(tmp_path / "c")
    with pytest.raises(CommandError, match="Prolific refused the rehearsal's credentials .*401.*Invalid token"):
        call_command("simulate_crowd", campaign=campaign.slug, backend="prolific", workers=2, max_seconds=60)
    campaign.refresh_from_db()
    assert campaign.state == Campaign.State.DRAFT
