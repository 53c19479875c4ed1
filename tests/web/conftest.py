"""Fixtures of the researcher-page tests: a researcher, files to upload, campaigns in known states."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import transaction
from django.test import Client

from annotation.models import Campaign, ContentUnit, Example, Predicate
from annotation.services.roles import make_researcher
from annotation.services.campaign_import import import_campaign
from annotation.services.pipeline import launch_campaign, start_presence_if_settled

REFERENCES = (
    b'{"id": "a", "reference": "The mayor opened a new park. Children played there all day."}\n'
    b'{"id": "b", "reference": "Storms closed the airport on Monday."}\n'
)
SUMMARIES = (
    b'{"id": "a", "system": "s1", "summary": "A park opened."}\n'
    b'{"id": "b", "system": "s1", "summary": "The airport closed."}\n'
    b'{"id": "a", "system": "s2", "summary": "The mayor opened a park."}\n'
    b'{"id": "b", "system": "s2", "summary": "Storms hit."}\n'
)


@pytest.fixture(autouse=True)
def _isolated_files_and_eager_jobs(settings, tmp_path):
    """Uploads and exports under the test's own folder; Celery in-process even when a broker is configured."""
    from config.celery import app

    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORTS_DIR = tmp_path / "data" / "exports"
    was_eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = was_eager


@pytest.fixture
def rita(django_user_model):
    user = django_user_model.objects.create_user(username="rita", password="a-long-test-password")
    make_researcher(user)
    return user


@pytest.fixture
def client_rita(rita):
    client = Client()
    client.force_login(rita)
    return client


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


@pytest.fixture
def draft(tmp_path, rita):
    refs = tmp_path / "refs.jsonl"
    sums = tmp_path / "sums.jsonl"
    refs.write_bytes(REFERENCES)
    sums.write_bytes(SUMMARIES)
    return import_campaign(name="Draft study", owner=rita, references=refs, summaries=sums).campaign


def settle_with_kept_pairs(campaign: Campaign, pairs_per_predicate: int = 2) -> int:
    """Launch, then give every predicate kept QA pairs (as two verifiers would) and start presence everywhere."""
    launch_campaign(campaign)
    campaign.refresh_from_db()
    for example in Example.objects.filter(campaign=campaign):
        index = 0
        for predicate in Predicate.objects.filter(example=example).select_related("sentence"):
            for k in range(pairs_per_predicate):
                # Distinct answer spans: pairs sharing one would be held for the duplicate review.
                words = predicate.sentence.text.split()
                answer = words[k % len(words)]
                ContentUnit.objects.create(
                    example=example, predicate=predicate, kind="qa", index=index, question=f"Who {predicate.text} something {k}?",
                    answers=[answer], text=f"Who {predicate.text} something {k}? {answer}", state="kept",
                )
                index += 1
        Predicate.objects.filter(example=example).update(settled=True)
        with transaction.atomic():  # as in the submission that would settle the last predicate
            start_presence_if_settled(campaign, example.pk)
    return Predicate.objects.filter(example__campaign=campaign).count()
