"""Settings come from the environment, with safe behaviour when DEBUG is off."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.conftest import REPO

PROBE = (
    "import json, django; from django.conf import settings; django.setup(); "
    "print(json.dumps({'engine': settings.DATABASES['default']['ENGINE'], 'name': str(settings.DATABASES['default']['NAME']),"
    " 'eager': settings.CELERY_TASK_ALWAYS_EAGER, 'broker': settings.CELERY_BROKER_URL, 'debug': settings.DEBUG,"
    " 'ssl': getattr(settings, 'SECURE_SSL_REDIRECT', False), 'hosts': settings.ALLOWED_HOSTS,"
    " 'public': settings.PUBLIC_BASE_URL, 'models': str(settings.MODELS_DIR)}))"
)


def _settings(tmp_path, **env):
    base = {"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=base | env, capture_output=True, text=True, timeout=120
    )
    return result


def test_embedded_default_is_sqlite_and_eager_tasks(tmp_path):
    result = _settings(tmp_path, DEBUG="1")
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["engine"] == "django.db.backends.sqlite3" and values["name"].startswith(str(tmp_path))
    assert values["eager"] is True and values["debug"] is True
    assert values["models"] == str(tmp_path / "models")


def test_database_and_broker_urls_switch_to_postgres_and_redis(tmp_path):
    result = _settings(
        tmp_path,
        SECRET_KEY="k" * 50,
        DATABASE_URL="postgres://u:p@db.example:5432/qa",
        CELERY_BROKER_URL="redis://127.0.0.1:6399/3",
        ALLOWED_HOSTS="qa.example.org",
        PUBLIC_BASE_URL="https://qa.example.org/",
    )
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout)
    assert values["engine"] == "django.db.backends.postgresql" and values["name"] == "qa"
    assert values["eager"] is False and values["broker"] == "redis://127.0.0.1:6399/3"
    assert values["debug"] is False and values["ssl"] is True and values["hosts"] == ["qa.example.org"]
    assert values["public"] == "https://qa.example.org"


def test_production_without_secret_key_refuses_to_start(tmp_path):
    result = _settings(tmp_path, DATABASE_URL="postgres://u:p@db.example:5432/qa")
    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_embedded_default_keeps_a_generated_secret_key_under_data_dir(tmp_path):
    """The README's manage.py commands work as written (no DEBUG=1): one key, generated once, owner-only."""
    first = _settings(tmp_path)
    assert first.returncode == 0, first.stderr
    key_file = tmp_path / "secret_key"
    key = key_file.read_text().strip()
    assert len(key) >= 50 and oct(key_file.stat().st_mode & 0o777) == "0o600"
    probe = "import django; from django.conf import settings; django.setup(); print(settings.SECRET_KEY)"
    again = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                           env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "config.settings", "DATA_DIR": str(tmp_path)})
    assert again.stdout.strip() == key
    command = subprocess.run([sys.executable, "manage.py", "import_campaign", "--help"], cwd=REPO, capture_output=True,
                             text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path)})
    assert command.returncode == 0 and "--references" in command.stdout, command.stderr


def test_bad_boolean_is_a_clear_error(tmp_path):
    result = _settings(tmp_path, DEBUG="maybe")
    assert result.returncode != 0 and "DEBUG='maybe' is not a boolean" in result.stderr


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    env = {
        "PATH": "/usr/bin:/bin",
        "DATA_DIR": str(tmp_path),
        "SECRET_KEY": "x9!" + "production-like-secret-key-with-enough-entropy-0123456789",
        "ALLOWED_HOSTS": "qa.example.org",
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_debug_off_refuses_a_short_secret_key(tmp_path):
    result = _settings(tmp_path, SECRET_KEY="changeme")
    assert result.returncode != 0
    assert "SECRET_KEY is 8 characters long; with DEBUG off it needs at least 50" in result.stderr
    # With DEBUG on (a developer's machine), a short key is the developer's business.
    assert _settings(tmp_path, SECRET_KEY="changeme", DEBUG="1").returncode == 0


def test_a_float_setting_that_is_not_a_number_is_named_in_the_error(monkeypatch):
    import pytest

    from django.core.exceptions import ImproperlyConfigured

    from config.settings_table import env_float

    monkeypatch.setenv("FOLLOWUP_MAX_WAIT", "abc")
    with pytest.raises(ImproperlyConfigured, match="FOLLOWUP_MAX_WAIT='abc' is not a number"):
        env_float("FOLLOWUP_MAX_WAIT", 30.0)
    monkeypatch.setenv("FOLLOWUP_MAX_WAIT", "12.5")
    assert env_float("FOLLOWUP_MAX_WAIT", 30.0) == 12.5
