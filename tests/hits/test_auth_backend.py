"""The worker-aware authentication backend: one query per request for user and worker, old sessions kept."""

from __future__ import annotations

from unittest import mock

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.signals import user_login_failed
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from config.auth import WorkerModelBackend
from hits.models import Worker
from hits.services import worker_for_user

pytestmark = pytest.mark.django_db


def test_user_and_worker_come_in_one_query(django_user_model):
    user = django_user_model.objects.create_user(username="ann", password="pw-for-tests-123")
    Worker.objects.create(user=user, external_id="ann")
    with CaptureQueriesContext(connection) as queries:
        loaded = WorkerModelBackend().get_user(user.pk)
        worker = worker_for_user(loaded)
    assert worker.external_id == "ann"
    assert len(queries.captured_queries) == 1


def test_a_user_without_worker_gets_one_created(django_user_model):
    user = django_user_model.objects.create_user(username="bob", password="pw-for-tests-123")
    loaded = WorkerModelBackend().get_user(user.pk)
    assert worker_for_user(loaded).user_id == user.pk
    assert Worker.objects.filter(user=user).count() == 1


def test_inactive_user_is_not_loaded(django_user_model):
    user = django_user_model.objects.create_user(username="cid", password="pw-for-tests-123", is_active=False)
    assert WorkerModelBackend().get_user(user.pk) is None


def test_session_from_before_the_backend_still_works(django_user_model):
    user = django_user_model.objects.create_user(username="dee", password="pw-for-tests-123")
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    response = client.get("/work/")
    assert response.status_code == 200
    assert response.wsgi_request.user.pk == user.pk


def test_login_page_logs_in_with_the_worker_backend(django_user_model):
    django_user_model.objects.create_user(username="eve", password="pw-for-tests-123")
    client = Client()
    response = client.post("/accounts/login/", {"username": "eve", "password": "pw-for-tests-123"})
    assert response.status_code == 302
    assert client.session["_auth_user_backend"] == "config.auth.WorkerModelBackend"


@pytest.mark.parametrize("username", ["fay", "nobody"])
def test_a_refused_login_is_checked_once(django_user_model, username):
    django_user_model.objects.create_user(username="fay", password="pw-for-tests-123")
    User = get_user_model()
    failures = []
    user_login_failed.connect(lambda **kw: failures.append(kw), weak=False, dispatch_uid="t-once")
    try:
        with mock.patch.object(User, "check_password", autospec=True, return_value=False) as check, mock.patch.object(
            User, "set_password", autospec=True
        ) as hash_dummy:
            assert authenticate(username=username, password="wrong") is None
        # One password hash in all: the user's check, or the dummy hash that hides a missing user.
        assert check.call_count + hash_dummy.call_count == 1
        assert len(failures) == 1
    finally:
        user_login_failed.disconnect(dispatch_uid="t-once")
