"""The documentation site works as written (issue 42).

- Its commands run on the embedded default without DEBUG=1: every ``manage.py`` command it names runs for real in
  a researcher's order, and every block marked ``<!-- runnable -->`` runs to the end (what tests/test_readme.py
  did for the README).
- It names every researcher page.
- The generated reference pages list every command, every setting ``config/settings.py`` reads and every API
  route, and the settings are read only through the table.
"""

from __future__ import annotations

import ast
import json
import re
import socket
import subprocess
import sys
import time
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


# Every manage.py command the documentation names, run for real in the order a researcher would, on one scratch SQLite
# database with DEBUG, SECRET_KEY and DATABASE_URL unset.  One Python process runs them one after another through
# manage.py's own entry point (a process per command would start Django thirty times); the stand-ins are the
# second terminal's processes.  "ok": exits 0; "refused": exits 1 with a one-line error (its data or model is
# absent here), never a traceback.
DRIVER = """
import io, json, sys, traceback, contextlib
import manage
results = []
for argv in json.loads(sys.argv[1]):
    sys.argv = ["manage.py", *argv]
    out, err = io.StringIO(), io.StringIO()
    code, trace = 0, ""
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            manage.main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            code, trace = -1, traceback.format_exc()
    results.append({"argv": argv, "code": code, "out": out.getvalue()[-1500:], "err": err.getvalue()[-1500:], "trace": trace[-3000:]})
print(json.dumps(results))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(port: int, process) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise AssertionError(f"stand-in exited: {process.stderr.read()[-1500:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"stand-in on port {port} never answered")


def test_every_manage_py_command_of_the_docs_runs_on_the_embedded_default(tmp_path):
    demo = REPO / "annotation/demo"
    mturk_port, prolific_port = _free_port(), _free_port()
    env = {
        "PATH": "/usr/bin:/bin", "DATA_DIR": str(tmp_path / "var"), "RITA_PASSWORD": "a-long-password-for-rita",
        # As the MTurk and Prolific guides' stand-in recipes export them.
        "MTURK_ENDPOINT_URL": f"http://127.0.0.1:{mturk_port}", "AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
        "PROLIFIC_API_URL": f"http://127.0.0.1:{prolific_port}", "PROLIFIC_API_TOKEN": "test-token",
        "PROLIFIC_COMPLETION_URL": f"http://127.0.0.1:{prolific_port}/submissions/complete",
    }
    files = ["--references", str(demo / "references.jsonl"), "--summaries", str(demo / "summaries.jsonl")]
    missing = str(tmp_path / "absent")
    steps = [
        (["migrate", "--noinput"], "ok"),
        (["load_demo"], "ok"),
        (["create_researcher", "rita", "--password-from-env", "RITA_PASSWORD"], "ok"),
        (["api_token", "rita"], "ok"),
        (["import_campaign", "--name", "My study", "--owner", "rita", *files, "--predicates", "none", "--slug", "my-study"], "ok"),
        (["import_qualifications", str(demo / "qualifications.json"), "--campaign", "my-study"], "ok"),
        (["invite", "--campaign", "my-study", "--uses", "2", "--expires", "3"], "ok"),
        (["expire_assignments"], "ok"),
        (["worker_report", "--campaign", "demo-news", "--format", "json"], "ok"),
        (["campaign_scores", "--campaign", "demo-news", "--format", "json"], "ok"),
        (["recompute_gold", "--campaign", "demo-news"], "ok"),
        (["calibrate_length_alpha", "--campaign", "demo-news"], "any"),
        (["export_campaign", "--campaign", "demo-news", "--out", str(tmp_path / "export")], "ok"),
        (["compare_judges", "--campaign", "demo-news", "--format", "json"], "any"),
        (["autoscore", "--campaign", "demo-news", "--judge", "trained"], "any"),
        (["train_presence_judge", "--folder", missing, "--out", "mine"], "refused"),
        (["evaluate_presence_judge", "--folder", missing, "--folds", "5", "--format", "json"], "refused"),
        (["evaluate_hybrid", "--folder", missing, "--folds", "5", "--human-share", "0.25"], "refused"),
        (["import_qapyramid_raw", missing, "--campaign", "QAPyramid raw"], "refused"),
        (["replay_presence", "--raw", missing, "--rule", "adaptive", "--format", "json"], "refused"),
        # MTurk, on the stand-in.
        (["import_campaign", "--name", "On MTurk", "--owner", "rita", *files, "--slug", "on-mturk", "--market", "mturk"], "ok"),
        (["mturk_balance", "--campaign", "on-mturk", "--sandbox"], "ok"),
        (["mturk_publish", "--campaign", "on-mturk", "--sandbox", "--dry-run"], "ok"),
        (["mturk_publish", "--campaign", "on-mturk", "--sandbox", "--budget-cap", "50"], "ok"),
        (["mturk_sync", "--campaign", "on-mturk"], "ok"),
        (["mturk_reconcile", "--campaign", "on-mturk"], "any"),
        (["mturk_expire", "--campaign", "on-mturk", "--keep"], "ok"),
        # Prolific, on the stand-in (the Prolific guide's recipe).
        # The recipe starts on a fresh clone, without researchers; here there are some, so --owner is required.
        (["import_campaign", "--name", "Demo on Prolific", "--slug", "demo-prolific", *files, "--market", "prolific", "--owner", "rita"], "ok"),
        (["import_qualifications", "--campaign", "demo-prolific", str(demo / "qualifications.json")], "ok"),
        (["prolific_publish", "--campaign", "demo-prolific", "--dry-run"], "ok"),
        (["prolific_sync", "--campaign", "demo-prolific"], "any"),
        (["prolific_reconcile", "--campaign", "demo-prolific"], "any"),
        (["prolific_release_browser", "no-such-session"], "refused"),
        # The documentation's own generator (make docs runs it).
        (["docs_reference", str(tmp_path / "reference")], "ok"),
    ]
    named = set(re.findall(r"manage\.py ([a-z_]+)", ALL))
    run = {argv[0] for argv, _ in steps} | {"mturk_standin", "prolific_standin", "simulate_crowd"}  # simulate_crowd: below
    assert named <= run, sorted(named - run)
    standins = [
        subprocess.Popen([sys.executable, "manage.py", "mturk_standin", "--port", str(mturk_port), "--time-scale", "3600", "--quiet"],
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
        subprocess.Popen([sys.executable, "manage.py", "prolific_standin", "--port", str(prolific_port), "--quiet"],
                         cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
    ]
    try:
        _wait_for(mturk_port, standins[0])
        _wait_for(prolific_port, standins[1])
        done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([argv for argv, _ in steps])], cwd=REPO,
                              env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=900)
    finally:
        for process in standins:
            process.terminate()
            process.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for (argv, expected), result in zip(steps, results):
        what = f"manage.py {' '.join(argv)}: exit {result['code']}\n{result['trace'] or result['err']}\n{result['out'][-500:]}"
        assert not result["trace"] and "Traceback" not in result["err"], what
        if expected == "ok":
            assert result["code"] == 0, what
        elif expected == "refused":
            assert result["code"] == 1 and result["err"].strip(), what
        else:
            assert result["code"] in (0, 1), what


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


def test_the_protocol_page_is_the_specification_word_for_word():
    """docs/reference/protocol.md restates ../shared/PROTOCOL.md (the specification) below its own heading and
    introduction; when the specification changes, this fails until the page follows it."""
    spec = Path(__file__).resolve().parent.parent.parent / "shared" / "PROTOCOL.md"
    if not spec.exists():
        pytest.skip("the shared specification is not next to this clone")
    page = (Path(__file__).resolve().parent.parent / "docs" / "reference" / "protocol.md").read_text(encoding="utf-8")
    body = spec.read_text(encoding="utf-8").split("\n", 1)[1]  # the specification less its title
    assert page.endswith(body)
