"""Settings with the paper's values and a cost preview, predicate editing, launch and the live progress figures."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import Campaign, Predicate, ReferenceSentence
from annotation.services.costs import campaign_cost_preview

pytestmark = pytest.mark.django_db


def settings_data(campaign, **changes):
    from annotation.web.forms import CampaignSettingsForm

    form = CampaignSettingsForm(instance=campaign)
    data = {name: form[name].value() for name in form.fields}
    data.update(changes)
    return {k: ("" if v is None else v) for k, v in data.items()}


def test_settings_show_paper_values_and_the_cost_preview(client_rita, draft):
    page = client_rita.get(reverse("campaign-settings", args=[draft.slug]))
    html = page.content.decode()
    assert page.status_code == 200
    for paper in ("paper: 0.32", "paper: 0.17", "paper: 0.20", "paper: 3", "paper: 6.0", "paper: Tie counts as not present"):
        assert paper in html
    total = campaign_cost_preview(draft).total
    assert f"<strong>${total}</strong>" in html and total > 0


def test_save_preview_and_refuse_bad_values(client_rita, draft):
    url = reverse("campaign-settings", args=[draft.slug])
    # Preview: the total for the typed values, nothing saved.
    before = campaign_cost_preview(draft).total
    response = client_rita.post(url, settings_data(draft, reward_presence="0.40", action="preview"))
    assert response.status_code == 200
    assert response.context["cost"].total > before
    draft.refresh_from_db()
    assert draft.reward_presence == Decimal("0.20")
    # Save: stored, and the page shows the new total.
    response = client_rita.post(url, settings_data(draft, reward_presence="0.40", backend="mturk-sandbox", action="save"))
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.reward_presence == Decimal("0.40") and draft.backend == "mturk-sandbox"
    assert campaign_cost_preview(draft).fees > 0
    # A threshold above 1 and a zero reward are refused; the typed values stay in the form.
    response = client_rita.post(url, settings_data(draft, presence_accuracy_threshold="1.5", reward_generation="0", action="save"))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'value="1.5"' in html and "Nothing was saved" in html
    draft.refresh_from_db()
    assert draft.presence_accuracy_threshold == 0.9 and draft.reward_generation == Decimal("0.32")


def test_settings_are_read_only_after_launch(client_rita, draft):
    from annotation.services.pipeline import launch_campaign

    launch_campaign(draft)
    url = reverse("campaign-settings", args=[draft.slug])
    assert "shown read-only" in client_rita.get(url).content.decode()
    response = client_rita.post(url, settings_data(draft, reward_presence="0.99"), follow=True)
    assert "only change before launch" in response.content.decode()
    draft.refresh_from_db()
    assert draft.reward_presence == Decimal("0.20")


def test_add_predicate_by_selection_or_text_and_remove(client_rita, draft):
    sentence = ReferenceSentence.objects.get(example__campaign=draft, text="Children played there all day.")
    url = reverse("campaign-predicate-add", args=[draft.slug])
    # A selection gives the start offset: the second "a" word would be ambiguous without it.
    response = client_rita.post(url, {"sentence": sentence.pk, "span": "day", "start": str(sentence.text.index("day"))})
    assert response.status_code == 302
    added = Predicate.objects.get(sentence=sentence, text="day")
    assert (added.start, added.end, added.origin) == (sentence.text.index("day"), sentence.text.index("day") + 3, "researcher")
    # Typed text without an offset: the first occurrence.
    client_rita.post(url, {"sentence": sentence.pk, "span": "Children"})
    assert Predicate.objects.filter(sentence=sentence, text="Children", start=0).exists()
    # Not in the sentence, or already there: an error, nothing added.
    n = Predicate.objects.count()
    response = client_rita.post(url, {"sentence": sentence.pk, "span": "elephants"}, follow=True)
    assert "is not in the sentence" in response.content.decode()
    response = client_rita.post(url, {"sentence": sentence.pk, "span": "day", "start": str(sentence.text.index("day"))}, follow=True)
    assert "already a predicate" in response.content.decode()
    assert Predicate.objects.count() == n
    # Remove.
    client_rita.post(reverse("campaign-predicate-remove", args=[draft.slug]), {"predicate": added.pk})
    assert not Predicate.objects.filter(pk=added.pk).exists()
    page = client_rita.get(reverse("campaign-predicates", args=[draft.slug])).content.decode()
    assert "Remove predicate Children" in page and "Remove predicate day" not in page


def test_predicates_cannot_change_after_launch_nor_in_someone_elses_campaign(client_rita, draft, django_user_model):
    from annotation.services.pipeline import launch_campaign

    sentence = ReferenceSentence.objects.filter(example__campaign=draft).first()
    stranger = django_user_model.objects.create_user(username="sam", password="a-long-test-password", is_staff=False)
    client = Client()
    client.force_login(stranger)
    assert client.post(reverse("campaign-predicate-add", args=[draft.slug]), {"sentence": sentence.pk, "span": "x"}).status_code == 404
    launch_campaign(draft)
    n = Predicate.objects.count()
    response = client_rita.post(reverse("campaign-predicate-add", args=[draft.slug]), {"sentence": sentence.pk, "span": sentence.text.split()[0]}, follow=True)
    assert "predicates can only change before launch" in response.content.decode()
    assert Predicate.objects.count() == n


def test_launch_pause_resume_cancel_and_the_polled_progress(client_rita, draft):
    control = reverse("campaign-control", args=[draft.slug])
    status_url = reverse("campaign-progress-status", args=[draft.slug])
    assert client_rita.get(status_url).json()["stages"]["generation"] is None
    client_rita.post(control, {"action": "launch"})
    data = client_rita.get(status_url).json()
    n_predicates = Predicate.objects.filter(example__campaign=draft).count()
    assert data["state"] == "running" and data["stages"]["generation"]["total"] == n_predicates
    assert data["stages"]["generation"]["waiting"] == n_predicates and data["cost_so_far"] == "0.00"
    client_rita.post(control, {"action": "pause"})
    assert client_rita.get(status_url).json()["state_label"] == "Paused"
    client_rita.post(control, {"action": "resume"})
    client_rita.post(control, {"action": "cancel"})
    assert Campaign.objects.get(pk=draft.pk).state == "cancelled"
    page = client_rita.get(reverse("campaign-progress", args=[draft.slug])).content.decode()
    assert 'data-poll-url="/campaigns/draft-study/progress/status/"' in page


def test_find_predicates_again_keeps_the_researchers_own(client_rita, draft):
    sentence = ReferenceSentence.objects.get(example__campaign=draft, text="Children played there all day.")
    client_rita.post(reverse("campaign-predicate-add", args=[draft.slug]), {"sentence": sentence.pk, "span": "day"})
    automatic = set(Predicate.objects.filter(example__campaign=draft, origin="auto").values_list("sentence_id", "start", "end"))
    Predicate.objects.filter(example__campaign=draft, origin="auto").delete()
    response = client_rita.post(reverse("campaign-predicates-redetect", args=[draft.slug]), follow=True)
    assert "your own edits were kept" in response.content.decode()
    assert set(Predicate.objects.filter(example__campaign=draft, origin="auto").values_list("sentence_id", "start", "end")) == automatic
    assert Predicate.objects.filter(sentence=sentence, text="day", origin="researcher").exists()


def test_invalid_values_leave_the_cost_preview_on_the_saved_settings(client_rita, draft):
    saved = campaign_cost_preview(draft).total
    response = client_rita.post(
        reverse("campaign-settings", args=[draft.slug]),
        settings_data(draft, reward_presence="0.90", presence_accuracy_threshold="7", action="preview"),
    )
    assert response.status_code == 400 and response.context["cost"].total == saved
