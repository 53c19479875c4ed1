"""Write the documentation's reference pages from the code (``make docs`` runs it through the MkDocs hook).

Commands come from each command's own argument parser, settings from ``config/settings_table.py``, the REST API
from the OpenAPI schema the platform serves at ``/api/schema/``, campaign settings from the model fields.
"""

from __future__ import annotations

import argparse
import re
import textwrap
from pathlib import Path

from django.core.management import get_commands, load_command_class
from django.core.management.base import BaseCommand

from config.settings_table import KIND_TEXT, SETTINGS

# Our own apps' commands are documented in full; Django's and the libraries' are listed with their one-line help.
OWN_APPS = ("annotation", "hits")
HTTP_METHODS = ("get", "post", "put", "patch", "delete")


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_row(action: argparse.Action) -> str:
    names = ", ".join(f"`{name}`" for name in action.option_strings) or f"`{action.dest}`"
    if action.option_strings and action.nargs != 0:
        names += f" `{action.metavar or action.dest.upper()}`"
    default = "" if action.default in (None, argparse.SUPPRESS) or action.nargs == 0 else f"`{action.default}`"
    choices = f" One of: {', '.join(f'`{c}`' for c in action.choices)}." if action.choices else ""
    required = " Required." if getattr(action, "required", False) and action.option_strings else ""
    return f"| {names} | {_cell((action.help or '') % {'default': action.default} if action.help else '')}{choices}{required} | {default} |"


# Options every Django command has (--verbosity, --settings...): left out of each table, said once.
COMMON = {"help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color", "skip_checks"}


_COMMON_USAGE = re.compile(
    r" \[(-h|--version|-v \{0,1,2,3\}|--settings SETTINGS|--pythonpath PYTHONPATH|--traceback|--no-color|"
    r"--force-color|--skip-checks)\]")


def _usage(parser: argparse.ArgumentParser) -> str:
    """The command's usage line without the options every command has (named once at the top of the page)."""
    usage = _COMMON_USAGE.sub("", " ".join(parser.format_usage().split()))
    return textwrap.fill(usage, width=100, subsequent_indent="    ", break_on_hyphens=False, break_long_words=False)


def commands_page() -> str:
    names = get_commands()
    own = sorted(name for name, app in names.items() if app.split(".")[0] in OWN_APPS)
    other = sorted(name for name in names if name not in own)
    lines = [
        "# Commands",
        "",
        "Generated from each command's own argument parser (`manage.py docs_reference`); run",
        "`manage.py COMMAND --help` for the same text. Every command also takes Django's common options",
        "(`--verbosity`, `--settings`, `--pythonpath`, `--traceback`, `--no-color`, `--force-color`, `--skip-checks`).",
        "",
        "## The platform's commands",
        "",
    ]
    lines += [f"- [`{name}`](#{name})" for name in own]
    for name in own:
        command = load_command_class(names[name], name)
        parser = command.create_parser("manage.py", name)
        lines += ["", f"### {name}", "", _cell(command.help) or "(no description)", "", "```text",
                  _usage(parser), "```", ""]
        rows = [_option_row(a) for a in parser._actions if a.dest not in COMMON]
        if rows:
            lines += ["| Argument | What it does | Default |", "|---|---|---|", *rows]
    lines += ["", "## Django's and the libraries' commands", "", "| Command | From | What it does |", "|---|---|---|"]
    for name in other:
        try:
            help_text = load_command_class(names[name], name).help
        except Exception as exc:  # a library command that cannot load here: named, not documented
            help_text = f"(not loadable here: {type(exc).__name__})"
        lines.append(f"| `{name}` | {names[name]} | {_cell(help_text)} |")
    return "\n".join(lines) + "\n"


def settings_page() -> str:
    lines = [
        "# Settings",
        "",
        "Environment variables the platform reads (`config/settings.py`), generated from the table in",
        "`config/settings_table.py` that `config/settings.py` reads them through. With none set, the platform runs",
        "on the embedded default: SQLite under `DATA_DIR`, Celery tasks in-process, DEBUG off with a secret key",
        "generated once under `DATA_DIR`.",
    ]
    group = None
    for setting in SETTINGS:
        if setting.group != group:
            group = setting.group
            lines += ["", f"## {group}", "", "| Variable | Kind | Default | What it does |", "|---|---|---|---|"]
        lines.append(f"| <a id=\"{setting.name.lower()}\"></a>`{setting.name}` | {KIND_TEXT[setting.kind]} | "
                     f"`{_cell(setting.default_text)}` | {_cell(setting.description)} |")
    return "\n".join(lines) + "\n"


def _openapi():
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator(patterns=None).get_schema(request=None, public=True)


def api_page() -> str:
    schema = _openapi()
    info = schema.get("info", {})
    lines = [
        "# REST API",
        "",
        f"{_cell(info.get('description', ''))} Generated from the OpenAPI schema the platform serves at",
        "`/api/schema/` (Swagger UI at `/api/docs/`, Redoc at `/api/redoc/`). Every route needs a token",
        "(`Authorization: Token ...`, from `manage.py api_token`) or a researcher's session.",
        "",
        "| Method | Route | Operation | What it does |",
        "|---|---|---|---|",
    ]
    for path, operations in sorted(schema["paths"].items()):
        for method in HTTP_METHODS:
            operation = operations.get(method)
            if operation is None:
                continue
            what = operation.get("summary") or operation.get("description") or ""
            lines.append(f"| {method.upper()} | `{path}` | `{operation.get('operationId', '')}` | {_cell(what)[:300]} |")
    in_schema = {_shape(path) for path in schema["paths"]}
    others = sorted(route for route in url_routes("api/") if _shape(route) not in in_schema)
    lines += ["", "## Routes outside the schema", "",
              "The schema and its two viewers, and any route the schema does not describe:", ""]
    lines += [f"- `{route}`" for route in others]
    return "\n".join(lines) + "\n"


def _shape(path: str) -> str:
    """A route with its parameters' names left out: ``/api/jobs/{pk}/`` and ``/api/jobs/{id}/`` are one route."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def url_routes(prefix: str) -> list[str]:
    """Every route of the URL resolver starting with ``prefix``, as OpenAPI writes paths (``/api/jobs/{pk}/``);
    the format-suffix variants (``.json``) left out."""
    from django.urls import get_resolver

    def walk(patterns, start=""):
        for pattern in patterns:
            route = start + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                yield from walk(pattern.url_patterns, route)
            else:
                yield route

    found = set()
    for route in walk(get_resolver().url_patterns):
        if not route.startswith(prefix) or "format" in route:
            continue
        route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route.replace("^", "").replace("$", ""))
        route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        found.add("/" + route)
    return sorted(found)


def campaign_settings_page() -> str:
    from annotation.models import Campaign

    lines = [
        "# Campaign settings",
        "",
        "The fields of a campaign (`annotation/models/campaign.py`), generated from the model: name, kind,",
        "default and help text. Most are set on the campaign's settings page or in the import's `campaign.json`.",
        "",
        "| Field | Kind | Default | Choices | What it does |",
        "|---|---|---|---|---|",
    ]
    for field in Campaign._meta.get_fields():
        if not getattr(field, "concrete", False) or field.auto_created or not field.editable:
            continue
        default = field.default if field.has_default() else ""
        default = "" if callable(default) else f"`{default}`" if default != "" else "(empty)"
        choices = ", ".join(f"`{value}`" for value, _ in field.choices) if field.choices else ""
        what = field.help_text or str(field.verbose_name).capitalize()
        lines.append(f"| `{field.name}` | {field.get_internal_type()} | {_cell(default)} | {choices} | {_cell(what)} |")
    return "\n".join(lines) + "\n"


PAGES = {
    "commands.md": commands_page,
    "settings.md": settings_page,
    "api.md": api_page,
    "campaign-settings.md": campaign_settings_page,
}


class Command(BaseCommand):
    help = "Write the documentation's generated reference pages (commands, settings, REST API, campaign settings)."

    def add_arguments(self, parser):
        parser.add_argument("out", help="Folder the pages are written to (created if missing).")

    def handle(self, *args, **options):
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)
        for name, build in PAGES.items():
            (out / name).write_text(build())
            self.stdout.write(f"wrote {out / name}")
