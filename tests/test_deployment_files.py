"""docker-compose.yml and the Dockerfile: parse, name the stack's services, and run commands that exist."""

from __future__ import annotations

import importlib
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO


def _compose():
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def _command(service) -> list[str]:
    command = service["command"]
    words = shlex.split(command) if isinstance(command, str) else list(command)
    if words[:2] == ["sh", "-c"]:
        words = shlex.split(words[2].split("&&")[-1])
    return words


def test_compose_names_the_stack():
    services = _compose()["services"]
    assert {"web", "worker", "beat", "postgres", "redis"} <= set(services)
    for name in ("web", "worker", "beat"):
        env = services[name]["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:" in env["DATABASE_URL"]
        assert env["CELERY_BROKER_URL"].startswith("redis://redis:")
        assert env["DEBUG"] == "0"


def test_web_runs_gunicorn_on_the_projects_wsgi_application():
    words = _command(_compose()["services"]["web"])
    assert words[0] == "gunicorn"
    module, attribute = words[1].split(":")
    assert hasattr(importlib.import_module(module), attribute)
    assert shutil.which("gunicorn", path=str(Path(REPO / ".venv" / "bin"))) or importlib.util.find_spec("gunicorn")
    assert "migrate" in _compose()["services"]["web"]["command"]
    # The number of gunicorn workers comes from WEB_CONCURRENCY (gunicorn's own variable), in both files.
    assert "--workers" not in _compose()["services"]["web"]["command"]
    assert _compose()["services"]["web"]["environment"]["WEB_CONCURRENCY"] == "${WEB_CONCURRENCY:-5}"
    assert "ENV WEB_CONCURRENCY=5" in (REPO / "Dockerfile").read_text()


def test_worker_and_beat_run_the_projects_celery_app():
    services = _compose()["services"]
    for name, sub in (("worker", "worker"), ("beat", "beat")):
        words = _command(services[name])
        assert words[:3] == ["celery", "-A", "config"] and words[3] == sub
    from config.celery import app

    assert app.main == "qapyramid"


def test_compose_runs_one_worker_per_queue():
    """Each queue (config/queues.py) has a worker of its own, none takes two (a batch job never holds a follow-up
    back), and each has the stack's environment."""
    from config.queues import QUEUES

    taken = {}
    for name, service in _compose()["services"].items():
        words = _command(service) if "command" in service else []
        if words[:4] == ["celery", "-A", "config", "worker"]:
            assert "-Q" in words, f"{name}: a worker without -Q takes every queue"
            queues = words[words.index("-Q") + 1].split(",")
            assert len(queues) == 1 and queues[0] not in taken, (name, queues)
            taken[queues[0]] = name
            assert service["environment"]["CELERY_BROKER_URL"].startswith("redis://redis:")
    assert set(taken) == set(QUEUES) and taken["interactive"] == "worker"


def test_dockerfile_installs_requirements_and_serves_the_wsgi_app():
    text = (REPO / "Dockerfile").read_text()
    assert "pip install --no-cache-dir -r requirements.txt" in text
    assert "config.wsgi:application" in text
    assert (REPO / "requirements.txt").exists() and (REPO / "manage.py").exists()


def test_compose_is_https_ready_and_counts_rate_limits_in_redis(tmp_path):
    """Secure cookies and the HTTPS redirect are on unless .env turns them off, and the cache (the rate
    limits' counts) is Redis, shared by every gunicorn process."""
    import json
    import subprocess
    import sys

    for name in ("web", "worker", "beat"):
        env = _compose()["services"][name]["environment"]
        for flag in ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
            assert env[flag] == "${%s:-1}" % flag, (name, flag)
        assert env["CACHE_URL"].startswith("redis://redis:")
    web = _compose()["services"]["web"]["environment"]
    # What the settings make of the compose file's environment (its defaults filled in).
    resolved = {k: str(v) for k, v in web.items() if "${" not in str(v)}
    resolved |= {k: str(v).split(":-", 1)[1].rstrip("}") for k, v in web.items() if ":-" in str(v)}
    resolved |= {"SECRET_KEY": "s" * 60, "DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    probe = (
        "import json, django; from django.conf import settings; django.setup(); print(json.dumps(["
        "settings.CACHES['default']['BACKEND'], settings.CACHES['default']['LOCATION'], settings.SECURE_SSL_REDIRECT,"
        " settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE, settings.SECURE_HSTS_SECONDS]))"
    )
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=resolved | {"DJANGO_SETTINGS_MODULE": "config.settings"}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    backend, location, *secure = json.loads(result.stdout)
    assert backend.endswith("RedisCache") and location == "redis://redis:6379/1"
    assert secure == [True, True, True, 31536000]


def _make_dry_run(target: str) -> str:
    import shutil
    import subprocess

    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -n: print the commands only; -B: as on a fresh machine (no stamp counts as done).
    result = subprocess.run(["make", "-n", "-B", target], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_make_demo_installs_no_torch_and_make_test_installs_everything():
    demo = _make_dry_run("demo")
    assert "requirements.txt" in demo and "torch" not in demo and "requirements-judges.txt" not in demo
    assert "torch" not in (REPO / "requirements.txt").read_text().split("# The neural")[0]
    full = _make_dry_run("test")
    assert "torch==2.13.0" in full and "requirements-judges.txt" in full and "requirements-dev.txt" in full


def test_the_platform_starts_without_torch_and_transformers(tmp_path):
    """What `make demo` installs is enough: settings, URLs, every app module and `manage.py check` load with
    torch and transformers unimportable."""
    import subprocess
    import sys

    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class _Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Block())\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "DATA_DIR": str(tmp_path / "var")}
    script = (
        "import sitecustomize, django, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup();"
        " import importlib, pkgutil, annotation, hits, config.urls;"
        " [importlib.import_module(m.name) for p in (annotation, hits) for m in pkgutil.walk_packages(p.__path__, p.__name__ + '.')"
        "  if '.migrations.' not in m.name];"
        " from django.core.management import call_command; call_command('check'); print('ok')"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and result.stdout.strip().endswith("ok"), result.stderr[-3000:]
