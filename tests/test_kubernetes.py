"""deploy/k8s: every manifest is valid against Kubernetes' own schemas (kubernetes-validate ships them: checked with
the network refused), names the parts the platform needs, and runs commands and probes that exist."""

from __future__ import annotations

import importlib
import shlex
import socket

import pytest
import yaml

from config.queues import QUEUES
from tests.conftest import REPO

K8S = REPO / "deploy" / "k8s"
KUBERNETES_VERSION = "1.30"  # the oldest release the manifests are meant for (every field they use is older)


def documents(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def resources() -> dict[tuple[str, str], dict]:
    found = {}
    for name in [*yaml.safe_load((K8S / "kustomization.yaml").read_text())["resources"], "secret.example.yaml"]:
        for doc in documents(name):
            found[(doc["kind"], doc["metadata"]["name"])] = doc
    return found


def container(resource: dict) -> dict:
    (only,) = resource["spec"]["template"]["spec"]["containers"]
    return only


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test: the validation must run offline."""

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access during an offline check: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_every_manifest_is_valid_against_the_kubernetes_schemas_offline(no_network):
    import kubernetes_validate

    checked = 0
    for resource in resources().values():
        # Strict: a misspelt or misplaced field (one Kubernetes would silently ignore) is an error too.
        kubernetes_validate.validate(resource, KUBERNETES_VERSION, strict=True)
        checked += 1
    assert checked == len(resources()) == 9


def test_the_validator_refuses_a_broken_manifest(no_network):
    """The check above can fail: a misplaced probe and a string replica count are refused."""
    import kubernetes_validate
    from kubernetes_validate.utils import ValidationError

    web = resources()[("Deployment", "qapyramid-web")]
    broken = yaml.safe_load(yaml.safe_dump(web))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES_VERSION, strict=True)
    misplaced = yaml.safe_load(yaml.safe_dump(web))
    misplaced["spec"]["template"]["spec"]["readinessProbe"] = container(misplaced).pop("readinessProbe")
    with pytest.raises(ValidationError):
        kubernetes_validate.validate(misplaced, KUBERNETES_VERSION, strict=True)


def test_the_stack_has_web_a_worker_per_queue_beat_and_the_migrations_job():
    found = resources()
    web = found[("Deployment", "qapyramid-web")]
    assert shlex.split(" ".join(container(web)["command"]))[:2] == ["gunicorn", "config.wsgi:application"]
    module, attribute = container(web)["command"][1].split(":")
    assert hasattr(importlib.import_module(module), attribute)
    service = found[("Service", "qapyramid-web")]
    assert service["spec"]["selector"] == web["spec"]["selector"]["matchLabels"]
    for queue in QUEUES:
        worker = found[("Deployment", f"qapyramid-worker-{queue}")]
        command = container(worker)["command"]
        assert command[:4] == ["celery", "-A", "config", "worker"]
        assert command[command.index("-Q") + 1] == queue
    beat = found[("Deployment", "qapyramid-beat")]
    assert container(beat)["command"][:4] == ["celery", "-A", "config", "beat"]
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"
    migrate = found[("Job", "qapyramid-migrate")]
    assert container(migrate)["command"] == ["python", "manage.py", "migrate", "--noinput"]
    from config.celery import app

    assert app.main == "qapyramid"


def test_settings_come_from_the_secret_and_the_bucket_from_the_config_map():
    found = resources()
    config = found[("ConfigMap", "qapyramid")]["data"]
    secret = found[("Secret", "qapyramid")]["stringData"]
    assert config["STORAGE_BUCKET"] and config["DEBUG"] == "0"
    assert {"SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "AWS_SECRET_ACCESS_KEY"} <= set(secret)
    assert not {"SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY"} & set(config)  # secrets never in the ConfigMap
    from config.settings_table import SETTINGS

    known = {s.name for s in SETTINGS} | {"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                                           "AWS_SECRET_ACCESS_KEY"}
    assert set(config) | set(secret) <= known, (set(config) | set(secret)) - known
    for (kind, name), resource in found.items():
        if kind in ("Deployment", "Job"):
            sources = {next(iter(s.values()))["name"] for s in container(resource)["envFrom"]}
            assert sources == {"qapyramid"} and len(container(resource)["envFrom"]) == 2, name


@pytest.mark.django_db
def test_web_probes_use_routes_that_answer_without_an_allowed_host_or_https(client, settings):
    """The kubelet asks the pod's address over HTTP: the probes' paths answer it on a production configuration."""
    probes = container(resources()[("Deployment", "qapyramid-web")])
    assert probes["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert probes["readinessProbe"]["httpGet"]["path"] == "/readyz"
    settings.SECURE_SSL_REDIRECT = True
    settings.ALLOWED_HOSTS = ["qapyramid.example.org"]
    for path, body in (("/healthz", {"status": "ok"}), ("/readyz", {"status": "ready"})):
        response = client.get(path, HTTP_HOST="10.1.2.3:8000")
        assert response.status_code == 200 and response.json() == body, path
    assert client.get("/", HTTP_HOST="10.1.2.3:8000").status_code == 400  # everything else still checks the host


@pytest.mark.django_db
def test_readiness_fails_while_the_database_does_not_answer(client, monkeypatch):
    from django.db import OperationalError, connection

    def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", down)
    response = client.get("/readyz")
    assert response.status_code == 503 and response.json() == {"status": "unavailable", "database": "connection refused"}
    assert client.get("/healthz").status_code == 200  # alive all the same: restarting the pod would not help
