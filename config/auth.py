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
        # Every request runs this: hand-written SQL (hits.sql) spares the ORM's compilation.
        from hits import sql
        from hits.models import Worker

        User = get_user_model()
        try:
            user_id = User._meta.pk.to_python(user_id)
        except Exception:  # noqa: BLE001 - a session naming no valid id is simply anonymous
            return None
        row = sql.fetchone(sql.statement("user-with-worker", lambda: _user_query(User, Worker)), [user_id])
        if row is None:
            return None
        user, worker = sql.instances(row, User, Worker)
        # The LEFT JOIN found no worker: user.worker raises Worker.DoesNotExist as the ORM would.
        if worker.pk is None:
            worker = None
        else:
            sql.attach(worker, user=user)
        User.worker.related.set_cached_value(user, worker)
        return user if self.user_can_authenticate(user) else None


def _user_query(User, Worker) -> str:
    from hits import sql

    return (
        f"SELECT {sql.columns(User, 'u')}, {sql.columns(Worker, 'w')} FROM {sql.table(User)} u "
        f"LEFT JOIN {sql.table(Worker)} w ON w.{sql.quote(Worker._meta.get_field('user').column)} = u.{sql.quote(User._meta.pk.column)} "
        f"WHERE u.{sql.quote(User._meta.pk.column)} = %s"
    )
