"""The documentation site works as written (issue 42).

- Its commands run on the embedded default without DEBUG=1: every ``manage.py`` command it names starts, and
  every block marked ``<!-- runnable -->`` runs to the end (what tests/test_readme.py did for the README).
- It names every researcher page.
- The generated reference pages list every command, every setting ``config/settings.py`` reads and every API
  route, and the settings are read only through the table.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"
PAGES = {path.relative_to(DOCS).as_posix(): path.read_text() for path in sorted(DOCS.rglob("*.md"))}
ALL = "\n".join(PAGES.values())
RUNNABLE = re.compile(r"<!-- runnable -->\s*\n```[a-z]*\n(.*?)\n```", re.S)


def embedded_default(tmp_path) -> dict:
    """A fresh clone: no SECRET_KEY, no DEBUG, no DATABASE_URL; an empty data folder."""
    return {"PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path / "var")}


def run_manage(env, *args, timeout=600):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_every_manage_py_command_of_the_docs_starts_on_the_embedded_default(tmp_path):
    commands = sorted(set(re.findall(r"manage\.py ([a-z_]+)", ALL)))
    assert len(commands) >= 15
    env = embedded_default(tmp_path)
    migrate = run_manage(env, "migrate", "--noinput")
    assert migrate.returncode == 0, migrate.stderr[-2000:]
    assert "SECRET_KEY is not set" not in migrate.stderr
    for command in commands:
        result = run_manage(env, command, "--help", timeout=300)
        assert result.returncode == 0, f"manage.py {command}: {result.stderr[-1500:]}"


def runnable_blocks():
    return [(page, block) for page, text in PAGES.items() for block in RUNNABLE.findall(text)]


def test_there_are_runnable_blocks_and_each_marker_is_followed_by_one():
    blocks = runnable_blocks()
    assert blocks, "no <!-- runnable --> block in docs/"
    assert ALL.count("<!-- runnable -->") == len(blocks), "a runnable marker not followed by a code block"


@pytest.mark.parametrize("page,block", runnable_blocks(), ids=lambda value: value if value.endswith(".md") else "")
def test_runnable_blocks_run_as_written_without_debug(tmp_path, page, block):
    """Each line, in order, from the checkout, on a fresh embedded default (``.venv/bin/python`` is this
    interpreter; ``var/`` is the test's own data folder)."""
    env = embedded_default(tmp_path)
    outputs = []
    for line in (line.strip() for line in block.splitlines()):
        if not line or line.startswith("#"):
            continue
        command = line.replace(".venv/bin/python", sys.executable).replace(" var/", f" {tmp_path}/var/")
        result = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, f"{page}: {line}\n{result.stdout[-1500:]}\n{result.stderr[-2000:]}"
        assert "DisallowedHost" not in result.stderr, f"{page}: {line}"
        outputs.append((line, result.stdout))
    # Issue 40: the in-process server of simulate_crowd once refused its own loopback address with DEBUG off,
    # leaving the campaign Running with nobody working.
    for line, stdout in outputs:
        if "simulate_crowd" in line:
            submitted = re.search(r"generation: (\d+) assignments submitted", stdout)
            assert submitted and int(submitted.group(1)) > 0, stdout
        if "export_campaign" in line:
            out = line.split("--out", 1)[1].split()[0].replace("var/", f"{tmp_path}/var/")
            assert any(p.is_file() for p in Path(out).rglob("*")), out


def test_the_docs_name_every_researcher_page():
    from annotation.web import urls

    pages = [p.pattern._route for p in urls.urlpatterns if p.pattern._route.startswith("<slug:slug>/")]
    # Pages a researcher opens (actions posted from them are not pages of their own).
    actions = ("control/", "action/", "add/", "remove/", "redetect/", "status/", "recompute/", "export/", "correct/", "assignments/<int:pk>/", "bulk/", "retry/")
    listed = [p for p in pages if not p.endswith(actions) or p == "<slug:slug>/systems/add/"]
    missing = [p for p in listed if "/campaigns/" + p.replace("<slug:slug>", "SLUG").replace("<int:pk>", "ID").replace("<slug:task>", "TASK") not in ALL]
    assert not missing, missing


def test_install_page_documents_port_and_judges():
    install = PAGES["getting-started/install.md"]
    assert "PORT=" in install and "make judges" in install and "make demo" in install and "make test" in install


def test_every_page_is_in_the_navigation_and_generated_pages_are_not_files():
    from annotation.management.commands.docs_reference import PAGES as GENERATED

    nav = (REPO / "mkdocs.yml").read_text()
    named = set(re.findall(r":\s+([\w/-]+\.md)\s*$", nav, re.M))
    generated = {"reference/" + ("api-routes.md" if name == "api.md" else name) for name in GENERATED}
    assert set(PAGES) | generated == named, (set(PAGES) | generated) ^ named
    assert not generated & set(PAGES), "a generated reference page is committed as a file"


# --- the generated reference pages against the code ---------------------------------------------------------


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    env = embedded_default(out) | {"DEBUG": "1"}
    result = run_manage(env, "docs_reference", str(out / "pages"))
    assert result.returncode == 0, result.stderr[-2000:]
    return {path.name: path.read_text() for path in (out / "pages").iterdir()}


def settings_read_in_settings_py() -> set[str]:
    tree = ast.parse((REPO / "config" / "settings.py").read_text())
    return {node.args[0].value for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "read" and node.args
            and isinstance(node.args[0], ast.Constant)}


def test_settings_py_reads_the_environment_only_through_the_table():
    source = (REPO / "config" / "settings.py").read_text()
    assert "os.environ" not in source and "getenv" not in source
    assert not re.search(r"\benv_(bool|int|list|float|str|path)\(", source), "a read around the table"
    from config.settings_table import BY_NAME

    read = settings_read_in_settings_py()
    assert len(read) >= 80
    assert read == set(BY_NAME), read ^ set(BY_NAME)


def test_the_settings_page_lists_every_setting_with_its_default(reference):
    from config.settings_table import SETTINGS

    page = reference["settings.md"]
    for setting in SETTINGS:
        row = next((line for line in page.splitlines() if line.startswith(f'| <a id="{setting.name.lower()}"></a>`{setting.name}` |')), None)
        assert row is not None, setting.name
        assert f"| `{setting.default_text}` |" in row, (setting.name, row)
    assert '| <a id="submit_rate_limit"></a>`SUBMIT_RATE_LIMIT` | text | `120/60` |' in page


def test_the_table_defaults_are_the_settings_defaults(tmp_path):
    """With nothing set, each setting has its table default (what the reference prints is what runs)."""
    from config.settings_table import SETTINGS

    names = [s.name for s in SETTINGS if not s.shown and s.name not in ("DEBUG",) and not s.name.startswith(
        ("SECURE_", "SESSION_COOKIE", "CSRF_COOKIE", "REDIS_URL", "CACHE_URL", "DATABASE_URL", "DB_", "COUNT_QUERIES", "LOG_LEVEL", "MTURK_EXTRA", "CELERY_"))]
    probe = ("import json, django; from django.conf import settings; django.setup(); "
             f"print(json.dumps({{n: str(getattr(settings, n)) for n in {names!r}}}))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120,
                            env=embedded_default(tmp_path) | {"DJANGO_SETTINGS_MODULE": "config.settings"})
    assert result.returncode == 0, result.stderr[-1500:]
    values = json.loads(result.stdout)
    by_name = {s.name: s for s in SETTINGS}
    for name in names:
        expected = by_name[name].default
        expected = str(expected) if by_name[name].kind != "list" else str(list(expected))
        assert values[name] == expected, (name, values[name], expected)


def test_the_commands_page_lists_every_command_with_its_options(reference):
    from django.core.management import get_commands, load_command_class

    page = reference["commands.md"]
    for name, app in get_commands().items():
        if app.split(".")[0] in ("annotation", "hits"):
            assert f"\n### {name}\n" in page, name
            parser = load_command_class(app, name).create_parser("manage.py", name)
            for action in parser._actions:
                for option in action.option_strings:
                    if option.startswith("--") and action.dest not in ("help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color", "skip_checks"):
                        assert f"`{option}`" in page.split(f"\n### {name}\n", 1)[1].split("\n### ", 1)[0], (name, option)
        else:
            assert f"| `{name}` |" in page, name


def test_the_api_page_lists_every_route(reference):
    from django.urls import get_resolver

    page = reference["api.md"]

    def walk(patterns, prefix=""):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, route)
            else:
                yield route

    shapes = re.sub(r"\{[^}]*\}", "{}", page)
    routes = [r for r in walk(get_resolver().url_patterns) if r.startswith("api/")]
    assert len(routes) >= 20
    for route in routes:
        plain = re.sub(r"\^|\$|\\\.\(\?P<format>\[a-z0-9\]\+\)/\?|\(\?P<format>[^)]*\)", "", route)
        plain = re.sub(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>[^)]*\)", lambda m: "{" + (m.group(1) or m.group(2)) + "}", plain)
        if "format" in route:  # the format-suffix variants (.json) of the routes above
            continue
        assert re.sub(r"\{[^}]*\}", "{}", f"`/{plain}`") in shapes, (route, plain)


def test_the_campaign_settings_page_lists_every_field_with_its_help(reference):
    from annotation.models import Campaign

    page = reference["campaign-settings.md"]
    for field in Campaign._meta.get_fields():
        if getattr(field, "concrete", False) and not field.auto_created and field.editable:
            assert f"| `{field.name}` |" in page, field.name
            if field.help_text:
                assert " ".join(str(field.help_text).split())[:60] in page, field.name
