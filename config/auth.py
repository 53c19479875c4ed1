"""Authentication backend that loads a user together with their worker identity.

Every worker page needs both the user and the ``hits.Worker`` behind it;
Django's ``ModelBackend`` loads the user alone, and the first use of
``user.worker`` then costs a second query on every request.  This backend
reads both in one query (a LEFT JOIN on the one-to-one relation; a user
without a worker still raises ``Worker.DoesNotExist`` on ``user.worker``).

Sessions remember the backend that logged them in.  Django's own
``ModelBackend`` stays in ``AUTHENTICATION_BACKENDS`` after this one so
that sessions created before this backend existed stay valid; to keep a
failed login from being checked twice (two password hashes), this backend
ends the chain when it refuses credentials.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied


class WorkerModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None and password is not None:
            # Refused here means refused: the ModelBackend listed after us would only repeat the check.
            raise PermissionDenied
        return user

    def get_user(self, user_id):
        user = get_user_model()._default_manager.select_related("worker").filter(pk=user_id).first()
        return user if user is not None and self.user_can_authenticate(user) else None
